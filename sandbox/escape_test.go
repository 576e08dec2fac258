package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The escape suite of SPEC §10: each test makes one attempt from inside the
// jail and checks the specific way it fails, with a control showing the
// attempt would work without the jail where that is meaningful.

func TestEscapeReadHostCredentials(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	secrets := []string{".ssh/id_rsa", ".aws/credentials", ".config/gh/hosts.yml", ".git-credentials"}
	var paths, want []string
	for _, s := range secrets {
		writeFiles(t, j.home, map[string]string{s: "SECRET\n"})
		p := filepath.Join(j.home, s)
		if _, err := os.ReadFile(p); err != nil {
			t.Fatalf("control: host cannot read the planted %s: %v", p, err)
		}
		paths, want = append(paths, p), append(want, "ENOENT")
	}
	// The project may even live in that home: its siblings stay hidden.
	p := j.policy()
	p.Project = filepath.Join(j.home, "project")
	writeFiles(t, p.Project, map[string]string{"README": "x\n"})
	got := j.try(t, p, "read", "P="+strings.Join(paths, ":"))
	if !slices.Equal(got, want) {
		t.Fatalf("reading %v in the jail: %v, want %v", paths, got, want)
	}
}

func TestEscapeWriteOutsideProject(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	// Paths that exist in the jail but not as writable places.
	refused := []string{
		"/etc/shadow-escape",                       // system, read-only bind
		"/shadow-escape",                           // the jail's read-only root
		filepath.Join(j.probeDir, "shadow-escape"), // a --ro path
		filepath.Join(j.project, ".git", "escape"), // .git is read-only
		filepath.Join(j.base, "state", "x"),        // the staging layer: not in the jail
	}
	// The project's parent is under /tmp, which is the jail's own tmpfs: a
	// write there may succeed but must not reach the host.
	private := filepath.Join(j.base, "shadow-escape")
	got := j.try(t, j.policy(), "write", "P="+strings.Join(append(refused, private), ":"))
	if len(got) != len(refused)+1 {
		t.Fatalf("got %v", got)
	}
	for i, target := range refused {
		if r := got[i]; r != "EROFS" && r != "EACCES" && r != "ENOENT" {
			t.Errorf("write %s: %s, want EROFS, EACCES or ENOENT", target, r)
		}
	}
	// The project's .git must be refused by the read-only bind itself.
	if got[3] != "EROFS" {
		t.Errorf("write in .git: %s, want EROFS", got[3])
	}
	for _, target := range append(refused[2:], private) {
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s exists on the host", target)
		}
	}
}

func TestEscapeHostLoopback(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Fatalf("control: host cannot reach its own listener: %v", err)
	} else {
		c.Close()
	}
	j := newTestJail(t)
	if got := j.try(t, j.policy(), "connect", "ADDR="+addr); !slices.Equal(got, []string{"ECONNREFUSED"}) {
		t.Errorf("default network: connect %s: %v, want [ECONNREFUSED]", addr, got)
	}
	if findNetHelper(nil) == "" {
		t.Skip("neither pasta nor slirp4netns is installed (apt-get install passt slirp4netns; as root, make test installs them): --allow-network would share the host network")
	}
	if err := unix.Access("/dev/net/tun", unix.R_OK|unix.W_OK); err != nil {
		t.Skipf("/dev/net/tun is not usable by uid %d (%v): pasta and slirp4netns cannot work (sudo chmod 0666 /dev/net/tun)", os.Getuid(), err)
	}
	p := j.policy()
	p.AllowNetwork = true
	p.RuntimeDir = t.TempDir()
	got := j.try(t, p, "connect", "ADDR="+addr)
	if len(got) != 1 || (got[0] != "ECONNREFUSED" && got[0] != "ENETUNREACH") {
		t.Errorf("--allow-network: connect %s: %v, want ECONNREFUSED", addr, got)
	}
	// Control: pasta did give the jail an interface besides lo.
	if got := j.try(t, p, "netdev"); len(got) < 2 {
		t.Errorf("--allow-network: interfaces in the jail %v, want lo and the helper's", got)
	}
	if _, err := exec.LookPath("slirp4netns"); err == nil {
		p := p
		p.NetHelpers = []string{"slirp4netns"}
		got := j.try(t, p, "connect", "ADDR="+addr)
		if len(got) != 1 || (got[0] != "ECONNREFUSED" && got[0] != "ENETUNREACH") {
			t.Errorf("--allow-network with slirp4netns: connect %s: %v, want ECONNREFUSED", addr, got)
		}
		if got := j.try(t, p, "netdev"); len(got) < 2 {
			t.Errorf("slirp4netns: interfaces in the jail %v, want lo and tap0", got)
		}
	}
	// And they are gone once the run is over (it was started with its pid
	// file in the runtime dir): at once on a quiet machine; the bound is for
	// a busy one, where the helper's exit can take a while to be seen.
	left := func() (out []string) {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, c := range procs {
			if b, err := os.ReadFile(c); err == nil && strings.Contains(string(b), p.RuntimeDir) {
				out = append(out, fmt.Sprintf("%s: %q", c, b))
			}
		}
		return out
	}
	for deadline := time.Now().Add(30 * time.Second); len(left()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("a network helper outlived the run by 30 s: %v", left())
			break
		}
	}
}

