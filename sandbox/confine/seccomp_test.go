package confine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A probe tries one syscall with arguments that fail, or harmlessly succeed,
// for a reason other than the filter: a missing path, a bad descriptor, an
// invalid flag combination. It returns the errno, 0 on success.
type probe func() syscall.Errno

// keepAlive holds the strings passed to raw syscalls: a child makes few.
var keepAlive [][]byte

func cstr(s string) uintptr {
	b := append([]byte(s), 0)
	keepAlive = append(keepAlive, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

func sys(nr uintptr, a ...uintptr) syscall.Errno {
	var v [6]uintptr
	copy(v[:], a)
	r, _, e := syscall.RawSyscall6(nr, v[0], v[1], v[2], v[3], v[4], v[5])
	if e == 0 && int(r) >= 0 && (nr == unix.SYS_SOCKET || nr == unix.SYS_OPENAT || nr == unix.SYS_USERFAULTFD) {
		unix.Close(int(r))
	}
	return e
}

const (
	noSuchPath = "/nonexistent-shadow-confine-test"
	noSuchPID  = 0x3ffffff0
	badFD      = ^uintptr(0) // -1
)

var atFDCWD = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()

var probes = map[string]probe{
	"ptrace":            func() syscall.Errno { return sys(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, noSuchPID) },
	"process_vm_readv":  func() syscall.Errno { return sys(unix.SYS_PROCESS_VM_READV, noSuchPID, 0, 0, 0, 0, 1) },
	"process_vm_writev": func() syscall.Errno { return sys(unix.SYS_PROCESS_VM_WRITEV, noSuchPID, 0, 0, 0, 0, 1) },
	"pidfd_getfd":       func() syscall.Errno { return sys(unix.SYS_PIDFD_GETFD, badFD, 0, 0) },
	// A pid that does not exist answers ESRCH after seccomp has had its say.
	"prlimit64-set-other": func() syscall.Errno {
		lim := unix.Rlimit{Cur: 1, Max: 1}
		return sys(unix.SYS_PRLIMIT64, noSuchPID, unix.RLIMIT_CPU, uintptr(unsafe.Pointer(&lim)), 0)
	},
	"prlimit64-set-other-high": func() syscall.Errno {
		lim := unix.Rlimit{Cur: 1, Max: 1}
		return sys(unix.SYS_PRLIMIT64, 0xffffffff_00000000|noSuchPID, unix.RLIMIT_CPU, uintptr(unsafe.Pointer(&lim)), 0)
	},
	"prlimit64-get-other": func() syscall.Errno {
		var old unix.Rlimit
		return sys(unix.SYS_PRLIMIT64, noSuchPID, unix.RLIMIT_CPU, 0, uintptr(unsafe.Pointer(&old)))
	},
	"prlimit64-set-self": prlimitSelf(0),
	// Naming itself by pid: refused too (seccomp cannot know the caller).
	"prlimit64-set-own-pid": prlimitSelf(uintptr(os.Getpid())),
	"mount": func() syscall.Errno {
		return sys(unix.SYS_MOUNT, cstr("none"), cstr(noSuchPath), cstr("tmpfs"), 0, 0)
	},
	"umount2":       func() syscall.Errno { return sys(unix.SYS_UMOUNT2, cstr(noSuchPath), 0) },
	"pivot_root":    func() syscall.Errno { return sys(unix.SYS_PIVOT_ROOT, cstr(noSuchPath), cstr(noSuchPath)) },
	"chroot":        func() syscall.Errno { return sys(unix.SYS_CHROOT, cstr(noSuchPath)) },
	"fsopen":        func() syscall.Errno { return sys(unix.SYS_FSOPEN, cstr("shadow-no-such-fs"), 0) },
	"fsconfig":      func() syscall.Errno { return sys(unix.SYS_FSCONFIG, badFD, unix.FSCONFIG_CMD_CREATE, 0, 0, 0) },
	"fsmount":       func() syscall.Errno { return sys(unix.SYS_FSMOUNT, badFD, 0, 0) },
	"fspick":        func() syscall.Errno { return sys(unix.SYS_FSPICK, atFDCWD, cstr(noSuchPath), 0) },
	"move_mount":    func() syscall.Errno { return sys(unix.SYS_MOVE_MOUNT, badFD, cstr(""), badFD, cstr(""), 0) },
	"open_tree":     func() syscall.Errno { return sys(unix.SYS_OPEN_TREE, atFDCWD, cstr(noSuchPath), 0) },
	"mount_setattr": func() syscall.Errno { return sys(unix.SYS_MOUNT_SETATTR, badFD, cstr(""), 0, 0, 0) },
	// As root of its own user namespace the child may unshare a UTS
	// namespace: success without the filter.
	"unshare": func() syscall.Errno { return sys(unix.SYS_UNSHARE, unix.CLONE_NEWUTS) },
	"setns":   func() syscall.Errno { return sys(unix.SYS_SETNS, badFD, 0) },
	// CLONE_THREAD without CLONE_SIGHAND makes clone fail with EINVAL before
	// it creates anything.
	"clone-newns":     cloneProbe(unix.CLONE_NEWNS),
	"clone-newcgroup": cloneProbe(unix.CLONE_NEWCGROUP),
	"clone-newuts":    cloneProbe(unix.CLONE_NEWUTS),
	"clone-newipc":    cloneProbe(unix.CLONE_NEWIPC),
	"clone-newuser":   cloneProbe(unix.CLONE_NEWUSER),
	"clone-newpid":    cloneProbe(unix.CLONE_NEWPID),
	"clone-newnet":    cloneProbe(unix.CLONE_NEWNET),
	"clone-plain":     cloneProbe(0),
	"clone3":          func() syscall.Errno { return sys(unix.SYS_CLONE3, 0, 0) },
	"keyctl":          func() syscall.Errno { return sys(unix.SYS_KEYCTL, 0xffff, 0, 0, 0, 0) },
	"add_key": func() syscall.Errno {
		return sys(unix.SYS_ADD_KEY, cstr("user"), cstr("shadow-test"), 0, 0, 0)
	},
	"request_key": func() syscall.Errno {
		return sys(unix.SYS_REQUEST_KEY, cstr("user"), cstr("shadow-no-such-key"), 0, 0)
	},
	"bpf":             func() syscall.Errno { return sys(unix.SYS_BPF, 0xffff, 0, 0) },
	"perf_event_open": func() syscall.Errno { return sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, badFD, badFD, 0) },
	// UFFD_USER_MODE_ONLY is open to unprivileged users: success without
	// the filter.
	"userfaultfd":       func() syscall.Errno { return sys(unix.SYS_USERFAULTFD, 1|unix.O_CLOEXEC) },
	"io_uring_setup":    func() syscall.Errno { return sys(unix.SYS_IO_URING_SETUP, 1, 0) },
	"io_uring_enter":    func() syscall.Errno { return sys(unix.SYS_IO_URING_ENTER, badFD, 0, 0, 0, 0, 0) },
	"io_uring_register": func() syscall.Errno { return sys(unix.SYS_IO_URING_REGISTER, badFD, 0, 0, 0) },
	// Invalid flags fail after the permission check: safe even as root.
	"kexec_load":      func() syscall.Errno { return sys(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0x7ff00000) },
	"kexec_file_load": func() syscall.Errno { return sys(unix.SYS_KEXEC_FILE_LOAD, badFD, badFD, 0, 0, 0x7ff00000) },
	// An empty image is not a module (ENOEXEC).
	"init_module":  func() syscall.Errno { return sys(unix.SYS_INIT_MODULE, cstr(""), 0, cstr("")) },
	"finit_module": func() syscall.Errno { return sys(unix.SYS_FINIT_MODULE, badFD, cstr(""), 0) },
	"delete_module": func() syscall.Errno {
		return sys(unix.SYS_DELETE_MODULE, cstr("shadow_no_such_module"), unix.O_NONBLOCK)
	},
	"open_by_handle_at": func() syscall.Errno {
		return sys(unix.SYS_OPEN_BY_HANDLE_AT, badFD, 0, 0)
	},
	"name_to_handle_at": func() syscall.Errno {
		var h [128 + 8]byte
		var mnt int32
		binaryPutU32(h[:], 128)
		return sys(unix.SYS_NAME_TO_HANDLE_AT, atFDCWD, cstr(noSuchPath), uintptr(unsafe.Pointer(&h[0])), uintptr(unsafe.Pointer(&mnt)), 0)
	},
	"ioctl-tiocsti":   func() syscall.Errno { return sys(unix.SYS_IOCTL, badFD, unix.TIOCSTI, 0) },
	"ioctl-tioclinux": func() syscall.Errno { return sys(unix.SYS_IOCTL, badFD, unix.TIOCLINUX, 0) },
	// The kernel reads the request as 32 bits; the filter must too.
	"ioctl-tiocsti-high":   func() syscall.Errno { return sys(unix.SYS_IOCTL, badFD, 0xdeadbeef00000000|unix.TIOCSTI, 0) },
	"ioctl-tioclinux-high": func() syscall.Errno { return sys(unix.SYS_IOCTL, badFD, 0x1_00000000|unix.TIOCLINUX, 0) },
	"ioctl-tiocgwinsz": func() syscall.Errno {
		fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err.(syscall.Errno)
		}
		defer unix.Close(fd)
		var ws unix.Winsize
		return sys(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
	},
	"socket-netlink-audit": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	},
	"socket-netlink-audit-high": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, 0x1_00000000|unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0x1_00000000|unix.NETLINK_AUDIT)
	},
	"socket-netlink-route": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	},
	"socket-packet": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	},
	"socket-packet-high": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, 0xffffffff_00000000|unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	},
	"socket-vsock": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	},
	"socket-inet": func() syscall.Errno {
		return sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	},
}

