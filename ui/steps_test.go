package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// The review's timeline counts each step as `shadow log` does (session.CountStep over the same
// patches), also for a step whose edit a later step undid: c1 edits a.txt and adds keep.txt, c2
// puts a.txt back.
func TestReviewStepsCountLikeLog(t *testing.T) {
	_, lk, s, project := checkpointSession(t)
	defer lk.Release()
	j := &Jail{Lock: lk, Session: s, Policy: sandbox.Policy{Project: project, NoCache: true}}
	for _, step := range []string{"echo A > a.txt; echo k > keep.txt", "echo a > a.txt"} {
		app := newAppPty(t)
		if e := waitEnd(t, runAgent(JailAgent(j, []string{"/bin/sh", "-c", step}), context.Background(), app.tty)); e.err != nil || e.res.ExitCode != 0 {
			t.Fatalf("run %q ended with %+v", step, e)
		}
	}
	log, err := s.Log()
	if err != nil || len(log) != 2 {
		t.Fatalf("log: %+v (%v), want two steps", log, err)
	}
	if log[0].Files != 2 || log[1].Files != 1 {
		t.Fatalf("log counts c1 %d files and c2 %d, want 2 and 1", log[0].Files, log[1].Files)
	}
	src := reviewsrc.New(lk, s)
	for _, st := range log {
		sc, err := src.StepChanges(st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Files != st.Files || sc.Added != st.Added || sc.Removed != st.Removed {
			t.Errorf("the review counts %s as %d files +%d -%d, shadow log as %d +%d -%d",
				st.ID, sc.Files, sc.Added, sc.Removed, st.Files, st.Added, st.Removed)
		}
	}

	// On the screen: c1 changed two files, of which one is still staged.
	m := diffview.New(diffview.WithSource(src))
	m.SetSize(100, 24)
	m, _ = m.Update(m.Init()())
	m, cmd := m.Update(press(">"))
	for i := 0; cmd != nil && i < 10; i++ {
		m, cmd = m.Update(cmd())
	}
	v := strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	if !strings.Contains(v, "step c1 (run end at ") || !strings.Contains(v, "changed 2 files +2 -1; 1 still staged") {
		t.Errorf("the timeline does not count c1 as shadow log does:\n%s", ansi.Strip(m.View()))
	}
}