// TestEscapeSyscalls tries the denied syscalls of the seccomp list that an
// escape would start with; each gets EPERM from the filter.
func TestEscapeSyscalls(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	for _, tc := range []struct {
		probe string
		want  []string
	}{
		{"ptrace", []string{"EPERM"}},
		{"mount", []string{"EPERM"}},
		{"fsopen", []string{"EPERM"}},
		{"open_tree", []string{"EPERM"}},
		{"remount", []string{"EPERM"}},
		{"unshare", []string{"EPERM"}},
		{"keyctl", []string{"EPERM"}},
		{"bpf", []string{"EPERM"}},
		// TIOCSTI, both with and without high bits; TIOCGWINSZ on the same
		// pty works (control).
		{"tiocsti", []string{"EPERM", "EPERM", "ok"}},
	} {
		t.Run(tc.probe, func(t *testing.T) {
			if got := j.try(t, j.policy(), tc.probe); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.probe, got, tc.want)
			}
		})
	}
}

// TestCommandLandlockDomain: the command runs under its own Landlock
// ruleset, narrower than PID 1's, which may execute the jail's shadow.
func TestCommandLandlockDomain(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	if got := j.try(t, j.policy(), "exec-init"); !slices.Equal(got, []string{"EACCES"}) {
		t.Errorf("exec %s from the command: %v, want [EACCES]", jailInitBinary, got)
	}
}

func TestEscapeProcSys(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	// As root of the jail, the file permissions allow the write (the UTS
	// namespace is the jail's own): the read-only bind over /proc/sys must
	// refuse it, with EROFS, before Landlock. Any other uid is refused by
	// the file's mode first.
	want := "EROFS"
	if os.Getuid() != 0 {
		want = "EACCES"
	}
	if got := j.try(t, j.policy(), "procsys"); !slices.Equal(got, []string{want}) {
		t.Errorf("open /proc/sys/kernel/hostname for writing: %v, want [%s]", got, want)
	}
}

// hostSleeper starts a host process with a recognisable command line.
func hostSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("/bin/sleep", "3600.4242")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

func TestEscapeSeeHostPIDs(t *testing.T) {
	t.Parallel()
	hostSleeper(t)
	j := newTestJail(t)
	got := j.try(t, j.policy(), "pids", "MARKER=3600.4242")
	if len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	n, _ := strconv.Atoi(got[0])
	if n == 0 || n > 5 || got[1] != "not-seen" {
		t.Errorf("jail sees %s processes, host sleeper %s; want a handful and not-seen", got[0], got[1])
	}
	// PID 1's threads take the first few ids of the jail's PID namespace.
	if pid, _ := strconv.Atoi(got[2]); pid > 100 {
		t.Errorf("probe has pid %d, want a small pid of the jail's own PID namespace", pid)
	}
}

func TestEscapeKillHostProcess(t *testing.T) {
	t.Parallel()
	c := hostSleeper(t)
	j := newTestJail(t)
	got := j.try(t, j.policy(), "kill", "PID="+strconv.Itoa(c.Process.Pid))
	if !slices.Equal(got, []string{"ESRCH"}) {
		t.Errorf("kill host pid %d: %v, want [ESRCH]", c.Process.Pid, got)
	}
	if err := c.Process.Signal(unix.Signal(0)); err != nil {
		t.Errorf("host process is gone: %v", err)
	}
}