func binaryPutU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// prlimitSelf sets the caller's RLIMIT_CORE to what it is, naming the
// caller by pid (0: the caller).
func prlimitSelf(pid uintptr) probe {
	return func() syscall.Errno {
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil {
			return err.(syscall.Errno)
		}
		return sys(unix.SYS_PRLIMIT64, pid, unix.RLIMIT_CORE, uintptr(unsafe.Pointer(&lim)), 0)
	}
}

func cloneProbe(flag uintptr) probe {
	return func() syscall.Errno {
		return sys(unix.SYS_CLONE, flag|unix.CLONE_THREAD, 0, 0, 0, 0)
	}
}

// markEPERM replaces EPERM in the marker filter: a result of markEPERM shows
// that the rule matched, even where the kernel itself would say EPERM. ENOSYS
// stays: the kernel never answers clone3 with it, and glibc's pthread_create
// only falls back to clone on ENOSYS, so a Go child could not start threads
// under any other errno.
const markEPERM = syscall.ENOTRECOVERABLE

func markerErrno(a action) syscall.Errno {
	if a == denyENOSYS {
		return syscall.ENOSYS
	}
	return markEPERM
}

// trySyscallChild: args are the filter ("none", "deny" or "marker") and the
// probe name. It prints the errno.
func trySyscallChild(args []string) int {
	if len(args) != 2 {
		return 2
	}
	runtime.LockOSThread()
	p, ok := probes[args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, "no probe", args[1])
		return 2
	}
	var err error
	switch args[0] {
	case "deny":
		err = LoadSeccomp()
	case "marker":
		err = loadFilter(denyList, markerErrno)
	case "program":
		err = loadProgram()
	case "pid1":
		err = loadPID1Program()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Printf("%d\n", int(p()))
	return 0
}

