package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// feed runs cmd and the commands it batches, feeding each message back to the model.
func feed(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		return m
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			m = feed(t, m, c)
		}
	case nil:
	default:
		next, _ := m.Update(msg)
		m = next.(Model)
	}
	return m
}

// The end box and the status bar count what the review lists, not the entries of the staging
// layer: a file the agent changed and changed back is staged on disk and listed nowhere.
func TestEndBoxCountsWhatTheReviewLists(t *testing.T) {
	opts := testOptions(nil, idleAgent).withReview(t)
	opts.Stats = func() Stats { return Stats{Files: 2} } // a.txt, and b.txt changed back
	m := newModel(t, opts)
	m.phase = phaseAgent
	m = step(t, m, statsMsg{Files: 2})
	next, cmd := m.Update(agentExitMsg{res: AgentResult{ExitCode: 0}})
	m = feed(t, next.(Model), cmd)
	files, err := opts.Review.Load()
	if err != nil || len(files) != 1 {
		t.Fatalf("the review lists %d files (%v), want a.txt", len(files), err)
	}
	s := screenText(m)
	if !strings.Contains(s, "1 file staged") || !strings.Contains(s, " 1 staged") {
		t.Errorf("the end box or the status bar does not count the 1 file the review lists:\n%s", s)
	}
	// A later poll of the staging layer does not take it back.
	m = feed(t, m, m.pollStats())
	if s := screenText(m); !strings.Contains(s, "1 file staged") {
		t.Errorf("a poll after the end changed the count:\n%s", s)
	}
}

// While the agent runs, the status bar's staged count follows its writes, which sit in the run's
// own layer until its end: the precapture counts them (session.RunStaged), as the status bar
// counts checkpoints, from the disk.
func TestSessionStatsCountsTheRunningRunsWrites(t *testing.T) {
	_, lk, s, project := checkpointSession(t)
	defer lk.Release()
	j := &Jail{Lock: lk, Session: s, Policy: sandbox.Policy{Project: project, NoCache: true}}
	stats := SessionStats(s)
	app := newAppPty(t)
	end := runAgent(JailAgent(j, []string{"/bin/sh", "-c", "echo 1 > x1.txt; mkdir d; echo 2 > d/x2.txt; echo written; read x"}), context.Background(), app.tty)
	app.waitFor(t, "written")
	for deadline := time.Now().Add(time.Minute); stats().Files != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("while the run goes, the status bar counts %d staged files, want its 2 writes", stats().Files)
		}
	}
	if _, err := app.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if e := waitEnd(t, end); e.err != nil || e.res.ExitCode != 0 {
		t.Fatalf("the agent ended with %+v", e)
	}
	if n := stats().Files; n != 2 {
		t.Errorf("after the run, the status bar counts %d staged files, want 2", n)
	}
}
