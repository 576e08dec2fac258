package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the program run inside the jail: with
// SHADOW_TRY=name in its environment it makes one escape attempt and prints
// "RESULT <errno name or value>" lines, then exits.

// probes are the attempts the test binary makes in the jail, by name.
var probes = map[string]func() []string{
	"read": func() []string {
		var out []string
		for _, p := range strings.Split(os.Getenv("P"), ":") {
			_, err := os.ReadFile(p)
			out = append(out, errName(err))
		}
		return out
	},
	"write": func() []string {
		var out []string
		for _, p := range strings.Split(os.Getenv("P"), ":") {
			err := os.WriteFile(p, []byte("escaped\n"), 0o644)
			out = append(out, errName(err))
		}
		return out
	},
	"connect": func() []string {
		c, err := net.Dial("tcp", os.Getenv("ADDR"))
		if err == nil {
			c.Close()
		}
		return []string{errName(err)}
	},
	"ptrace": func() []string {
		child := exec.Command("/bin/sleep", "5")
		if err := child.Start(); err != nil {
			return []string{"start: " + err.Error()}
		}
		defer child.Process.Kill()
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(child.Process.Pid), 0, 0, 0, 0)
		return []string{errName(errnoOrNil(e))}
	},
	"mount": func() []string {
		return []string{errName(unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""))}
	},
	"fsopen": func() []string {
		fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return []string{errName(err)}
	},
	"open_tree": func() []string {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/usr", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return []string{errName(err)}
	},
	"remount": func() []string {
		return []string{errName(unix.Mount("", "/usr", "", unix.MS_REMOUNT|unix.MS_BIND, ""))}
	},
	"unshare": func() []string {
		return []string{errName(unix.Unshare(unix.CLONE_NEWUSER))}
	},
	"keyctl": func() []string {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 1, 0, 0)
		return []string{errName(err)}
	},
	"bpf": func() []string {
		// BPF_MAP_CREATE of a small array map.
		attr := [5]uint32{2 /* BPF_MAP_TYPE_ARRAY */, 4, 4, 1, 0}
		_, _, e := unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		return []string{errName(errnoOrNil(e))}
	},
	"tiocsti": func() []string {
		m, s, err := pty.Open()
		if err != nil {
			return []string{"pty: " + err.Error()}
		}
		defer m.Close()
		defer s.Close()
		c := byte('x')
		_, _, e1 := unix.Syscall(unix.SYS_IOCTL, s.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		// The same request with high bits set: the kernel ignores them.
		_, _, e2 := unix.Syscall(unix.SYS_IOCTL, s.Fd(), uintptr(unix.TIOCSTI)|1<<32, uintptr(unsafe.Pointer(&c)))
		_, err = unix.IoctlGetWinsize(int(s.Fd()), unix.TIOCGWINSZ)
		return []string{errName(errnoOrNil(e1)), errName(errnoOrNil(e2)), errName(err)}
	},
	"procsys": func() []string {
		f, err := os.OpenFile("/proc/sys/kernel/hostname", os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return []string{errName(err)}
	},
	"pids": func() []string {
		entries, _ := os.ReadDir("/proc")
		n, seen := 0, "not-seen"
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			n++
			b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if strings.Contains(string(b), os.Getenv("MARKER")) {
				seen = "seen"
			}
		}
		return []string{strconv.Itoa(n), seen, strconv.Itoa(os.Getpid())}
	},
	"kill": func() []string {
		pid, _ := strconv.Atoi(os.Getenv("PID"))
		return []string{errName(unix.Kill(pid, unix.SIGKILL))}
	},
	"fd": func() []string {
		fd, _ := strconv.Atoi(os.Getenv("FD"))
		var st unix.Stat_t
		return []string{errName(unix.Fstat(fd, &st))}
	},
	"caps": func() []string {
		out := capLines()
		// Exec again, as the same uid (0 when shadow runs as root): the
		// capabilities must not come back.
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = append(os.Environ(), "SHADOW_TRY=caps-exec")
		b, err := cmd.Output()
		if err != nil {
			return append(out, "exec: "+err.Error())
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			out = append(out, "exec-"+strings.TrimPrefix(l, "RESULT "))
		}
		return append(out, "setuid0="+errName(unix.Setuid(0)))
	},
	"caps-exec": capLines,
	"exec-init": func() []string {
		// PID 1 may execute the jail's copy of shadow; the command's own
		// Landlock domain must not let it (were the exec to succeed, the
		// test binary would run no test and exit).
		return []string{errName(exec.Command(jailInitBinary, "-test.run=^$").Run())}
	},
	"rename": func() []string {
		from, to, _ := strings.Cut(os.Getenv("P"), ":")
		return []string{errName(os.Rename(from, to))}
	},
	"netdev": func() []string {
		b, _ := os.ReadFile("/proc/net/dev")
		var names []string
		for _, l := range strings.Split(string(b), "\n")[2:] {
			if n, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
				names = append(names, n)
			}
		}
		return names
	},
	"id": func() []string {
		return []string{strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())}
	},
	"background": func() []string {
		// A detached process that appends a line every 100ms, forever.
		bg := exec.Command("/bin/sh", "-c", `while :; do echo tick >> "$F"; sleep 0.1; done`)
		bg.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := bg.Start(); err != nil {
			return []string{"start: " + err.Error()}
		}
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(os.Getenv("F")); err == nil {
				return []string{"started"}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return []string{"background process never wrote"}
	},
	"bind-ro": bindReadOnlyProbe,
	"serve": func() []string {
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
		if err != nil {
			return []string{"listen: " + err.Error()}
		}
		fmt.Println("RESULT listening")
		c, err := ln.Accept()
		if err != nil {
			return []string{"accept: " + err.Error()}
		}
		fmt.Fprintln(c, "hello from the jail")
		c.Close()
		return []string{"served"}
	},
}

