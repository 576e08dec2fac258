//go:build !shadowinit

package confine

import (
	"fmt"
	"io"
	"os"
	"syscall"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// action is what a denied syscall returns.
type action int

const (
	denyEPERM  action = iota // fail with EPERM
	denyENOSYS               // fail with ENOSYS, so that libc falls back to an older syscall
)

// errno returns the error number an action makes the syscall fail with.
func (a action) errno() syscall.Errno {
	if a == denyENOSYS {
		return syscall.ENOSYS
	}
	return syscall.EPERM
}

// argCond is one condition on a syscall argument; all conditions of a rule
// must hold for the rule to match.
type argCond struct {
	Index    uint   // argument number, from 0
	Mask     uint64 // bits of the argument that are compared
	Value    uint64 // value of the masked argument
	NotEqual bool   // match when the whole argument differs from Value (Mask unused)
}

// syscallRule is one entry of the deny list.
type syscallRule struct {
	Name   string
	Action action
	Args   []argCond
	Why    string
}

// eq32 matches when the low 32 bits of argument i equal v.
func eq32(i uint, v uint64) argCond { return argCond{Index: i, Mask: 0xffffffff, Value: v} }

// bitSet matches when flag is set in argument i.
func bitSet(i uint, flag uint64) argCond { return argCond{Index: i, Mask: flag, Value: flag} }

// ne matches when argument i, all 64 bits of it, is not v. For a deny rule on
// an argument the kernel reads as 32 bits this errs on the side of denying:
// junk in the upper half makes the rule match, never miss.
func ne(i uint, v uint64) argCond { return argCond{Index: i, Value: v, NotEqual: true} }

// LoadSeccomp installs the jail's seccomp filter on every thread of the
// process (TSYNC) and sets no_new_privs. Syscalls of the deny list fail with
// EPERM (clone3 with ENOSYS); everything else is allowed. Syscalls of another
// architecture (i386, x32) kill the process.
func LoadSeccomp() error {
	return loadFilter(denyList, func(a action) syscall.Errno { return a.errno() })
}

// Program compiles the jail's filter (see LoadSeccomp) to raw BPF: the host hands it to PID 1,
// which loads it with LoadProgram and passes it on to the exec stage.
func Program() ([]byte, error) {
	f, err := NewFilter()
	if err != nil {
		return nil, err
	}
	defer f.Release()
	return f.Program()
}

// Filter is the jail's seccomp filter (see LoadSeccomp), built once: PID 1
// hands its program to the exec stage and loads the same filter itself.
type Filter struct{ f *seccomp.ScmpFilter }

// NewFilter builds the jail's filter. Release it when done.
func NewFilter() (*Filter, error) {
	f, err := buildFilter(denyList, func(a action) syscall.Errno { return a.errno() })
	if err != nil {
		return nil, err
	}
	return &Filter{f: f}, nil
}

// Release frees the filter.
func (f *Filter) Release() { f.f.Release() }

// Load installs the filter on every thread of the process, as LoadSeccomp.
func (f *Filter) Load() error {
	if err := f.f.Load(); err != nil {
		return fmt.Errorf("seccomp: load filter: %w", err)
	}
	return nil
}

// Program is the filter compiled to raw BPF instructions, for a process that
// loads it itself with prctl(PR_SET_SECCOMP) after setting no_new_privs (the
// jail's exec stage).
func (f *Filter) Program() ([]byte, error) {
	// libseccomp before 2.6 (Debian 12 has 2.5) exports only to a
	// descriptor.
	fd, err := unix.MemfdCreate("shadow-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export filter: %w", err)
	}
	mem := os.NewFile(uintptr(fd), "shadow-seccomp")
	defer mem.Close()
	if err := f.f.ExportBPF(mem); err != nil {
		return nil, fmt.Errorf("seccomp: export filter: %w", err)
	}
	if _, err := mem.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seccomp: export filter: %w", err)
	}
	b, err := io.ReadAll(mem)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export filter: %w", err)
	}
	return b, nil
}

// loadFilter builds the filter of rules, each failing with errnoOf(action),
// and loads it.
func loadFilter(rules []syscallRule, errnoOf func(action) syscall.Errno) error {
	f, err := buildFilter(rules, errnoOf)
	if err != nil {
		return err
	}
	defer f.Release()
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: load filter: %w", err)
	}
	return nil
}

func buildFilter(rules []syscallRule, errnoOf func(action) syscall.Errno) (*seccomp.ScmpFilter, error) {
	// NewFilter turns TSYNC on, so Load applies the filter to all threads.
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	if err := f.SetNoNewPrivsBit(true); err != nil {
		f.Release()
		return nil, fmt.Errorf("seccomp: set no_new_privs: %w", err)
	}
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		f.Release()
		return nil, fmt.Errorf("seccomp: set bad-arch action: %w", err)
	}
	for _, r := range rules {
		if err := addRule(f, r, errnoOf(r.Action)); err != nil {
			f.Release()
			return nil, err
		}
	}
	return f, nil
}

func addRule(f *seccomp.ScmpFilter, r syscallRule, errno syscall.Errno) error {
	call, err := seccomp.GetSyscallFromName(r.Name)
	if err != nil {
		return fmt.Errorf("seccomp: syscall %s: %w", r.Name, err)
	}
	act := seccomp.ActErrno.SetReturnCode(int16(errno))
	if len(r.Args) == 0 {
		if err := f.AddRule(call, act); err != nil {
			return fmt.Errorf("seccomp: add rule %s: %w", r.Name, err)
		}
		return nil
	}
	conds := make([]seccomp.ScmpCondition, 0, len(r.Args))
	for _, a := range r.Args {
		var c seccomp.ScmpCondition
		var err error
		if a.NotEqual {
			c, err = seccomp.MakeCondition(a.Index, seccomp.CompareNotEqual, a.Value)
		} else {
			c, err = seccomp.MakeCondition(a.Index, seccomp.CompareMaskedEqual, a.Mask, a.Value)
		}
		if err != nil {
			return fmt.Errorf("seccomp: condition on %s arg %d: %w", r.Name, a.Index, err)
		}
		conds = append(conds, c)
	}
	if err := f.AddRuleConditional(call, act, conds); err != nil {
		return fmt.Errorf("seccomp: add rule %s: %w", r.Name, err)
	}
	return nil
}
