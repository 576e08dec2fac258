package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
)

// Enter typed into the agent's pane asks for a prompt checkpoint and is held, with what follows
// it, until the jail answers; ctrl+] c asks for a manual one; other keys ask for none. The
// checkpoints the jail writes reach the status bar.
func TestAppAsksForCheckpoints(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	events := make(chan CheckpointEvent, 4)
	opts := testOptions(nil, echoAgent).withReview(t)
	opts.Checkpoint = func(trigger string) {
		mu.Lock()
		asked = append(asked, trigger)
		mu.Unlock()
	}
	opts.Checkpointed = events
	opts.Stats = func() Stats { return Stats{Checkpoints: 1, LastCheckpoint: "c1"} }
	tm, obs := startApp(t, opts, 100, 30)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter")) // starts the agent: not a prompt
	waitScreen(t, tm, obs, 10*time.Second, "the agent", contains("echo ready"))
	waitScreen(t, tm, obs, 5*time.Second, "the session's checkpoint", contains("0 net c1"))

	// Two lines typed: the first Enter asks, and holds both until the answer; the second asks
	// for nothing more.
	tm.Type("a")
	tm.Send(press("enter"))
	tm.Type("b")
	tm.Send(press("enter"))
	time.Sleep(300 * time.Millisecond)
	if s := obs.current(); strings.Contains(s, "got 61") {
		t.Fatalf("the Enter reached the agent before the checkpoint was answered:\n%s", s)
	}
	events <- CheckpointEvent{Answered: sandbox.CheckpointPrompt}
	waitScreen(t, tm, obs, 5*time.Second, "both lines, in order", func(s string) bool {
		i := strings.Index(s, "got 61")
		return i >= 0 && strings.Contains(s[i:], "got 62")
	})

	// Shift+enter is a newline in the prompt, not a submission.
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModShift})
	tm.Send(press("ctrl+]"))
	waitScreen(t, tm, obs, 5*time.Second, "the menu", contains("take a checkpoint now"))
	tm.Send(press("c"))
	waitScreen(t, tm, obs, 5*time.Second, "the request's note", contains("checkpoint asked for"))
	// The jail wrote one: the status bar names it.
	events <- CheckpointEvent{Written: &sandbox.Checkpoint{ID: "c2", N: 2, Trigger: sandbox.CheckpointManual, Paths: []string{"a.txt", "b.txt"}}}
	events <- CheckpointEvent{Answered: sandbox.CheckpointManual}
	waitScreen(t, tm, obs, 5*time.Second, "the checkpoint written", contains("checkpoint c2: 2 paths"))

	// No answer: the key goes on after a while all the same.
	tm.Type("c")
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 2*checkpointWait, "the line without an answer", contains("got 63"))
	waitScreen(t, tm, obs, time.Second, "the note", contains("no checkpoint answer in time"))

	tm.Send(press("ctrl+]"))
	tm.Send(press("s"))
	waitScreen(t, tm, obs, 10*time.Second, "the stopped agent", contains("stopped from the menu"))
	tm.Send(press("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))

	mu.Lock()
	defer mu.Unlock()
	if want := []string{sandbox.PromptRequest("a"), sandbox.CheckpointManual, sandbox.PromptRequest("c")}; !slices.Equal(asked, want) {
		t.Errorf("checkpoints asked for: %q, want %q", asked, want)
	}
}

// boxAgent draws its input as agents do, in a frame after a prompt mark (`│ > …  │`), echoing
// what is typed itself; the up arrow makes the input "fix the cart total" (as a history recall
// or a completion would), and Enter answers with what it got.
func boxAgent(ctx context.Context, tty *os.File) (AgentResult, error) {
	if tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS); err == nil {
		tio.Lflag &^= unix.ICANON | unix.ECHO
		_ = unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio)
	}
	draw := func(line string) { fmt.Fprintf(tty, "\r\x1b[K│ > %s\x1b[40G│\x1b[%dG", line, 5+len(line)) }
	go func() {
		var line []byte
		fmt.Fprint(tty, "box ready\r\n")
		draw("")
		buf := make([]byte, 64)
		for {
			n, err := tty.Read(buf)
			if err != nil {
				return
			}
			for _, b := range buf[:n] {
				switch {
				case b == '\r' || b == '\n':
					fmt.Fprintf(tty, "\r\ngot %q\r\n", line)
					line = nil
				case b == 0x7f:
					line = line[:max(len(line)-1, 0)]
				case b == 'A' && len(line) > 0 && line[len(line)-1] == '[': // ESC [ A
					line = []byte("fix the cart total")
				case b >= ' ' && b < 0x7f:
					line = append(line, b)
				}
			}
			draw(strings.TrimSuffix(string(line), "["))
		}
	}()
	<-ctx.Done()
	return AgentResult{ExitCode: 143, Reason: "stopped from the menu"}, nil
}