// bindReadOnlyProbe runs in a user and mount namespace of its own (not in a
// jail): it binds DIR/src, which holds a tmpfs submount, read-only on
// DIR/dst the way WAY says (setattr: with mount_setattr, which must work;
// remount: as on kernels without it), then reports what writes and statfs
// see through the bind, and whether the source still takes writes.
func bindReadOnlyProbe() []string {
	dir := os.Getenv("DIR")
	src, dst := dir+"/src", dir+"/dst"
	for _, d := range []string{src + "/sub", dst} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return []string{err.Error()}
		}
	}
	if err := unix.Mount("tmpfs", src+"/sub", "tmpfs", 0, "size=64k"); err != nil {
		return []string{"mount tmpfs: " + errName(err)}
	}
	setattr := "unused"
	mountSetattr := unix.MountSetattr
	switch os.Getenv("WAY") {
	case "remount":
		mountSetattr = func(int, string, uint, *unix.MountAttr) error { return unix.ENOSYS }
	case "setattr":
		mountSetattr = func(dirfd int, path string, flags uint, attr *unix.MountAttr) error {
			err := unix.MountSetattr(dirfd, path, flags, attr)
			setattr = errName(err)
			return err
		}
	}
	if err := bindReadOnlyWith(mountSetattr, src, dst); err != nil {
		return []string{"bind: " + err.Error()}
	}
	out := []string{"setattr=" + setattr}
	for _, d := range []string{dst, dst + "/sub", src, src + "/sub"} {
		rel := strings.TrimPrefix(d, dir+"/")
		err := os.WriteFile(d+"/x", nil, 0o644)
		if d == src || d == src+"/sub" {
			out = append(out, rel+" write="+errName(err))
			continue
		}
		var st unix.Statfs_t
		if serr := unix.Statfs(d, &st); serr != nil {
			return append(out, "statfs "+rel+": "+errName(serr))
		}
		var flags []string
		for _, f := range []struct {
			bit  int64
			name string
		}{{unix.ST_RDONLY, "ro"}, {unix.ST_NOSUID, "nosuid"}, {unix.ST_NODEV, "nodev"}} {
			if st.Flags&f.bit != 0 {
				flags = append(flags, f.name)
			}
		}
		out = append(out, fmt.Sprintf("%s write=%s flags=%s", rel, errName(err), strings.Join(flags, ",")))
	}
	return out
}

// capLines reports the capability sets, no_new_privs and seccomp mode.
func capLines() []string {
	b, _ := os.ReadFile("/proc/self/status")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch k {
		case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
			out = append(out, k+"="+strings.TrimSpace(v))
		}
	}
	var core unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &core); err == nil {
		out = append(out, fmt.Sprintf("core=%d/%d", core.Cur, core.Max))
	}
	if bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0); err == nil {
		out = append(out, fmt.Sprintf("securebits=%#x", bits))
	}
	return out
}

// tryMain runs probe name and returns the exit status.
func tryMain(name string) int {
	p, ok := probes[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown probe %q\n", name)
		return 2
	}
	for _, l := range p() {
		fmt.Println("RESULT " + l)
	}
	return 0
}

func errnoOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// errName is "ok" or the errno's name (EPERM), else the error text.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}