// loadProgram loads the filter's exported program on this thread the way
// the jail's exec stage does: no_new_privs, then prctl(PR_SET_SECCOMP).
func loadProgram() error {
	f, err := NewFilter()
	if err != nil {
		return err
	}
	defer f.Release()
	prog, err := f.Program()
	if err != nil {
		return err
	}
	if len(prog) == 0 || len(prog)%8 != 0 {
		return fmt.Errorf("program of %d bytes", len(prog))
	}
	insns := make([]unix.SockFilter, len(prog)/8)
	for i := range insns {
		b := prog[i*8:]
		insns[i] = unix.SockFilter{Code: uint16(b[0]) | uint16(b[1])<<8, Jt: b[2], Jf: b[3],
			K: uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24}
	}
	fprog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
}

// loadPID1Program loads the compiled program the way the jail's PID 1 does: handed over as
// bytes, loaded on every thread with LoadProgram.
func loadPID1Program() error {
	prog, err := Program()
	if err != nil {
		return err
	}
	return LoadProgram(prog)
}

// syscallCases names, for each probe, the result the filter must give.
// hostRoot marks probes whose permission check needs a capability of the
// initial user namespace: their control runs as host root when possible.
var syscallCases = []struct {
	probe    string
	rule     string // deny-list entry the probe exercises ("" for allowed calls)
	want     syscall.Errno
	hostRoot bool
}{
	{probe: "ptrace", rule: "ptrace", want: syscall.EPERM},
	{probe: "process_vm_readv", rule: "process_vm_readv", want: syscall.EPERM},
	{probe: "process_vm_writev", rule: "process_vm_writev", want: syscall.EPERM},
	{probe: "pidfd_getfd", rule: "pidfd_getfd", want: syscall.EPERM},
	{probe: "prlimit64-set-other", rule: "prlimit64", want: syscall.EPERM},
	{probe: "prlimit64-set-other-high", rule: "prlimit64", want: syscall.EPERM},
	{probe: "prlimit64-get-other", want: syscall.ESRCH},
	{probe: "prlimit64-set-self", want: 0},
	{probe: "prlimit64-set-own-pid", rule: "prlimit64", want: syscall.EPERM},
	{probe: "mount", rule: "mount", want: syscall.EPERM},
	{probe: "umount2", rule: "umount2", want: syscall.EPERM},
	{probe: "pivot_root", rule: "pivot_root", want: syscall.EPERM},
	{probe: "chroot", rule: "chroot", want: syscall.EPERM},
	{probe: "fsopen", rule: "fsopen", want: syscall.EPERM},
	{probe: "fsconfig", rule: "fsconfig", want: syscall.EPERM},
	{probe: "fsmount", rule: "fsmount", want: syscall.EPERM},
	{probe: "fspick", rule: "fspick", want: syscall.EPERM},
	{probe: "move_mount", rule: "move_mount", want: syscall.EPERM},
	{probe: "open_tree", rule: "open_tree", want: syscall.EPERM},
	{probe: "mount_setattr", rule: "mount_setattr", want: syscall.EPERM},
	{probe: "unshare", rule: "unshare", want: syscall.EPERM},
	{probe: "setns", rule: "setns", want: syscall.EPERM},
	{probe: "clone-newns", rule: "clone", want: syscall.EPERM},
	{probe: "clone-newcgroup", rule: "clone", want: syscall.EPERM},
	{probe: "clone-newuts", rule: "clone", want: syscall.EPERM},
	{probe: "clone-newipc", rule: "clone", want: syscall.EPERM},
	{probe: "clone-newuser", rule: "clone", want: syscall.EPERM},
	{probe: "clone-newpid", rule: "clone", want: syscall.EPERM},
	{probe: "clone-newnet", rule: "clone", want: syscall.EPERM},
	{probe: "clone-plain", want: syscall.EINVAL},
	{probe: "clone3", rule: "clone3", want: syscall.ENOSYS},
	{probe: "keyctl", rule: "keyctl", want: syscall.EPERM},
	{probe: "add_key", rule: "add_key", want: syscall.EPERM},
	{probe: "request_key", rule: "request_key", want: syscall.EPERM},
	{probe: "bpf", rule: "bpf", want: syscall.EPERM},
	{probe: "perf_event_open", rule: "perf_event_open", want: syscall.EPERM},
	{probe: "userfaultfd", rule: "userfaultfd", want: syscall.EPERM},
	{probe: "io_uring_setup", rule: "io_uring_setup", want: syscall.EPERM},
	{probe: "io_uring_enter", rule: "io_uring_enter", want: syscall.EPERM},
	{probe: "io_uring_register", rule: "io_uring_register", want: syscall.EPERM},
	{probe: "kexec_load", rule: "kexec_load", want: syscall.EPERM, hostRoot: true},
	{probe: "kexec_file_load", rule: "kexec_file_load", want: syscall.EPERM, hostRoot: true},
	{probe: "init_module", rule: "init_module", want: syscall.EPERM, hostRoot: true},
	{probe: "finit_module", rule: "finit_module", want: syscall.EPERM, hostRoot: true},
	{probe: "delete_module", rule: "delete_module", want: syscall.EPERM, hostRoot: true},
	{probe: "open_by_handle_at", rule: "open_by_handle_at", want: syscall.EPERM},
	{probe: "name_to_handle_at", rule: "name_to_handle_at", want: syscall.EPERM},
	{probe: "ioctl-tiocsti", rule: "ioctl", want: syscall.EPERM},
	{probe: "ioctl-tiocsti-high", rule: "ioctl", want: syscall.EPERM},
	{probe: "ioctl-tioclinux", rule: "ioctl", want: syscall.EPERM},
	{probe: "ioctl-tioclinux-high", rule: "ioctl", want: syscall.EPERM},
	{probe: "ioctl-tiocgwinsz", want: 0},
	{probe: "socket-netlink-audit", rule: "socket", want: syscall.EPERM},
	{probe: "socket-netlink-audit-high", rule: "socket", want: syscall.EPERM},
	{probe: "socket-netlink-route", want: 0},
	{probe: "socket-packet", rule: "socket", want: syscall.EPERM},
	{probe: "socket-packet-high", rule: "socket", want: syscall.EPERM},
	{probe: "socket-vsock", rule: "socket", want: syscall.EPERM},
	{probe: "socket-inet", want: 0},
}