func TestEscapeInheritedFD(t *testing.T) {
	j := newTestJail(t)
	// A host directory descriptor opened without O_CLOEXEC, at a number the
	// probe will not reuse.
	fd, err := unix.Open(j.home, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	const leaked = 77
	if err := unix.Dup2(fd, leaked); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	defer unix.Close(leaked)
	var st unix.Stat_t
	if err := unix.Fstat(leaked, &st); err != nil {
		t.Fatalf("control: fd %d not open on the host: %v", leaked, err)
	}
	got := j.try(t, j.policy(), "fd", "FD="+strconv.Itoa(leaked))
	if !slices.Equal(got, []string{"EBADF"}) {
		t.Errorf("fstat inherited fd %d in the jail: %v, want [EBADF]", leaked, got)
	}
}

func TestEscapeRegainCapabilities(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	got := j.try(t, j.policy(), "caps")
	want := []string{
		"CapInh=0000000000000000", "CapPrm=0000000000000000", "CapEff=0000000000000000",
		"CapBnd=0000000000000000", "CapAmb=0000000000000000", "NoNewPrivs=1", "Seccomp=2", "core=0/0",
		// NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each locked.
		"securebits=0xcf",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("in the jail: missing %s in %v", w, got)
		}
		if !slices.Contains(got, "exec-"+w) {
			t.Errorf("after exec: missing %s in %v", w, got)
		}
	}
	// uid 0 of the jail (shadow run by root) has nothing to gain; any
	// other uid cannot become 0, which is not mapped.
	if os.Getuid() != 0 && !slices.Contains(got, "setuid0=EINVAL") && !slices.Contains(got, "setuid0=EPERM") {
		t.Errorf("setuid(0) in the jail: %v, want EINVAL or EPERM", got)
	}
}

// backgroundJail is a jail whose policy has a --rw directory, and the file in it that the
// "background" probe's detached process appends to.
func backgroundJail(t *testing.T) (*testJail, setup, string) {
	j := newTestJail(t)
	shared := t.TempDir()
	p := j.policy()
	p.ReadWrite = []string{shared}
	return j, p, filepath.Join(shared, "ticks")
}

func TestEscapeBackgroundProcess(t *testing.T) {
	t.Parallel()
	j, p, ticks := backgroundJail(t)
	// The probe leaves a detached process appending to a file on a --rw
	// path every 100ms and exits once it has written (control: it ran).
	got := j.try(t, p, "background", "F="+ticks)
	if !slices.Equal(got, []string{"started"}) {
		t.Fatalf("got %v", got)
	}
	size := func() int64 {
		fi, err := os.Stat(ticks)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	time.Sleep(700 * time.Millisecond)
	if after := size(); after != before {
		t.Errorf("a process of the jail outlived it: %s grew from %d to %d bytes", ticks, before, after)
	}
}

// TestEscapeBackgroundProcessAtEnded checks what IO.Ended may rely on:
// when it is called, a detached process the command left is already gone.
func TestEscapeBackgroundProcessAtEnded(t *testing.T) {
	t.Parallel()
	j, p, ticks := backgroundJail(t)
	var calls int
	var seen Result
	var grew string
	p.Ended = func(res Result) {
		calls++
		seen = res
		before, err := os.Stat(ticks)
		if err != nil {
			grew = err.Error()
			return
		}
		time.Sleep(400 * time.Millisecond)
		if after, err := os.Stat(ticks); err != nil || after.Size() != before.Size() {
			grew = fmt.Sprintf("%s grew from %d bytes (%v)", ticks, before.Size(), err)
		}
	}
	p.Env = append(append([]string{}, p.Env...), "SHADOW_TRY=background", "F="+ticks)
	res, out, errOut := j.run(t, p, j.probe)
	if !strings.Contains(out, "RESULT started") {
		t.Fatalf("the probe did not start its process: %s%s", out, errOut)
	}
	if calls != 1 || seen != res {
		t.Errorf("Ended called %d times with %+v; Run returned %+v", calls, seen, res)
	}
	if grew != "" {
		t.Errorf("a process of the jail was still running when Ended was called: %s", grew)
	}
}
