package confine

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loader of a compiled filter, kept apart from seccomp.go: the jail's PID 1 receives the
// program the host compiled (Program) and loads it here, so it links no libseccomp.

// LoadProgram installs bpf, a seccomp program as Program returns it, on every thread of the
// process (TSYNC) after setting no_new_privs, as Filter.Load does with the filter it came from.
func LoadProgram(bpf []byte) error {
	insns, err := sockFilters(bpf)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	// TSYNC gives every thread the caller's no_new_privs along with the filter.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: set no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: load filter: %w", errno)
	}
	if r != 0 {
		// The thread that could not take the filter (it has one of its own).
		return fmt.Errorf("seccomp: load filter: thread %d cannot be synchronized", r)
	}
	return nil
}

// sockFilters decodes bpf, raw instructions in the machine's byte order, checking its length.
func sockFilters(bpf []byte) ([]unix.SockFilter, error) {
	const size = int(unsafe.Sizeof(unix.SockFilter{}))
	if len(bpf) == 0 || len(bpf)%size != 0 || len(bpf)/size > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: a program of %d bytes is not one", len(bpf))
	}
	insns := make([]unix.SockFilter, len(bpf)/size)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&insns[0])), len(bpf)), bpf)
	return insns, nil
}
