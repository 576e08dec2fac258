//go:build !shadowinit

package confine

import "golang.org/x/sys/unix"

// denyList is the seccomp policy of the jail: every syscall not listed here is
// allowed. Each entry is tested by seccomp_test.go, which tries the syscall in
// a re-executed child with and without the filter.
//
// Integer arguments the kernel reads as a 32-bit int or unsigned int (socket
// domain and protocol, the ioctl request) are compared on their low 32 bits
// only: the upper half of the register is ignored by the kernel, so an exact
// 64-bit comparison could be bypassed by setting it (CVE-2019-10063).
var denyList = []syscallRule{
	// Reading or writing another process's memory and descriptors.
	{Name: "ptrace", Action: denyEPERM, Why: "inspect or control another process"},
	{Name: "process_vm_readv", Action: denyEPERM, Why: "read another process's memory"},
	{Name: "process_vm_writev", Action: denyEPERM, Why: "write another process's memory"},
	{Name: "pidfd_getfd", Action: denyEPERM, Why: "steal a file descriptor from another process"},

	// Changing another process's resource limits. The command runs as the
	// same host uid as the jail's PID 1, so the kernel lets it: a CPU limit
	// of one second on PID 1 kills it (and the relay with it) under an
	// output flood. pid 0 is the caller (glibc's setrlimit and getrlimit,
	// Go's syscall.Setrlimit); a process that names itself by its own pid
	// gets EPERM too, as seccomp cannot know the caller's pid. Reading
	// another process's limits (new_limit NULL) stays allowed: it changes
	// nothing, and `prlimit --pid N` as a report keeps working.
	//
	// The scheduling calls (setpriority, sched_setscheduler, sched_setattr,
	// sched_setaffinity, ioprio_set) need no rule: the kernel refuses them on
	// a process whose permitted capabilities are not a subset of the
	// caller's (cap_safe_nice), and PID 1 keeps its capabilities in the
	// jail's user namespace while the command has none. prlimit64 has no
	// such check. sandbox/escape_limits_test.go tries both.
	{Name: "prlimit64", Action: denyEPERM, Args: []argCond{ne(0, 0), ne(2, 0)}, Why: "set another process's resource limits"},

	// Changing the mount table, old and new API.
	{Name: "mount", Action: denyEPERM, Why: "remount read-only binds or mount over the jail"},
	{Name: "umount2", Action: denyEPERM, Why: "uncover what a mount hides"},
	{Name: "pivot_root", Action: denyEPERM, Why: "change the root of the mount namespace"},
	{Name: "chroot", Action: denyEPERM, Why: "change the root directory"},
	{Name: "fsopen", Action: denyEPERM, Why: "new mount API: create a filesystem context"},
	{Name: "fsconfig", Action: denyEPERM, Why: "new mount API: configure a filesystem context"},
	{Name: "fsmount", Action: denyEPERM, Why: "new mount API: create a mount"},
	{Name: "fspick", Action: denyEPERM, Why: "new mount API: reconfigure an existing mount"},
	{Name: "move_mount", Action: denyEPERM, Why: "new mount API: attach a mount"},
	{Name: "open_tree", Action: denyEPERM, Why: "new mount API: clone a mount tree"},
	{Name: "mount_setattr", Action: denyEPERM, Why: "new mount API: clear read-only or other mount flags"},

	// New namespaces reopen every kernel surface a user namespace root can reach.
	{Name: "unshare", Action: denyEPERM, Why: "create namespaces"},
	{Name: "setns", Action: denyEPERM, Why: "join another namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWNS)}, Why: "clone into a new mount namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWCGROUP)}, Why: "clone into a new cgroup namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWUTS)}, Why: "clone into a new UTS namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWIPC)}, Why: "clone into a new IPC namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWUSER)}, Why: "clone into a new user namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWPID)}, Why: "clone into a new PID namespace"},
	{Name: "clone", Action: denyEPERM, Args: []argCond{bitSet(0, unix.CLONE_NEWNET)}, Why: "clone into a new network namespace"},
	// clone3 passes its flags in memory, where seccomp cannot look; ENOSYS
	// makes libc fall back to clone, whose flags are checked above.
	{Name: "clone3", Action: denyENOSYS, Why: "flags in memory cannot be inspected"},

	// Kernel keyrings are not namespaced.
	{Name: "keyctl", Action: denyEPERM, Why: "kernel keyrings are shared with the host"},
	{Name: "add_key", Action: denyEPERM, Why: "kernel keyrings are shared with the host"},
	{Name: "request_key", Action: denyEPERM, Why: "kernel keyrings are shared with the host"},

	// Large kernel attack surfaces a coding agent does not need.
	{Name: "bpf", Action: denyEPERM, Why: "load BPF programs"},
	{Name: "perf_event_open", Action: denyEPERM, Why: "performance counters leak and are a large attack surface"},
	{Name: "userfaultfd", Action: denyEPERM, Why: "stalls kernel accesses, a common exploit primitive"},
	{Name: "io_uring_setup", Action: denyEPERM, Why: "io_uring bypasses syscall filtering"},
	{Name: "io_uring_enter", Action: denyEPERM, Why: "io_uring bypasses syscall filtering"},
	{Name: "io_uring_register", Action: denyEPERM, Why: "io_uring bypasses syscall filtering"},

	// Loading code into the kernel.
	{Name: "kexec_load", Action: denyEPERM, Why: "replace the running kernel"},
	{Name: "kexec_file_load", Action: denyEPERM, Why: "replace the running kernel"},
	{Name: "init_module", Action: denyEPERM, Why: "load a kernel module"},
	{Name: "finit_module", Action: denyEPERM, Why: "load a kernel module"},
	{Name: "delete_module", Action: denyEPERM, Why: "unload a kernel module"},

	// File handles bypass path-based checks (the "shocker" container escape).
	{Name: "open_by_handle_at", Action: denyEPERM, Why: "open files by handle, bypassing the mount tree"},
	{Name: "name_to_handle_at", Action: denyEPERM, Why: "obtain file handles for open_by_handle_at"},

	// Typing into or reprogramming the controlling terminal.
	{Name: "ioctl", Action: denyEPERM, Args: []argCond{eq32(1, unix.TIOCSTI)}, Why: "push input into the terminal (TIOCSTI)"},
	{Name: "ioctl", Action: denyEPERM, Args: []argCond{eq32(1, unix.TIOCLINUX)}, Why: "console selection paste (TIOCLINUX)"},

	// Sockets that reach beyond the jail's network namespace.
	{Name: "socket", Action: denyEPERM, Args: []argCond{eq32(0, unix.AF_NETLINK), eq32(2, unix.NETLINK_AUDIT)}, Why: "write to the host audit log"},
	{Name: "socket", Action: denyEPERM, Args: []argCond{eq32(0, unix.AF_PACKET)}, Why: "raw packet sockets"},
	{Name: "socket", Action: denyEPERM, Args: []argCond{eq32(0, unix.AF_VSOCK)}, Why: "talk to the hypervisor or other VMs"},
}
