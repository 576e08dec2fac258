package sandbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

func TestBuildEnv(t *testing.T) {
	t.Parallel()
	host := []string{"PATH=/usr/bin", "HOME=/home/u", "AWS_SECRET_ACCESS_KEY=x", "GITHUB_TOKEN=y",
		"LC_ALL=C", "TERM=xterm", "ANTHROPIC_API_KEY=k", "SSH_AUTH_SOCK=/run/agent", "PATH=/dup", "EDITOR=vi"}
	got := BuildEnv(host, []string{"ANTHROPIC_API_KEY"})
	want := []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "TERM=xterm", "ANTHROPIC_API_KEY=k", "EDITOR=vi"}
	if !slices.Equal(got, want) {
		t.Errorf("BuildEnv = %v, want %v", got, want)
	}
}

// TestBuildEnvLocale: LANG and each locale category pass with a locale name
// and are dropped with anything else; an LC_ name that is no category is
// dropped unless named with --env.
func TestBuildEnvLocale(t *testing.T) {
	t.Parallel()
	categories := []string{"LANG", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC",
		"LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE"}
	names := slices.Clone(categories)
	for _, n := range localeEnv {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	good := []string{"C", "POSIX", "C.UTF-8", "en_US.UTF-8", "en_US.utf8", "de_DE@euro", "sr_RS.UTF-8@latin", "ja_JP.eucJP", "fil_PH", ""}
	bad := []string{"/tmp/evil", "../../../tmp/x", "en_US.UTF-8/../../x", "$(id)", "en_US.UTF-8\n", "C;ls", "en US", strings.Repeat("a", 300)}
	for _, name := range names {
		for _, v := range good {
			if got := BuildEnv([]string{name + "=" + v}, nil); !slices.Equal(got, []string{name + "=" + v}) {
				t.Errorf("%s=%q: BuildEnv = %q, want it kept", name, v, got)
			}
		}
		for _, v := range bad {
			if got := BuildEnv([]string{name + "=" + v}, nil); len(got) != 0 {
				t.Errorf("%s=%q: BuildEnv = %q, want it dropped", name, v, got)
			}
		}
	}
	for _, name := range []string{"LC_TERMINAL", "LC_TERMINAL_VERSION", "LC_FOO", "LC_", "LC_ALLX", "lc_all", "LC_SECRET_TOKEN"} {
		if got := BuildEnv([]string{name + "=C"}, nil); len(got) != 0 {
			t.Errorf("%s: BuildEnv = %q, want it dropped", name, got)
		}
		if got := BuildEnv([]string{name + "=C"}, []string{name}); !slices.Equal(got, []string{name + "=C"}) {
			t.Errorf("%s named in --env: BuildEnv = %q", name, got)
		}
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	res, _, _ := j.run(t, j.policy(), "/bin/sh", "-c", "kill -TERM $$")
	if res.Signal != syscall.SIGTERM || res.ExitCode != 128+15 {
		t.Errorf("killed by SIGTERM: got signal %v exit %d", res.Signal, res.ExitCode)
	}
	// Ended sees the end of a command that could not be executed as well.
	p := j.policy()
	var ended []Result
	p.Ended = func(r Result) { ended = append(ended, r) }
	res, _, errOut := j.run(t, p, "no-such-command-shadow")
	if res.ExitCode != 127 || !strings.Contains(errOut, "not found") {
		t.Errorf("missing command: exit %d, stderr %q; want 127 and not found", res.ExitCode, errOut)
	}
	if len(ended) != 1 || ended[0] != res {
		t.Errorf("missing command: Ended saw %+v; Run returned %+v", ended, res)
	}
}

func TestIDIsHostUID(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	got := j.try(t, j.policy(), "id")
	want := []string{strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())}
	if !slices.Equal(got, want) {
		t.Errorf("uid gid in the jail = %v, want the host's %v", got, want)
	}
}

func TestJailErrorForBadProject(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Project = filepath.Join(j.base, "missing")
	_, err := runSetup(context.Background(), p, []string{"/bin/true"})
	var je *JailError
	if !errors.As(err, &je) || je.Step != "project" {
		t.Fatalf("Run with a missing project: %v, want a *JailError of step project", err)
	}
	// A project that is the home directory would expose ~/.ssh.
	p = j.policy()
	p.Project = j.home
	if _, err = runSetup(context.Background(), p, []string{"/bin/true"}); !errors.As(err, &je) || je.Step != "project" {
		t.Fatalf("Run with the home as project: %v, want a *JailError of step project", err)
	}
	// A staging layer the host can create but the overlay refuses (one
	// that holds the project: overlapping layers) fails in PID 1, at the
	// mount step, and the command never runs.
	shared := t.TempDir()
	p = j.policy()
	p.Upper = j.base
	p.ReadWrite = []string{shared}
	_, err = runSetup(context.Background(), p, []string{"/bin/touch", filepath.Join(shared, "ran")})
	if !errors.As(err, &je) || je.Step != "project and extra mounts" || !strings.Contains(err.Error(), "overlay") {
		t.Fatalf("Run with the project inside the staging layer: %v, want a *JailError of the mount step", err)
	}
	if _, err := os.Stat(filepath.Join(shared, "ran")); err == nil {
		t.Errorf("the command ran although the jail could not be built")
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Timeout = 300 * time.Millisecond
	p.KillGrace = 300 * time.Millisecond
	// The commands would run for 5 minutes: ended well before that, they were stopped. The
	// bound is wide because a busy machine stretches the jail's start, not the timeout.
	const natural, bound = "300", 90 * time.Second
	start := time.Now()
	res, _, _ := j.run(t, p, "/bin/sleep", natural)
	if !res.TimedOut || time.Since(start) > bound || res.Signal != syscall.SIGTERM {
		t.Errorf("sleep %s with a 300ms timeout: %+v after %v", natural, res, time.Since(start))
	}
	// A command that ignores SIGTERM is killed after the grace period.
	start = time.Now()
	res, _, _ = j.run(t, p, "/bin/sh", "-c", `trap "" TERM; sleep `+natural)
	if !res.TimedOut || res.Signal != syscall.SIGKILL || time.Since(start) > bound {
		t.Errorf("TERM-ignoring command: %+v after %v", res, time.Since(start))
	}
	if !strings.Contains(res.StopReason, "timed out") {
		t.Errorf("StopReason = %q", res.StopReason)
	}
}

func TestPublishReachesServerInJail(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := j.policy()
	p.Publish = []int{port}
	// A runtime dir deeper than a unix socket address can hold.
	p.RuntimeDir = filepath.Join(t.TempDir(), strings.Repeat("r", 110))
	p.Env = append(append([]string{}, p.Env...), "SHADOW_TRY=serve", "PORT="+strconv.Itoa(port))
	done := make(chan string, 1)
	go func() {
		_, out, errOut := j.run(t, p, j.probe)
		done <- out + errOut
	}()
	var reply string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && reply == "" {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			// The server in the jail answers one connection only: a reply
			// must not be given up while it may still come (each hop of the
			// relay ends the connection when it cannot reach the next).
			c.SetDeadline(deadline)
			reply, _ = bufio.NewReader(c).ReadString('\n')
			c.Close()
		}
		if reply == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if reply != "hello from the jail\n" {
		t.Errorf("reply through --publish %d: %q", port, reply)
	}
	if out := <-done; !strings.Contains(out, "RESULT served") {
		t.Errorf("server in the jail: %s", out)
	}
}

// TestTerminal runs the command with a terminal as stdio: it gets a pty of
// the jail's own devpts, clipboard escapes are dropped on the way out, and
// TIOCSTI on its terminal is refused.
func TestTerminal(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := pty.Setsize(s, &pty.Winsize{Rows: 33, Cols: 101}); err != nil {
		t.Fatal(err)
	}
	p := j.policy()
	p.Stdin, p.Stdout, p.Stderr = s, s, s
	p.Env = append(append([]string{}, p.Env...), "SHADOW_TRY=tiocsti")
	outc := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(m)
		outc <- string(b)
	}()
	script := `tty; test -t 0 && echo stdin-is-tty; stty size; printf '\033]52;c;c2VjcmV0\007'; echo after-osc; ` + j.probe
	res, err := runSetup(context.Background(), p, []string{"/bin/sh", "-c", script})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out string
	select {
	case out = <-outc:
	case <-time.After(5 * time.Second):
		t.Fatal("pty output not closed")
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %q", res.ExitCode, out)
	}
	for _, want := range []string{"/dev/pts/0", "stdin-is-tty", "33 101", "after-osc", "RESULT EPERM"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q: %q", want, out)
		}
	}
	if strings.Contains(out, "]52;") {
		t.Errorf("OSC 52 reached the terminal: %q", out)
	}
}