func runProbe(t *testing.T, filter, name string, hostRoot bool) syscall.Errno {
	t.Helper()
	attr := nsAttr()
	if hostRoot && os.Geteuid() == 0 {
		attr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	out, err := runChild(t, "try-syscall", attr, filter, name)
	if err != nil {
		t.Fatalf("child %s %s: %v", filter, name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("child %s %s printed %q", filter, name, out)
	}
	return syscall.Errno(n)
}

// TestSeccompDenyList tries every entry of the deny list as bubblewrap's
// try-syscall does: under the filter the call fails with the entry's errno;
// under the same filter built with marker errnos it fails with the marker,
// which proves the entry itself matched; and without a filter the same call
// gives a different result, so the test fails if the entry is removed.
func TestSeccompDenyList(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range syscallCases {
		t.Run(c.probe, func(t *testing.T) {
			t.Parallel()
			got := runProbe(t, "deny", c.probe, c.hostRoot)
			if got != c.want {
				t.Errorf("under the filter: %v (%d), want %v", got, int(got), c.want)
			}
			if p := runProbe(t, "program", c.probe, c.hostRoot); p != c.want {
				t.Errorf("under the exported program (the exec stage's): %v (%d), want %v", p, int(p), c.want)
			}
			if p := runProbe(t, "pid1", c.probe, c.hostRoot); p != c.want {
				t.Errorf("under the program loaded with LoadProgram (PID 1's): %v (%d), want %v", p, int(p), c.want)
			}
			control := runProbe(t, "none", c.probe, c.hostRoot)
			if c.rule == "" {
				if control != c.want {
					t.Errorf("allowed call: without filter %v, with %v; want the same", control, got)
				}
				return
			}
			mark := markerErrno(denyEPERM)
			if c.want == syscall.ENOSYS {
				mark = markerErrno(denyENOSYS)
			}
			if m := runProbe(t, "marker", c.probe, c.hostRoot); m != mark {
				t.Errorf("under the marker filter: %v, want %v: the %s entry did not match", m, mark, c.rule)
			}
			switch {
			case control != c.want:
				t.Logf("without filter: %v (%d); with: %v", control, int(control), got)
			case c.hostRoot && os.Geteuid() != 0:
				t.Logf("without filter the kernel says %v too (needs host root to differ); the marker run proves the entry", control)
			default:
				t.Errorf("without the filter the call also gives %v: the probe cannot tell the filter from the kernel", control)
			}
		})
		if c.rule != "" {
			covered[c.rule] = true
		}
	}
	for _, r := range denyList {
		if !covered[r.Name] {
			t.Errorf("deny-list entry %s has no probe", r.Name)
		}
	}
}

// TestSeccompCloneFlagsEachTested checks that every clone rule of the list is
// one namespace flag that a probe above exercises.
func TestSeccompCloneFlagsEachTested(t *testing.T) {
	flags := map[uint64]string{
		unix.CLONE_NEWNS: "clone-newns", unix.CLONE_NEWCGROUP: "clone-newcgroup", unix.CLONE_NEWUTS: "clone-newuts",
		unix.CLONE_NEWIPC: "clone-newipc", unix.CLONE_NEWUSER: "clone-newuser", unix.CLONE_NEWPID: "clone-newpid",
		unix.CLONE_NEWNET: "clone-newnet",
	}
	seen := map[uint64]bool{}
	for _, r := range denyList {
		if r.Name != "clone" {
			continue
		}
		if len(r.Args) != 1 || r.Args[0].Mask != r.Args[0].Value || flags[r.Args[0].Value] == "" {
			t.Errorf("clone rule %+v is not one CLONE_NEW* flag with a probe", r.Args)
			continue
		}
		seen[r.Args[0].Value] = true
	}
	for f, p := range flags {
		if !seen[f] {
			t.Errorf("no clone rule for %s", p)
		}
	}
}

// tsyncChild starts threads before loading the filter, then checks that
// each thread is filtered and has no_new_privs.
func tsyncChild(args []string) int {
	const n = 4
	ready := make(chan struct{})
	results := make(chan syscall.Errno, n)
	start := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread() // a thread of its own, created before the filter
			ready <- struct{}{}
			<-start
			results <- probes["ptrace"]()
		}()
	}
	for range n {
		<-ready
	}
	runtime.LockOSThread()
	load := LoadSeccomp
	if len(args) == 1 && args[0] == "pid1" {
		load = loadPID1Program
	}
	if err := load(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	close(start)
	for range n {
		fmt.Printf("thread %d\n", int(<-results))
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Seccomp:") || strings.HasPrefix(line, "NoNewPrivs:") {
				fmt.Printf("task %s\n", strings.Join(strings.Fields(line), " "))
			}
		}
	}
	return 0
}

