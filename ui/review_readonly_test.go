package ui

import (
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// A review source without the project's writer lock (a second `shadow tui
// --attach`, whose agent another app holds) is read-only: it says why, saves
// nothing, and the review over it labels itself and refuses the keys with
// that reason instead of showing a ✓ it did not save.
func TestReviewWithoutLockIsReadOnly(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText})
	ts.stage(t, map[string]string{"a.txt": stagedText})
	src := reviewsrc.New(nil, ts.s)
	if got := src.ReadOnly(); got != reviewsrc.NoLock {
		t.Fatalf("ReadOnly() = %q, want %q", got, reviewsrc.NoLock)
	}
	f := loadFile(t, src, "a.txt")
	if err := src.Decide("a.txt", f.Diff.Hunks[0].ID, diff.Decision{Verdict: diff.Accepted}); err == nil {
		t.Errorf("a source without the writer lock saved a decision")
	}
	if _, err := src.Apply(diffview.Plan{Write: []diffview.PlanFile{{Path: "a.txt", Accepted: 1}}}); err == nil {
		t.Errorf("a source without the writer lock applied")
	}

	tm := startReview(t, src, "true")
	sc := newFlowScreen(t, 80, 24)
	sc.waitFor(t, tm, "READ-ONLY")
	for _, k := range []string{"a", "w"} {
		send(tm, "j") // clears the status line
		sc.waitFor(t, tm, "READ-ONLY  file 1/1")
		send(tm, k)
		sc.waitFor(t, tm, "READ-ONLY  "+reviewsrc.NoLock)
		if s := sc.emu.String(); strings.Contains(s, "accepted") || strings.Contains(s, "not saved") || strings.Contains(s, "Apply to the project?") {
			t.Errorf("the read-only review took %s:\n%s", k, s)
		}
	}
	decs, err := ts.s.LoadDecisions()
	if err != nil {
		t.Fatal(err)
	}
	if len(decs.Files) != 0 {
		t.Errorf("decisions saved through a read-only review: %v", decs.Files)
	}

	// With the lock back (the app took it over from the agent host), the
	// source takes changes again.
	src.Rebind(ts.lock, ts.s)
	if got := src.ReadOnly(); got != "" {
		t.Errorf("ReadOnly() with the lock = %q", got)
	}
	if err := src.Decide("a.txt", f.Diff.Hunks[0].ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
		t.Errorf("Decide with the lock: %v", err)
	}
}
