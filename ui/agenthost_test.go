package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// appPty is the app's side of an agent connection: a pty whose master
// output is collected as the pane would read it.
type appPty struct {
	master, tty *os.File
	mu          sync.Mutex
	out         bytes.Buffer
}

func newAppPty(t *testing.T) *appPty {
	t.Helper()
	master, tty := openSizedPty(t, 80, 24)
	p := &appPty{master: master, tty: tty}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { master.Close(); tty.Close() })
	return p
}

func (p *appPty) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		got := p.out.String()
		p.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("the agent's output never showed %q; it shows %q", want, p.out.String())
}

type agentEnd struct {
	res AgentResult
	err error
}

// onPty runs a hosted agent with the slave side of a pty as its terminal.
func onPty(agent HostedFunc) AgentFunc {
	return func(ctx context.Context, tty *os.File) (AgentResult, error) {
		term, err := agenthost.PTY(tty)
		if err != nil {
			return AgentResult{ExitCode: -1}, err
		}
		return agent(ctx, term)
	}
}

// appTerminal is the slave side of a pty as an agent host client's terminal.
func appTerminal(t *testing.T, tty *os.File) agenthost.Terminal {
	t.Helper()
	term, err := agenthost.PTY(tty)
	if err != nil {
		t.Fatal(err)
	}
	return term
}

func runAgent(agent AgentFunc, ctx context.Context, tty *os.File) chan agentEnd {
	ch := make(chan agentEnd, 1)
	go func() {
		res, err := agent(ctx, tty)
		ch <- agentEnd{res, err}
	}()
	return ch
}

func waitEnd(t *testing.T, ch chan agentEnd) agentEnd {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(90 * time.Second):
		t.Fatal("the agent connection never ended")
	}
	return agentEnd{}
}

// TestAgentHostDetachAndAttach runs a real agent host (this test binary,
// re-executed) with a jailed shell, detaches from it, checks that it keeps
// running and holds the session's run, attaches again, talks to the shell
// and sees its end.
func TestAgentHostDetachAndAttach(t *testing.T) {
	st, lk, s, project := checkpointSession(t)
	argv := []string{"/bin/sh", "-c", "echo ready; read x; echo got $x; echo staged > b.txt"}
	j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
	defer j.Release()
	// An agent host left running by a failed step is stopped with the test.
	stopHost(t, s)

	app := newAppPty(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := runAgent(onPty(j.hostAgent(argv, PolicyLayers(j.Policy))), ctx, app.tty)
	app.waitFor(t, "ready")

	cur, err := st.Current(project)
	if err != nil {
		t.Fatal(err)
	}
	host, err := agenthost.Find(cur)
	if err != nil {
		t.Fatalf("find the agent host: %v", err)
	}
	// The state file names the app attached: this process.
	if host.Attached == nil || host.Attached.PID != os.Getpid() {
		t.Fatalf("the agent's state does not name the attached app (pid %d): %+v", os.Getpid(), host.Attached)
	}
	// Another app turned away is told who holds the agent, and what to do.
	other, err := agenthost.Dial(host.Socket)
	if err != nil {
		t.Fatal(err)
	}
	other.BusyAdvice = BusyAdvice()
	_, err = other.Relay(context.Background(), appTerminal(t, newAppPty(t).tty))
	var busy *agenthost.BusyError
	if !errors.As(err, &busy) || busy.Holder == nil || busy.Holder.PID != os.Getpid() ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), "shadow tui --attach") {
		t.Fatalf("a second app is not told who holds the agent: %v", err)
	}
	if host.PID == os.Getpid() || cur.Meta.Active == nil || cur.Meta.Active.PID != host.PID || !cur.RunActive() {
		t.Fatalf("the run is not recorded as the agent host's: host pid %d, active %+v", host.PID, cur.Meta.Active)
	}
	if fi, err := os.Stat(host.Socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent socket %s: %v, mode %v", host.Socket, err, fi.Mode())
	}
	// The agent host holds its session, not the project: another session of the project could
	// run meanwhile, but no writer gets this one.
	wlk, err := st.LockProject(project, session.LockOptions{Command: "apply"})
	if err != nil {
		t.Fatalf("the project's lock while the agent runs in one of its sessions: %v", err)
	}
	if _, err := wlk.Get(cur.Meta.ID); !errors.Is(err, session.ErrBusy) {
		t.Fatalf("a writer could take the session while its agent runs: %v", err)
	}
	wlk.Release()

	if err := j.detach(); err != nil {
		t.Fatalf("detach: %v", err)
	}
	if e := waitEnd(t, first); !errors.Is(e.err, agenthost.ErrDetached) {
		t.Fatalf("after detach the agent function returned %+v, want agenthost.ErrDetached", e)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if h, err := agenthost.Find(cur); err == nil && h.Attached == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after detaching the agent's state still names an attached app: %+v (%v)", h.Attached, err)
		}
	}
	cancel() // the app leaving must not stop a detached agent
	time.Sleep(300 * time.Millisecond)
	if err := unix.Kill(host.PID, 0); err != nil {
		t.Fatalf("the agent host died when the app detached: %v", err)
	}
	if cur, err = st.Current(project); err != nil || !cur.RunActive() {
		t.Fatalf("the detached run is not active in the session: %v", err)
	}

	// Attach as `shadow tui --attach` does: a read-only session and the
	// host's state file.
	j2 := &Jail{Session: cur, Store: st, Attach: &host}
	defer j2.Release()
	app2 := newAppPty(t)
	second := runAgent(onPty(j2.hostAgent(nil, nil)), context.Background(), app2.tty)
	app2.waitFor(t, "ready") // replayed
	// One client at a time: a second one is turned away.
	third, err := agenthost.Dial(host.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := third.Relay(context.Background(), appTerminal(t, newAppPty(t).tty)); !IsBusy(err) {
		t.Fatalf("a second client was not turned away: %v", err)
	}
	if _, err := app2.master.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	app2.waitFor(t, "got hello")
	e := waitEnd(t, second)
	if e.err != nil || e.res.ExitCode != 0 {
		t.Fatalf("the attached agent ended with %+v", e)
	}
	if j2.Lock == nil || j2.Session.RunActive() {
		t.Fatal("after the agent ended the app does not hold the writer lock of a finished run")
	}
	runs, err := j2.Session.Runs()
	if err != nil || len(runs) != 1 || runs[0].PID != host.PID || runs[0].ExitCode != 0 {
		t.Fatalf("recorded runs: %+v (%v)", runs, err)
	}
	if _, err := os.Stat(filepath.Join(j2.Session.UpperDir(), "b.txt")); err != nil {
		t.Fatalf("the agent's write was not staged: %v", err)
	}
	if _, err := agenthost.Find(j2.Session); !errors.Is(err, agenthost.ErrNoAgent) {
		t.Fatalf("the ended agent can still be found: %v", err)
	}
}

