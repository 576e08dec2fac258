package reviewsrc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/testsession"
	"github.com/shadow-sandbox/shadow/session"
)

// testSession is a real session over a project in t.TempDir(), with the
// project's writer lock held (internal/testsession).
type testSession struct {
	project string
	store   *session.Store
	lock    *session.ProjectLock
	s       *session.Session
}

func newTestSession(t testing.TB, files map[string]string) *testSession {
	t.Helper()
	x := testsession.New(t, files)
	return &testSession{project: x.Project, store: x.Store, lock: x.Lock, s: x.S}
}

// stage writes files into the session's upper layer as a run would, and
// records the run so the pre-images are taken.
func (ts *testSession) stage(t testing.TB, files map[string]string) {
	t.Helper()
	testsession.Stage(t, ts.s, files)
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	testsession.WriteFiles(t, root, files)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	return testsession.ReadFile(t, path)
}

const (
	baseText   = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	stagedText = "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\nTWELVE\n"
)

func loadFile(t *testing.T, src *Source, path string) diffview.File {
	t.Helper()
	files, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("Load has no %s among %d files", path, len(files))
	return diffview.File{}
}

func TestReviewSourceDecideApplyRollback(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText, "b.txt": "b\n"})
	ts.stage(t, map[string]string{"a.txt": stagedText, "b.txt": "B\n", "new/c.txt": "c\n"})
	src := New(ts.lock, ts.s)

	files, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("Load: %d files, want 3", len(files))
	}
	a := loadFile(t, src, "a.txt")
	if a.Status != diffview.StatusModified || len(a.Diff.Hunks) != 2 {
		t.Fatalf("a.txt: status %c, %d hunks; want M with 2", a.Status, len(a.Diff.Hunks))
	}
	c := loadFile(t, src, "new/c.txt")
	if c.Status != diffview.StatusAdded || c.NewMode != diff.ModeFile {
		t.Fatalf("new/c.txt: status %c mode %o", c.Status, c.NewMode)
	}

	// Accept the first hunk of a.txt, reject the second, accept c.txt's
	// only hunk, leave b.txt undecided.
	if err := src.Decide("a.txt", a.Diff.Hunks[0].ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
		t.Fatal(err)
	}
	if err := src.Decide("a.txt", a.Diff.Hunks[1].ID, diff.Decision{Verdict: diff.Rejected}); err != nil {
		t.Fatal(err)
	}
	for _, it := range diffview.Items(c) {
		if err := src.Decide("new/c.txt", it.ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
			t.Fatal(err)
		}
	}

	// A fresh source over the same session sees the saved decisions.
	again := New(ts.lock, ts.s)
	files, err = again.Load()
	if err != nil {
		t.Fatal(err)
	}
	a = loadFile(t, again, "a.txt")
	if a.Decisions[a.Diff.Hunks[0].ID].Verdict != diff.Accepted || a.Decisions[a.Diff.Hunks[1].ID].Verdict != diff.Rejected {
		t.Fatalf("decisions not persisted: %+v", a.Decisions)
	}

	plan := diffview.MakePlan(files)
	if len(plan.Write) != 2 {
		t.Fatalf("plan writes %+v, want a.txt and new/c.txt", plan.Write)
	}
	out, err := again.Apply(plan)
	if err != nil {
		t.Fatal(err)
	}
	if out.ApplyID == "" || len(out.Written) != 2 {
		t.Errorf("outcome %+v", out)
	}
	want := "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); got != want {
		t.Errorf("a.txt after apply = %q, want %q", got, want)
	}
	if got := readFile(t, filepath.Join(ts.project, "new/c.txt")); got != "c\n" {
		t.Errorf("new/c.txt after apply = %q", got)
	}
	if got := readFile(t, filepath.Join(ts.project, "b.txt")); got != "b\n" {
		t.Errorf("undecided b.txt was written: %q", got)
	}

	if _, err := again.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); got != baseText {
		t.Errorf("a.txt after rollback = %q", got)
	}
	if _, err := os.Stat(filepath.Join(ts.project, "new/c.txt")); !os.IsNotExist(err) {
		t.Errorf("new/c.txt survives the rollback: %v", err)
	}
}