// TestSeccompAllThreads proves TSYNC: threads that existed before the filter
// was loaded are filtered too, and all have no_new_privs; with libseccomp's
// loader and with LoadProgram (PID 1's).
func TestSeccompAllThreads(t *testing.T) {
	for _, loader := range []string{"libseccomp", "pid1"} {
		t.Run(loader, func(t *testing.T) { testSeccompAllThreads(t, loader) })
	}
}

func testSeccompAllThreads(t *testing.T, loader string) {
	out, err := runChild(t, "tsync", nil, loader)
	if err != nil {
		t.Fatal(err)
	}
	var threads, tasks int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "thread":
			threads++
			if f[1] != strconv.Itoa(int(syscall.EPERM)) {
				t.Errorf("ptrace on a thread started before the filter: errno %s, want EPERM", f[1])
			}
		case len(f) == 3 && f[0] == "task":
			tasks++
			want := map[string]string{"Seccomp:": "2", "NoNewPrivs:": "1"}[f[1]]
			if f[2] != want {
				t.Errorf("a task has %s %s, want %s", f[1], f[2], want)
			}
		}
	}
	if threads != 4 || tasks < 2*5 {
		t.Errorf("got %d thread results and %d task lines:\n%s", threads, tasks, out)
	}
}

// x32Child loads the filter (unless args[0] is "none") and makes an x32 ABI
// syscall, which the filter must answer by killing the process.
func x32Child(args []string) int {
	if len(args) == 1 && args[0] != "none" {
		if err := LoadSeccomp(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
	const x32Bit = 0x40000000
	_, _, e := syscall.RawSyscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
	fmt.Printf("%d\n", int(e))
	return 0
}

// TestSeccompOtherABIKilled: a syscall through the x32 ABI could dodge rules
// written for x86-64 numbers; the filter kills the process instead.
func TestSeccompOtherABIKilled(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists on amd64 only")
	}
	out, err := runChild(t, "x32", nil, "none")
	if err != nil {
		t.Fatalf("control run: %v", err)
	}
	t.Logf("x32 getpid without the filter: %s", strings.TrimSpace(out))
	_, err = runChild(t, "x32", nil, "deny")
	ee, ok := err.(interface{ Sys() any })
	if !ok {
		t.Fatalf("x32 syscall under the filter: process ended with %v, want killed by SIGSYS", err)
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("x32 syscall under the filter: %v, want killed by SIGSYS", err)
	}
}
