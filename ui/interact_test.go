package ui

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/creack/pty"

	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// startApp runs the app under teatest with an observer of its screen.
func startApp(t *testing.T, opts Options, w, h int) (*teatest.TestModel, *observer) {
	t.Helper()
	obs := &observer{}
	m := newModel(t, opts)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithFilter(obs.filter)))
	t.Cleanup(func() { _ = tm.Quit() })
	return tm, obs
}

// waitScreen waits until the screen satisfies cond, failing after d.
func waitScreen(t *testing.T, tm *teatest.TestModel, obs *observer, d time.Duration, what string, cond func(string) bool) string {
	t.Helper()
	// d is what it takes on a quiet machine; a busy one may take many times that, and a wait
	// that is met returns at once, so the bound is generous.
	deadline := time.Now().Add(max(d*10, time.Minute))
	for {
		tm.Send(probeMsg{})
		time.Sleep(20 * time.Millisecond)
		s := obs.current()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; screen:\n%s", d, what, s)
		}
	}
}

func contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// scriptedAgent behaves like a small terminal agent: it prompts, reads one
// line from its terminal, stages two edits of a.txt and a new file in the
// session's upper layer (as the jail would), says so and exits.
func scriptedAgent(ts *testSession) AgentFunc {
	return func(ctx context.Context, tty *os.File) (AgentResult, error) {
		if err := ts.s.BeginRun([]string{"agent"}); err != nil {
			return AgentResult{}, err
		}
		fmt.Fprint(tty, "\x1b[1mscripted agent\x1b[0m\r\nWhat should I do? ")
		line, err := bufio.NewReader(tty).ReadString('\n')
		if err != nil {
			return AgentResult{}, fmt.Errorf("read the request: %w", err)
		}
		fmt.Fprintf(tty, "\r\nRequest: %s\r\n", strings.TrimSpace(line))
		if err := os.WriteFile(filepath.Join(ts.s.UpperDir(), "a.txt"), []byte(stagedText), 0o644); err != nil {
			return AgentResult{}, err
		}
		fmt.Fprint(tty, "edited a.txt\r\n")
		if err := ts.s.EndRun(0); err != nil {
			return AgentResult{}, err
		}
		return AgentResult{ExitCode: 0}, nil
	}
}

func TestAppPreflightAgentReviewApply(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText})
	opts := testOptions(reviewsrc.New(ts.lock, ts.s), scriptedAgent(ts))
	tm, obs := startApp(t, opts, 100, 30)

	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed with warnings"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent's prompt in the pane", contains("What should I do?"))
	tm.Type("fix the total")
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent to read the typed line", contains("Request: fix the total"))
	waitScreen(t, tm, obs, 10*time.Second, "the end of the agent", contains("exited with status 0"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the review of a.txt", contains("@@ -9,4 +9,4 @@"))

	// Accept the first hunk, reject the second, apply.
	tm.Send(press("a"))
	waitScreen(t, tm, obs, 5*time.Second, "one accepted hunk", contains("1✓ 0✗ 1·"))
	tm.Send(press("r"))
	waitScreen(t, tm, obs, 5*time.Second, "one rejected hunk", contains("1✓ 1✗ 0·"))
	tm.Send(press("w"))
	waitScreen(t, tm, obs, 5*time.Second, "the apply confirmation", contains("y apply"))
	tm.Send(press("y"))
	waitScreen(t, tm, obs, 10*time.Second, "the apply's result", contains("apply done"))
	want := "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); got != want {
		t.Errorf("a.txt after apply = %q, want only the accepted hunk %q", got, want)
	}

	// Roll back from the same screen, then quit: the session stays open.
	tm.Send(press("b"))
	waitScreen(t, tm, obs, 5*time.Second, "the rollback confirmation", contains("y roll back"))
	tm.Send(press("y"))
	waitScreen(t, tm, obs, 10*time.Second, "the rollback's result", contains("rollback done"))
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); got != baseText {
		t.Errorf("a.txt after rollback = %q, want the original", got)
	}
	tm.Send(press("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	if cur, err := ts.store.Current(ts.project); err != nil || cur.ID() != ts.s.ID() {
		t.Errorf("after quitting, the open session is %v (%v), want %s", cur, err, ts.s.ID())
	}
	final := tm.FinalModel(t).(Model)
	if final.ExitCode() != ExitOK {
		t.Errorf("exit code %d", final.ExitCode())
	}
}