// TestTerminalInterrupt types ^C on the user's terminal: it travels as a
// byte (the host terminal is raw) to the jail's pty, whose line discipline
// interrupts the command.
func TestTerminalInterrupt(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := j.policy()
	p.Stdin, p.Stdout, p.Stderr = s, s, s
	seen := make(chan struct{})
	go func() {
		r := bufio.NewReader(m)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.Contains(l, "waiting") {
				close(seen)
				io.Copy(io.Discard, r)
				return
			}
		}
	}()
	go func() {
		select {
		case <-seen:
			m.Write([]byte{3})
		case <-time.After(90 * time.Second):
		}
	}()
	start := time.Now()
	res, err := runSetup(context.Background(), p, []string{"/bin/sh", "-c", "echo waiting; exec sleep 300"})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != syscall.SIGINT || time.Since(start) > 120*time.Second {
		t.Errorf("after ^C: %+v after %v, want killed by SIGINT", res, time.Since(start))
	}
}

// TestStdioToHostFiles redirects the jail's output to a host file and
// /dev/null: scripts that write to /dev/stdout or /dev/stderr must work
// although those host files are outside the jail.
func TestStdioToHostFiles(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	p := j.policy()
	p.Stdin, p.Stdout, p.Stderr = null, out, null
	res, err := runSetup(context.Background(), p, []string{"/bin/sh", "-c",
		"echo one > /dev/stdout && echo two && echo err > /dev/stderr && cat > /dev/null"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	if res.ExitCode != 0 || string(b) != "one\ntwo\n" {
		t.Errorf("exit %d, output file %q; want 0 and \"one\\ntwo\\n\"", res.ExitCode, b)
	}
}

// TestRootRefusesWithoutLandlock: as root, a kernel without Landlock means
// no jail at all (exit 125 from the CLI), never a command run without it.
func TestRootRefusesWithoutLandlock(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the refusal applies to root")
	}
	j := newTestJail(t)
	p := j.policy()
	w := IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
	_, err := runOn(context.Background(), p.Policy, []string{"/bin/sh", "-c", "touch ran"}, w, func() int { return 0 })
	var je *JailError
	if !errors.As(err, &je) || je.Step != "landlock" {
		t.Fatalf("Run without Landlock as root: %v, want a landlock JailError", err)
	}
	if _, err := os.Stat(filepath.Join(j.upper, "ran")); !os.IsNotExist(err) {
		t.Errorf("the command ran (%v)", err)
	}
}

// TestNULInArgumentIsRefused: an argument holding a NUL byte cannot reach
// execve whole; the jail says so rather than running a shortened command.
func TestNULInArgumentIsRefused(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Stdin, p.Stdout, p.Stderr = strings.NewReader(""), io.Discard, io.Discard
	_, err := runSetup(context.Background(), p, []string{"/bin/sh", "-c", "touch ran\x00; true"})
	var je *JailError
	if !errors.As(err, &je) || je.Step != "command spec" {
		t.Fatalf("Run with a NUL in an argument: %v, want a command spec JailError", err)
	}
	if _, err := os.Stat(filepath.Join(j.upper, "ran")); !os.IsNotExist(err) {
		t.Errorf("the command ran (%v)", err)
	}
}

// TestRelayedSignals: each of RelayedSignals that the caller sends on
// IO.Signals does in the jail what it does to a command outside one: SIGINT
// and SIGQUIT reach the command, SIGWINCH after a resize of the user's
// terminal reaches it too, and SIGTERM and SIGHUP stop it, the run's last
// checkpoint holding what it wrote. Run itself catches nothing.
func TestRelayedSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range RelayedSignals() {
		name := unix.SignalName(sig.(syscall.Signal))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := newTestJail(t)
			m, s, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			p := j.policy()
			p.Checkpoints = filepath.Join(j.base, "state", "checkpoints")
			p.Stdin, p.Stdout, p.Stderr = s, s, s
			sigs := make(chan os.Signal, 1)
			p.Signals = sigs
			var mu sync.Mutex
			var cps []Checkpoint
			p.Checkpointed = func(c Checkpoint) {
				mu.Lock()
				cps = append(cps, c)
				mu.Unlock()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			got := make(chan string, 1)
			go func() {
				r := bufio.NewReader(m)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch {
					case strings.Contains(l, "ready"):
						if sig == syscall.SIGWINCH {
							_ = pty.Setsize(s, &pty.Winsize{Rows: 33, Cols: 111})
						}
						sigs <- sig
					case strings.Contains(l, "got-"):
						got <- strings.TrimSpace(l[strings.Index(l, "got-"):])
						// The command goes on after INT, QUIT and WINCH: stop it.
						if sig != syscall.SIGTERM && sig != syscall.SIGHUP {
							cancel()
						}
						io.Copy(io.Discard, r)
						return
					}
				}
			}()
			script := `echo staged > f.txt
for s in INT QUIT WINCH; do trap "echo got-$s" $s; done
trap 'echo got-TERM; exit 3' TERM; trap 'echo got-HUP; exit 4' HUP
echo ready; while :; do sleep 0.05; done`
			res, err := runSetup(ctx, p, []string{"/bin/sh", "-c", script})
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			select {
			case g := <-got:
				if g != "got-"+strings.TrimPrefix(name, "SIG") {
					t.Errorf("the command heard %q, want got-%s", g, strings.TrimPrefix(name, "SIG"))
				}
			default:
				t.Fatalf("the command heard nothing of %s: %+v", name, res)
			}
			mu.Lock()
			defer mu.Unlock()
			if n := len(cps); n == 0 || cps[n-1].Trigger != CheckpointRunEnd || !slices.Contains(cps[n-1].Paths, "f.txt") {
				t.Errorf("%s: checkpoints %+v, want the run's end with f.txt", name, cps)
			}
			switch sig {
			case syscall.SIGTERM, syscall.SIGHUP:
				if want := map[os.Signal]int{syscall.SIGTERM: 3, syscall.SIGHUP: 4}[sig]; res.ExitCode != want || res.StopReason != "" {
					t.Errorf("%s stops the command: %+v, want exit %d and no stop of Run's own", name, res, want)
				}
			}
		})
	}
}
