package confine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// lockedSecurebits make uid 0 an ordinary user for good: exec grants no
// capabilities to root (NOROOT), changing uids does not touch capabilities
// (NO_SETUID_FIXUP), ambient capabilities cannot be raised, and none of this
// can be undone (the _LOCKED bits).
const lockedSecurebits = secbitNoroot | secbitNorootLocked |
	secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
	secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked

// Securebits, from linux/securebits.h.
const (
	secbitNoroot                  = 1 << 0
	secbitNorootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

// DropPrivileges removes every capability from every thread of the process
// and from anything it executes: it empties the bounding and ambient sets,
// locks the securebits that stop root from regaining capabilities through
// exec, clears the inheritable, permitted and effective sets, and sets
// no_new_privs. The process needs CAP_SETPCAP (as root of its user namespace)
// unless the bounding set is already empty and the securebits already set.
func DropPrivileges() error {
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := allThreadsPrctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, syscall.EINVAL) {
				break // beyond what this kernel knows
			}
			if in, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); in == 0 {
				continue // already gone
			}
			return fmt.Errorf("drop privileges: drop capability %d from the bounding set: %w", c, err)
		}
	}
	cur, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("drop privileges: read securebits: %w", err)
	}
	if cur&lockedSecurebits != lockedSecurebits {
		if err := allThreadsPrctl(unix.PR_SET_SECUREBITS, uintptr(cur|lockedSecurebits), 0, 0, 0); err != nil {
			return fmt.Errorf("drop privileges: lock securebits: %w", err)
		}
	}
	if err := allThreadsPrctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("drop privileges: clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("drop privileges: clear capability sets: %w", e)
	}
	if err := allThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("drop privileges: set no_new_privs: %w", err)
	}
	return nil
}

// SetNonDumpable marks the process non-dumpable: no core dumps, and processes
// of the same uid cannot ptrace it or open its /proc files.
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("set non-dumpable: %w", err)
	}
	return nil
}

// allThreadsPrctl runs prctl on every OS thread: credentials are per thread,
// and a Go process has several.
func allThreadsPrctl(option int, a2, a3, a4, a5 uintptr) error {
	_, _, e := psx.Syscall6(unix.SYS_PRCTL, uintptr(option), a2, a3, a4, a5, 0)
	if e != 0 {
		return e
	}
	return nil
}

// lastCap is the highest capability number the kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return unix.CAP_LAST_CAP
}