// echoAgent reports every line it reads, as hex, until it is stopped.
func echoAgent(ctx context.Context, tty *os.File) (AgentResult, error) {
	fmt.Fprint(tty, "echo ready\r\n")
	go func() {
		r := bufio.NewReader(tty)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(tty, "got %x\r\n", strings.TrimRight(line, "\r\n"))
		}
	}()
	<-ctx.Done()
	return AgentResult{ExitCode: 143, Reason: "stopped from the menu"}, nil
}

func TestAppPrefixMenu(t *testing.T) {
	opts := testOptions(nil, echoAgent).withReview(t)
	tm, obs := startApp(t, opts, 80, 24)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent", contains("echo ready"))

	// The prefix opens the menu; esc closes it and nothing reaches the agent.
	tm.Send(press("ctrl+]"))
	waitScreen(t, tm, obs, 5*time.Second, "the menu", contains("stop the agent"))
	tm.Send(press("esc"))
	waitScreen(t, tm, obs, 5*time.Second, "the menu to close", func(s string) bool { return !strings.Contains(s, "stop the agent") })

	// The prefix twice sends it to the agent; so do ctrl keys and arrows.
	tm.Send(press("ctrl+]"))
	tm.Send(press("ctrl+]"))
	tm.Send(tea.KeyPressMsg{Code: 'x', Mod: tea.ModAlt})
	tm.Send(press("up"))
	tm.Send(tea.KeyPressMsg{Code: tea.KeyRight, Mod: tea.ModCtrl})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyF5})
	tm.Send(press("enter"))
	// ctrl+] 1d, alt+x 1b78, up 1b5b41, ctrl+right 1b5b313b3543, F5 1b5b31357e
	waitScreen(t, tm, obs, 5*time.Second, "the keys echoed by the agent", contains("got 1d1b781b5b411b5b313b35431b5b31357e"))

	// A bracketed paste arrives as typed text (the agent did not ask for brackets).
	tm.Send(tea.PasteMsg{Content: "pasted"})
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 5*time.Second, "the paste echoed", contains("got "+fmt.Sprintf("%x", "pasted")))

	// Review so far is read-only and returns to the agent.
	tm.Send(press("ctrl+]"))
	tm.Send(press("r"))
	waitScreen(t, tm, obs, 5*time.Second, "the read-only review", contains("read-only: the agent is still running"))
	waitScreen(t, tm, obs, 5*time.Second, "the review's files", contains("a.txt"))
	tm.Send(press("j"))
	waitScreen(t, tm, obs, 5*time.Second, "the counts", contains("READ-ONLY  file 1/"))
	tm.Send(press("a"))
	tm.Send(press("w"))
	time.Sleep(300 * time.Millisecond)
	if s := waitScreen(t, tm, obs, 5*time.Second, "the refusal", contains("READ-ONLY  the agent is still running: decide once it ends")); !strings.Contains(s, "0✓ 0✗") || strings.Contains(s, "y apply") {
		t.Errorf("a read-only review decided or offered to apply:\n%s", s)
	}
	tm.Send(press("q"))
	waitScreen(t, tm, obs, 5*time.Second, "the pane again", contains("echo ready"))

	// Stop ends the agent.
	tm.Send(press("ctrl+]"))
	tm.Send(press("s"))
	waitScreen(t, tm, obs, 10*time.Second, "the stopped agent", contains("stopped from the menu"))
	tm.Send(press("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

func TestAppBlockedNeverStartsAgent(t *testing.T) {
	started := make(chan struct{}, 1)
	opts := testOptions(nil, func(ctx context.Context, tty *os.File) (AgentResult, error) {
		started <- struct{}{}
		return AgentResult{}, nil
	}).withReview(t)
	opts.Preflight = fakePreflight(sampleEvents(true), sampleVerdict(true))
	opts.Countdown = time.Second
	tm, obs := startApp(t, opts, 80, 24)
	waitScreen(t, tm, obs, 10*time.Second, "the block", contains("BLOCKED under dependency"))
	tm.Send(press("enter"))
	time.Sleep(1500 * time.Millisecond)
	select {
	case <-started:
		t.Fatal("the agent started although the preflight blocked")
	default:
	}
	tm.Send(press("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if code := tm.FinalModel(t).(Model).ExitCode(); code != ExitBlocked {
		t.Errorf("exit code %d, want %d", code, ExitBlocked)
	}
}

func TestAppCountdownStartsAgentUnlessAKeyIsPressed(t *testing.T) {
	started := make(chan struct{}, 1)
	agent := func(ctx context.Context, tty *os.File) (AgentResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return AgentResult{}, nil
	}
	opts := testOptions(nil, agent).withReview(t)
	opts.Countdown = time.Second
	tm, obs := startApp(t, opts, 80, 24)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the countdown did not start the agent")
	}

	opts.Countdown = 2 * time.Second
	tm2, obs2 := startApp(t, opts, 80, 24)
	waitScreen(t, tm2, obs2, 10*time.Second, "the countdown", contains("starting in"))
	tm2.Send(press("j"))
	time.Sleep(2500 * time.Millisecond)
	select {
	case <-started:
		t.Fatal("the agent started although a key stopped the countdown")
	default:
	}
}

func TestAppResizeReachesTheAgent(t *testing.T) {
	agent := func(ctx context.Context, tty *os.File) (AgentResult, error) {
		go func() {
			r := bufio.NewReader(tty)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				rows, cols, err := pty.Getsize(tty)
				fmt.Fprintf(tty, "size %dx%d %v\r\n", rows, cols, err)
			}
		}()
		<-ctx.Done()
		return AgentResult{}, nil
	}
	resized := make(chan struct{}, 4)
	opts := testOptions(nil, agent).withReview(t)
	opts.OnResize = func() { resized <- struct{}{} }
	tm, obs := startApp(t, opts, 80, 24)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the first size", contains("size 23x80 <nil>"))
	tm.Send(tea.WindowSizeMsg{Width: 100, Height: 30})
	select {
	case <-resized:
	case <-time.After(5 * time.Second):
		t.Fatal("OnResize was not called")
	}
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the new size", contains("size 29x100 <nil>"))
}

func TestAppNeverPassesAgentSequencesToTheTerminal(t *testing.T) {
	agent := func(ctx context.Context, tty *os.File) (AgentResult, error) {
		fmt.Fprint(tty, "\x1b]52;c;c2VjcmV0\x07\x1b]0;EVIL-TITLE\x07\x1b]8;;http://evil.example/\x1b\\EVIL-LINK\x1b]8;;\x1b\\\x1b[c\x1b[6n\x1b[?1049h\x1bP$qm\x1b\\\r\nVISIBLE\r\n")
		<-ctx.Done()
		return AgentResult{}, nil
	}
	opts := testOptions(nil, agent).withReview(t)
	tm, obs := startApp(t, opts, 80, 24)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent's text", contains("VISIBLE"))
	tm.Send(press("ctrl+]"))
	tm.Send(press("s"))
	waitScreen(t, tm, obs, 10*time.Second, "the end", contains("exited"))
	tm.Send(press("q"))
	out, err := io.ReadAll(tm.FinalOutput(t, teatest.WithFinalTimeout(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"]52;", "]0;EVIL-TITLE", "evil.example", "$qm"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("the terminal received the agent's %q", bad)
		}
	}
	// The agent's title reaches the terminal as the app's own, cleaned.
	if !bytes.Contains(out, []byte("\x1b]2;shadow: EVIL-TITLE\x07")) {
		t.Error("the agent's title did not become the terminal's")
	}
	if !bytes.Contains(out, []byte("VISIBLE")) {
		t.Error("the agent's text never reached the terminal: the check above proves nothing")
	}
}

func TestLightAndDarkThemes(t *testing.T) {
	m := newModel(t, testOptions(nil, idleAgent).withReview(t))
	for _, ev := range sampleEvents(false) {
		m = step(t, m, preflightEventMsg{ev: ev})
	}
	m = step(t, m, preflightDoneMsg{verdict: sampleVerdict(false)})
	dark := m.View().Content
	m = step(t, m, tea.BackgroundColorMsg{Color: color.White})
	light := m.View().Content
	if ansi.Strip(dark) != ansi.Strip(light) {
		t.Error("the theme changed the text")
	}
	// The pass mark is green on both, a darker green on a light background.
	if !strings.Contains(dark, "95;215;135") || !strings.Contains(light, "26;127;55") {
		t.Errorf("pass colours: dark %v, light %v", strings.Contains(dark, "95;215;135"), strings.Contains(light, "26;127;55"))
	}
}