func TestReviewSourceWholeFileVerdictSplitsIntoHunks(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText})
	ts.stage(t, map[string]string{"a.txt": stagedText})
	src := New(ts.lock, ts.s)
	a := loadFile(t, src, "a.txt")
	// A whole-file accept saved by `shadow apply`-style tooling...
	cs, err := ts.s.Changes()
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := cs.Find("a.txt")
	if err := ts.s.Decide(ch, "", diff.Decision{Verdict: diff.Accepted}); err != nil {
		t.Fatal(err)
	}
	a = loadFile(t, src, "a.txt")
	for _, h := range a.Diff.Hunks {
		if a.Decisions[h.ID].Verdict != diff.Accepted {
			t.Fatalf("whole-file verdict not shown on hunk %s: %+v", h.ID, a.Decisions)
		}
	}
	// ...then the second hunk rejected in review: the first stays accepted.
	if err := src.Decide("a.txt", a.Diff.Hunks[1].ID, diff.Decision{Verdict: diff.Rejected}); err != nil {
		t.Fatal(err)
	}
	files, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Apply(diffview.MakePlan(files)); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); !strings.HasPrefix(got, "ONE\n") || !strings.HasSuffix(got, "twelve\n") {
		t.Errorf("a.txt = %q, want the first hunk only", got)
	}
}

func TestReviewSourceApplyRefusesUnplannedFiles(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	ts.stage(t, map[string]string{"a.txt": "A\n", "b.txt": "B\n"})
	src := New(ts.lock, ts.s)
	files, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, it := range diffview.Items(f) {
			if err := src.Decide(f.Path, it.ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A plan that lists only a.txt must not write b.txt.
	_, err = src.Apply(diffview.Plan{Write: []diffview.PlanFile{{Path: "a.txt", Accepted: 1}}})
	if err == nil || !strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("Apply with a narrower plan: %v, want a refusal naming b.txt", err)
	}
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); got != "a\n" {
		t.Errorf("a.txt written despite the refusal: %q", got)
	}
}

func TestReadOnlySourceRefusesChanges(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": "a\n"})
	ts.stage(t, map[string]string{"a.txt": "A\n"})
	ro := ReadOnly{Source: New(ts.lock, ts.s)}
	files, err := ro.Load()
	if err != nil || len(files) != 1 {
		t.Fatalf("Load: %d files, %v", len(files), err)
	}
	if err := ro.Decide("a.txt", diffview.Items(files[0])[0].ID, diff.Decision{Verdict: diff.Accepted}); err == nil {
		t.Error("a read-only source saved a decision")
	}
	if _, err := ro.Apply(diffview.MakePlan(files)); err == nil {
		t.Error("a read-only source applied")
	}
}

// An apply's outcome lists the paths it wrote and those it deleted apart; a
// rollback's says what it put back and what it removed, and whether an
// earlier apply is left to roll back.
func TestReviewSourceOutcomesNameTheirPaths(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText, "gone.txt": "g\n"})
	if err := ts.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ts.s.UpperDir(), map[string]string{"a.txt": stagedText, "new/c.txt": "c\n"})
	if err := unix.Mknod(filepath.Join(ts.s.UpperDir(), "gone.txt"), unix.S_IFCHR|0o600, 0); err != nil {
		t.Skipf("cannot make a whiteout (0/0 character device) here, needs root: %v", err)
	}
	if err := ts.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	src := New(ts.lock, ts.s)
	accept := func(paths ...string) diffview.Outcome {
		t.Helper()
		for _, p := range paths {
			for _, it := range diffview.Items(loadFile(t, src, p)) {
				if err := src.Decide(p, it.ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
					t.Fatal(err)
				}
			}
		}
		files, err := src.Load()
		if err != nil {
			t.Fatal(err)
		}
		out, err := src.Apply(diffview.MakePlan(files))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	accept("a.txt")
	out := accept("gone.txt", "new/c.txt")
	if strings.Join(out.Written, ",") != "new/c.txt" || strings.Join(out.Deleted, ",") != "gone.txt" {
		t.Errorf("apply outcome: written %q, deleted %q; want new/c.txt and gone.txt", out.Written, out.Deleted)
	}
	out, err := src.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	if !out.Rollback || strings.Join(out.Restored, ",") != "gone.txt" || strings.Join(out.Removed, ",") != "new/c.txt" || !out.OlderApply {
		t.Errorf("first rollback's outcome %+v: want gone.txt put back, new/c.txt removed, an earlier apply left", out)
	}
	out, err = src.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Restored, ",") != "a.txt" || len(out.Removed) != 0 || out.OlderApply || out.CanRollback() {
		t.Errorf("last rollback's outcome %+v: want a.txt put back and no apply left", out)
	}
}
