package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// maxLandlockABI is the highest Landlock ABI go-landlock knows how to use.
const maxLandlockABI = 11

// FileRules lists the paths the jailed command may use, by kind of access.
// Every other path is denied. Paths that do not exist are skipped.
type FileRules struct {
	ReadExec  []string // read and execute: the system, install trees
	ReadOnly  []string // read, no execute: /proc
	ReadWrite []string // read, write, create, delete, rename across directories
	Devices   []string // read, write and device ioctls: tty and pty devices
}

// Access rights, by kind of rule. Rights a directory can have that a file
// cannot are dropped for paths that are not directories.
const (
	accessReadExec = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	accessReadOnly = ll.AccessFSReadFile | ll.AccessFSReadDir
	accessWrite    = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate |
		ll.AccessFSResolveUnix
	accessReadWrite = accessReadExec | accessWrite
	accessDevice    = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSReadDir | ll.AccessFSIoctlDev
	accessFileOnly = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// LandlockABI returns the Landlock ABI version the running kernel offers, or
// 0 when Landlock is missing or disabled.
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// RestrictFiles confines every thread of the process, and all it executes
// later, to the paths of r, using the best Landlock ABI the kernel offers (up
// to the one go-landlock knows). Where the ABI has it, abstract unix sockets
// and signals are also scoped to the Landlock domain. It returns the ABI
// used: 0 means the kernel has no Landlock and nothing was restricted. Network
// access is not restricted. It sets no_new_privs.
func RestrictFiles(r FileRules) (abi int, err error) {
	abi = min(LandlockABI(), maxLandlockABI)
	if abi == 0 {
		return 0, nil
	}
	rules, err := pathRules(r, abi)
	if err != nil {
		return 0, err
	}
	if err := landlockConfig().Restrict(rules...); err != nil {
		return 0, fmt.Errorf("landlock: restrict: %w", err)
	}
	return abi, nil
}

// Ruleset builds the Landlock ruleset of r, as RestrictFiles would apply
// it, without enforcing it: a process that cannot run Go code (the jail's
// exec stage) enforces it with landlock_restrict_self(2). It returns the
// ruleset's descriptor (close-on-exec; -1 when the kernel has no Landlock)
// and the ABI used.
func Ruleset(r FileRules) (fd int, abi int, err error) {
	abi = min(LandlockABI(), maxLandlockABI)
	if abi == 0 {
		return -1, 0, nil
	}
	rules, err := pathRules(r, abi)
	if err != nil {
		return -1, 0, err
	}
	fd, _, err = landlockConfig().NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, fmt.Errorf("landlock: build ruleset: %w", err)
	}
	if fd < 0 {
		return -1, 0, nil
	}
	return fd, abi, nil
}

// landlockConfig handles every right and scope go-landlock knows, down to
// what the kernel offers.
func landlockConfig() landlock.Config {
	return landlock.Config{
		HandledAccessFS: landlock.V11.HandledAccessFS,
		Scoped:          landlock.V11.Scoped,
	}.BestEffort()
}

// pathRules are the rules of r for a kernel of the given ABI.
func pathRules(r FileRules, abi int) ([]landlock.Rule, error) {
	rw := uint64(accessReadWrite)
	if abi >= 2 {
		// Renames and links across directories need REFER. It is only asked
		// for where the kernel has it: go-landlock drops the whole ruleset in
		// best-effort mode when a rule asks for a right the ABI lacks.
		rw |= ll.AccessFSRefer
	}
	var rules []landlock.Rule
	for _, g := range []struct {
		paths  []string
		access uint64
	}{
		{r.ReadExec, accessReadExec},
		{r.ReadOnly, accessReadOnly},
		{r.ReadWrite, rw},
		{r.Devices, accessDevice},
	} {
		for _, p := range g.paths {
			st, err := os.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("landlock: stat %s: %w", p, err)
			}
			access := g.access
			if !st.IsDir() {
				access &= accessFileOnly
			}
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(access), p))
		}
	}
	return rules, nil
}
