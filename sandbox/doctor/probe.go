package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// ProbeArg is the first argument that makes shadow run ProbeMain.
const ProbeArg = "__shadow-probe"

// probeTimeout bounds each probe child.
const probeTimeout = 15 * time.Second

// ProbeMain is the entry of a probe child: the shadow binary re-executed as
// "shadow __shadow-probe NAME [ARG]" inside the namespaces a probe needs.
// args are the arguments after "__shadow-probe". It returns the exit code: 0
// when the probe worked, 1 with the reason on stderr when it did not, 2 on a
// bad invocation.
func ProbeMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "probe: missing probe name")
		return 2
	}
	var err error
	switch {
	case args[0] == "userns" && len(args) == 1:
		err = probeUserNS()
	case args[0] == "overlay" && len(args) == 2:
		err = probeOverlay(args[1])
	case args[0] == "tmpfsxattr" && len(args) == 2:
		err = probeTmpfsXattr(args[1])
	case args[0] == "overlaytmpfs" && len(args) == 2:
		err = probeOverlayOnTmpfs(args[1])
	case args[0] == "jailns" && len(args) == 2:
		err = probeJailNS(args[1])
	case args[0] == "devpts" && len(args) == 2:
		err = probeDevpts(args[1])
	case args[0] == "seccomp" && len(args) == 1:
		err = probeSeccomp()
	case args[0] == "tun" && len(args) == 2:
		err = sandbox.OpenTap(args[1])
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown probe %q\n", strings.Join(args, " "))
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// probeTmpfsXattr mounts a tmpfs on dir and sets a user.* attribute on it,
// as a run's layer needs.
func probeTmpfsXattr(dir string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("tmpfs: make / private: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		return fmt.Errorf("tmpfs: mount on %s: %w", dir, err)
	}
	if err := unix.Setxattr(dir, "user.shadow.probe", []byte("1"), 0); err != nil {
		return fmt.Errorf("set a user.* attribute on tmpfs: %w", err)
	}
	return nil
}

// probeUserNS runs in new user and mount namespaces and checks it is root
// there with working capabilities: Ubuntu's AppArmor restriction lets the
// namespace be created but strips its capabilities.
func probeUserNS() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("userns: uid is %d in the new user namespace, want 0", os.Geteuid())
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("userns: no capabilities in the new user namespace (make / private: %w)", err)
	}
	return nil
}

// probeOverlay mounts an overlay with userxattr on dir's subdirectories and
// writes a file through it, as the jail does for the project.
func probeOverlay(dir string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("overlay: make / private: %w", err)
	}
	lower, upper, work, merged := filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("overlay: mkdir %s: %w", d, err)
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "base"), []byte("base\n"), 0o644); err != nil {
		return fmt.Errorf("overlay: write %s: %w", lower, err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay: mount on %s (%s): %w", merged, opts, err)
	}
	defer unix.Unmount(merged, unix.MNT_DETACH)
	if b, err := os.ReadFile(filepath.Join(merged, "base")); err != nil || string(b) != "base\n" {
		return fmt.Errorf("overlay: read lower file through %s: %q, %v", merged, b, err)
	}
	if err := os.WriteFile(filepath.Join(merged, "new"), []byte("staged\n"), 0o644); err != nil {
		return fmt.Errorf("overlay: write through %s: %w", merged, err)
	}
	if err := os.Remove(filepath.Join(merged, "base")); err != nil {
		return fmt.Errorf("overlay: delete through %s: %w", merged, err)
	}
	if b, err := os.ReadFile(filepath.Join(upper, "new")); err != nil || string(b) != "staged\n" {
		return fmt.Errorf("overlay: written file not staged in %s: %q, %v", upper, b, err)
	}
	if _, err := os.Stat(filepath.Join(lower, "base")); err != nil {
		return fmt.Errorf("overlay: delete reached the lower layer %s: %w", lower, err)
	}
	return nil
}

// probeOverlayOnTmpfs is probeOverlay with its layers on a tmpfs, as a run's
// layer is: a directory on an overlay (a container's root) cannot be an
// overlay's upper layer, a tmpfs can.
func probeOverlayOnTmpfs(dir string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("overlay: make / private: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		return fmt.Errorf("overlay: mount a tmpfs on %s: %w", dir, err)
	}
	return probeOverlay(dir)
}

// Prefixes of the jailns probe's errors, by which the check tells a denied
// hostname (a seccomp profile) from a denied /proc (a masked one).
const (
	hostnameFailed = "hostname: "
	procFailed     = "proc: "
)

// probeJailNS runs, as PID 1 of new PID and UTS namespaces, the two steps of
// the jail that a container's runtime most often denies: setting the
// hostname (a seccomp profile that allows it only with CAP_SYS_ADMIN) and
// mounting a new /proc on dir (which the kernel refuses when the container's
// /proc is partly masked or read-only).
func probeJailNS(dir string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	var errs []string
	if err := unix.Sethostname([]byte("shadow")); err != nil {
		errs = append(errs, hostnameFailed+"sethostname in a new UTS namespace: "+err.Error())
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		errs = append(errs, procFailed+"mount a new /proc in a PID namespace: "+err.Error())
	} else {
		unix.Unmount(dir, unix.MNT_DETACH)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// probeDevpts mounts a new devpts instance on dir and opens a pty pair from
// it, as the jail does for the command's terminal.
func probeDevpts(dir string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("devpts: make / private: %w", err)
	}
	if err := unix.Mount("devpts", dir, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("devpts: mount on %s: %w", dir, err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	return openPTY(filepath.Join(dir, "ptmx"), dir)
}

// openPTY opens the multiplexer at ptmx, unlocks a pty and opens its
// terminal side under dir.
func openPTY(ptmx, dir string) error {
	m, err := unix.Open(ptmx, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("pty: open %s: %w", ptmx, err)
	}
	defer unix.Close(m)
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return fmt.Errorf("pty: unlock %s: %w", ptmx, err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		return fmt.Errorf("pty: number of %s: %w", ptmx, err)
	}
	name := filepath.Join(dir, fmt.Sprint(n))
	s, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("pty: open %s: %w", name, err)
	}
	unix.Close(s)
	return nil
}

// probeSeccomp loads the jail's filter and checks it denies ptrace, which
// fails differently (ESRCH) without it.
func probeSeccomp() error {
	if err := confine.LoadSeccomp(); err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, 0x7ffffff0, 0, 0, 0, 0)
	if e != unix.EPERM {
		return fmt.Errorf("seccomp: ptrace under the filter returned %v, want EPERM", e)
	}
	return nil
}

// The namespaces a probe child runs in.
const (
	nsHost uintptr = 0                                                                           // the caller's
	nsUser         = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS                                 // new user and mount namespaces, as root mapped to the caller
	nsNet          = nsUser | syscall.CLONE_NEWNET                                               // and a new network namespace
	nsJail         = nsUser | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC // and PID, UTS and IPC namespaces
)

// runProbe re-executes exe as a probe child in the namespaces ns (nsHost,
// nsUser, nsNet): in a new user namespace it is root there, mapped
// to the caller's uid and gid.
func runProbe(ctx context.Context, exe string, ns uintptr, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append([]string{ProbeArg}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if ns != nsHost {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  ns,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		}
	}
	err := cmd.Run()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return errors.New(msg)
		}
	}
	return fmt.Errorf("probe %s: %w", strings.Join(args, " "), err)
}