// A prompt checkpoint asks with the prompt's first line: the text typed when only text (and
// backspace) was, otherwise what the pane shows of it after the agent's prompt mark, its frame
// trimmed; an Enter with nothing typed names none.
func TestPromptCheckpointNamesThePrompt(t *testing.T) {
	asked := make(chan string, 8)
	events := make(chan CheckpointEvent, 8)
	opts := testOptions(nil, boxAgent).withReview(t)
	opts.Checkpoint = func(trigger string) {
		asked <- trigger
		events <- CheckpointEvent{Answered: sandbox.CheckpointPrompt}
	}
	opts.Checkpointed = events
	tm, obs := startApp(t, opts, 100, 30)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent", contains("box ready"))
	submit := func(want, got string) {
		t.Helper()
		tm.Send(press("enter"))
		select {
		case req := <-asked:
			if req != sandbox.PromptRequest(want) {
				t.Errorf("the checkpoint asked for is %q, want %q", req, sandbox.PromptRequest(want))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no checkpoint asked for; the screen:\n%s", obs.current())
		}
		waitScreen(t, tm, obs, 5*time.Second, "the agent's answer", contains(got))
	}
	// Typed, then changed by a key the agent acts on: the pane's line.
	tm.Type("fix")
	tm.Send(press("up"))
	waitScreen(t, tm, obs, 5*time.Second, "the completed input", contains("│ > fix the cart total"))
	submit("fix the cart total", `got "fix the cart total"`)
	// Nothing typed: a recall or a dialog's choice names no prompt.
	tm.Send(press("up"))
	waitScreen(t, tm, obs, 5*time.Second, "the recalled input", contains("│ > fix the cart total"))
	submit("", `got "fix the cart total"`)
	// Text and backspace, typed ahead of the agent's echo: the text typed.
	tm.Type("totals")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	tm.Type(" again")
	submit("total again", `got "total again"`)

	tm.Send(press("ctrl+]"))
	tm.Send(press("s"))
	waitScreen(t, tm, obs, 10*time.Second, "the stopped agent", contains("stopped from the menu"))
	tm.Send(press("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// checkpointAgent is a jailed agent that takes two prompts, editing a file after each, and a
// third line to end.
var checkpointAgent = []string{"/bin/sh", "-c",
	// It waits a little after each write: a file changed within a clock tick of a checkpoint is
	// copied again at the next (layers.racyWindow), which would blur the steps this test checks.
	`echo ready; read a; echo "$a" > one.txt; sleep 0.1; echo did-one; read b; echo "$b" > two.txt; sleep 0.1; echo did-two; read c; echo bye`}

// promptFlow types the agent's three lines as the app does: each Enter asks for a prompt
// checkpoint and waits for the jail's answer before it leaves; and it asks for a manual one
// before the last. It returns the checkpoints the jail said it wrote.
func promptFlow(t *testing.T, j *Jail, app *appPty) []sandbox.Checkpoint {
	t.Helper()
	_, events := j.checkpointChans()
	var got []sandbox.Checkpoint
	// collect takes the events until an answer to trigger ("": until d has passed).
	collect := func(trigger string, d time.Duration) {
		t.Helper()
		deadline := time.After(d)
		for {
			select {
			case ev := <-events:
				if ev.Written != nil {
					got = append(got, *ev.Written)
				}
				if trigger != "" && ev.Answered == trigger {
					return
				}
			case <-deadline:
				if trigger != "" {
					t.Fatalf("no answer to a %s checkpoint", trigger)
				}
				return
			}
		}
	}
	enter := func(line string) {
		if _, err := app.master.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		j.requestCheckpoint(sandbox.CheckpointPrompt)
		collect(sandbox.CheckpointPrompt, 20*time.Second)
		if _, err := app.master.Write([]byte("\r")); err != nil {
			t.Fatal(err)
		}
	}
	app.waitFor(t, "ready")
	enter("first") // nothing written yet: no checkpoint
	app.waitFor(t, "did-one")
	enter("second") // c1: one.txt, what came before the second prompt
	app.waitFor(t, "did-two")
	j.requestCheckpoint(sandbox.CheckpointManual) // c2: two.txt
	collect(sandbox.CheckpointManual, 20*time.Second)
	j.requestCheckpoint(sandbox.CheckpointManual) // nothing changed since: none
	collect(sandbox.CheckpointManual, 20*time.Second)
	enter("") // nor here, nor at the run's end
	app.waitFor(t, "bye")
	collect("", time.Second)
	return got
}

// checkCheckpoints checks what the jail said it wrote against the prompt flow, and against the
// session's history.
func checkCheckpoints(t *testing.T, got []sandbox.Checkpoint, s *session.Session) {
	t.Helper()
	type cp struct {
		id, trigger string
		paths       []string
	}
	want := []cp{{"c1", sandbox.CheckpointPrompt, []string{"one.txt"}}, {"c2", sandbox.CheckpointManual, []string{"two.txt"}}}
	var saw []cp
	for _, c := range got {
		saw = append(saw, cp{c.ID, c.Trigger, c.Paths})
	}
	if !slices.EqualFunc(saw, want, func(a, b cp) bool { return a.id == b.id && a.trigger == b.trigger && slices.Equal(a.paths, b.paths) }) {
		t.Errorf("checkpoints written: %+v, want %+v", saw, want)
	}
	cps, err := s.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cps {
		ids = append(ids, c.ID+" "+c.Trigger)
	}
	if want := []string{"c1 prompt", "c2 manual"}; !slices.Equal(ids, want) {
		t.Errorf("the session's checkpoints: %q, want %q", ids, want)
	}
}

// checkpointSession is a session of a one-file project (a.txt), made for a jail test: it skips
// where there are no user namespaces.
func checkpointSession(t *testing.T) (*session.Store, *session.ProjectLock, *session.Session, string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		t.Skip("no user namespaces")
	}
	dir := t.TempDir()
	project := filepath.Join(dir, "p")
	writeFiles(t, project, map[string]string{"a.txt": "a\n"})
	st, err := session.Open(filepath.Join(dir, "s"))
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
	return st, lk, s, project
}

// Through the agent host, a checkpoint request travels as a frame ahead of the Enter's bytes, and
// each checkpoint written comes back as a frame.
func TestHostCheckpoints(t *testing.T) {
	st, lk, s, project := checkpointSession(t)
	j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
	defer j.Release()
	stopHost(t, s)
	app := newAppPty(t)
	end := runAgent(onPty(j.hostAgent(checkpointAgent, nil)), context.Background(), app.tty)
	got := promptFlow(t, j, app)
	if e := waitEnd(t, end); e.err != nil || e.res.ExitCode != 0 {
		t.Fatalf("the agent ended with %+v", e)
	}
	checkCheckpoints(t, got, j.Session)
}

// Without an agent host, the app's requests go to the jail's PID 1 through the policy's channel.
func TestJailCheckpoints(t *testing.T) {
	_, lk, s, project := checkpointSession(t)
	defer lk.Release()
	j := &Jail{Lock: lk, Session: s, Policy: sandbox.Policy{Project: project, NoCache: true}}
	app := newAppPty(t)
	end := runAgent(JailAgent(j, checkpointAgent), context.Background(), app.tty)
	got := promptFlow(t, j, app)
	if e := waitEnd(t, end); e.err != nil || e.res.ExitCode != 0 {
		t.Fatalf("the agent ended with %+v", e)
	}
	checkCheckpoints(t, got, s)
	if strings.Contains(strings.Join(got[0].Paths, " "), "two.txt") {
		t.Errorf("the prompt checkpoint holds what came after the prompt")
	}
}

// The status bar's count of checkpoints is the session's, read again when a checkpoint appears.
func TestSessionStatsCountsCheckpoints(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": "a\n"})
	stats := SessionStats(ts.s)
	if got := stats(); got.Checkpoints != 0 || got.LastCheckpoint != "" {
		t.Errorf("no checkpoint yet: %+v", got)
	}
	add := func(id string) {
		if err := os.MkdirAll(filepath.Join(ts.s.CheckpointDir(), id, "layer"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	add("c1")
	add("c2")
	if got := stats(); got.Checkpoints != 2 || got.LastCheckpoint != "c2" {
		t.Errorf("two checkpoints: %+v", got)
	}
	// c3 at once, in the same tick of a coarse clock: the directory's time does not move.
	fi, err := os.Stat(ts.s.CheckpointDir())
	if err != nil {
		t.Fatal(err)
	}
	add("c3")
	if err := os.Chtimes(ts.s.CheckpointDir(), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := stats(); got.Checkpoints != 3 || got.LastCheckpoint != "c3" {
		t.Errorf("three checkpoints: %+v", got)
	}
}