// An app turned away because another holds the agent shows no run of its own (no end box, no
// review of an ended run): it quits with the error naming the holder.
func TestAppTurnedAwayShowsNoEndedRun(t *testing.T) {
	m := newModel(t, testOptions(nil, idleAgent).withReview(t))
	m.phase = phaseAgent
	busy := &agenthost.BusyError{Holder: &agenthost.AttachedApp{PID: 4242, TTY: "/dev/pts/7"}, Advice: BusyAdvice()}
	next, cmd := m.Update(agentExitMsg{res: AgentResult{ExitCode: -1}, err: busy})
	m = next.(Model)
	if cmd == nil {
		t.Fatal("the app turned away does not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok || m.result != nil || m.ExitCode() != ExitError {
		t.Errorf("the app turned away shows an ended run (result %+v, exit %d)", m.result, m.ExitCode())
	}
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "pid 4242, terminal /dev/pts/7") || !strings.Contains(err.Error(), "shadow tui --attach") {
		t.Errorf("the app's error does not name the holder and what to do: %v", err)
	}
	if s := screenText(m); strings.Contains(s, "could not run") || strings.Contains(s, "files staged") {
		t.Errorf("the screen shows a fake end:\n%s", s)
	}
}

// An agent host whose state directory is deep enough to put its socket past sockaddr_un's 108
// bytes still listens, and the app reaches it (it failed with "bind: invalid argument").
func TestAgentHostLongStatePath(t *testing.T) {
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		t.Skip("no user namespaces")
	}
	dir := t.TempDir()
	project := filepath.Join(dir, "p")
	writeFiles(t, project, map[string]string{"a.txt": "a\n"})
	deep := filepath.Join(dir, strings.Repeat("d", 60), strings.Repeat("e", 60), "state")
	st, err := session.Open(deep)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := st.LockProject(project, session.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	if sock := agenthost.SocketPath(s); len(sock) <= 108 {
		t.Fatalf("the socket path %s is short enough for sockaddr_un: the test tries nothing", sock)
	}
	j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
	defer j.Release()
	stopHost(t, s)
	app := newAppPty(t)
	end := runAgent(onPty(j.hostAgent([]string{"/bin/sh", "-c", "echo ready-deep"}, PolicyLayers(j.Policy))), context.Background(), app.tty)
	app.waitFor(t, "ready-deep")
	if e := waitEnd(t, end); e.err != nil || e.res.ExitCode != 0 {
		t.Fatalf("the agent ended with %+v", e)
	}
}

// The app's resize reaches an agent that runs in the agent host, for as long as it runs: the
// host relays SIGWINCH to the jail past the moment it started the agent.
func TestAgentHostResizeReachesTheAgent(t *testing.T) {
	st, lk, s, project := checkpointSession(t)
	argv := []string{"/bin/sh", "-c", "trap 'echo size=$(stty size)' WINCH; echo ready; while :; do sleep 0.1; done"}
	j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
	defer j.Release()
	stopHost(t, s)
	app := newAppPty(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runAgent(onPty(j.hostAgent(argv, PolicyLayers(j.Policy))), ctx, app.tty)
	app.waitFor(t, "ready")
	if err := unix.IoctlSetWinsize(int(app.tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 91, Row: 37}); err != nil {
		t.Fatal(err)
	}
	j.resizeHost()
	app.waitFor(t, "size=37 91")
}
