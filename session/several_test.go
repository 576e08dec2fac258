package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/store"
)

// Several sessions of one project (SPEC §15): each stages alone under its own lock, one apply at
// a time writes the project, and the second apply merges against what the first left.

// named opens (or continues) project's session name in st as a run does: the project's lock to
// choose it, then only the session's staging lock, let go when t ends.
func named(t *testing.T, st *Store, project, name string) *fixture {
	t.Helper()
	lk, err := st.LockProject(project, store.LockOptions{Command: "run"})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := lk.CurrentOrCreateNamed(name)
	if err != nil {
		lk.Release()
		t.Fatal(err)
	}
	if err := lk.HandOver(s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Release() })
	return &fixture{t: t, store: st, project: project, lock: lk, s: s}
}

// applyNamed applies every change of project's session name, as `shadow apply --session NAME
// --all` does: the project's lock and the session's, for the apply only.
func applyNamed(t *testing.T, st *Store, project, name string) *apply.ApplyResult {
	t.Helper()
	lk, err := st.LockProject(project, store.LockOptions{Command: "apply"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	s, err := lk.CurrentNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatalf("apply %s: %v", name, err)
	}
	return res
}

func newProject(t *testing.T, files map[string]file) (st *Store, project string) {
	t.Helper()
	dir := t.TempDir()
	project = filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, project, files)
	st, err := Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	return st, project
}

// Two sessions of one project run at once: a run holds its session, not the project, so a second
// session opens, runs and ends while the first still runs; a second writer of the same session
// is told it is busy; a command that names no session is asked to, and one that names a session
// finds it.
func TestSessionsOfOneProjectRunAtOnce(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: "a\n"}})
	a := named(t, st, project, "claude")
	if err := a.s.BeginRun([]string{"claude"}); err != nil {
		t.Fatal(err)
	}
	b := named(t, st, project, "codex") // before: project ... is busy: another shadow run ...
	if err := b.s.BeginRun([]string{"codex"}); err != nil {
		t.Fatal(err)
	}
	a.stage(t, map[string]file{"a.txt": {Data: "claude\n"}})
	b.stage(t, map[string]file{"b.txt": {Data: "codex\n"}})
	if err := b.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	if err := a.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	if a.s.ID() == b.s.ID() || a.s.Name() != "claude" || b.s.Name() != "codex" {
		t.Fatalf("sessions %s %q, %s %q", a.s.ID(), a.s.Name(), b.s.ID(), b.s.Name())
	}
	if got := statuses(a.changes(t)); strings.Join(got, ",") != "M a.txt" {
		t.Errorf("claude's changes: %v", got)
	}
	if got := statuses(b.changes(t)); strings.Join(got, ",") != "A b.txt" {
		t.Errorf("codex's changes: %v", got)
	}

	lk, err := st.LockProject(project, store.LockOptions{Command: "apply"})
	if err != nil {
		t.Fatalf("the project's lock while both sessions are held: %v", err)
	}
	defer lk.Release()
	var busy *store.BusyError
	if _, err := lk.CurrentNamed("claude"); !errors.As(err, &busy) || busy.Session == "" || !strings.Contains(err.Error(), "claude") {
		t.Errorf("a second writer of a held session: %v, want a busy session named claude", err)
	}
	var several *SeveralOpenError
	if _, err := lk.Current(); !errors.As(err, &several) || len(several.Open) != 2 || !strings.Contains(err.Error(), "--session") {
		t.Errorf("no session named among two open ones: %v", err)
	}
	if _, err := st.Current(project); !errors.As(err, &several) {
		t.Errorf("a reader naming no session among two open ones: %v", err)
	}
	for _, name := range []string{"claude", "codex"} {
		if s, err := st.Find(project, name); err != nil || s.Name() != name {
			t.Errorf("Find(%s) = %v, %v", name, s, err)
		}
	}
	if _, err := st.Find(project, "gemini"); err == nil || !strings.Contains(err.Error(), "claude (") || !strings.Contains(err.Error(), "codex (") {
		t.Errorf("Find of no such name: %v, want the open sessions named", err)
	}
	if _, err := lk.CreateNamed("codex"); err == nil || !strings.Contains(err.Error(), `named "codex"`) {
		t.Errorf("a second open session of one name: %v", err)
	}
	a.lock.Release()
	if s, err := lk.CurrentNamed("claude"); err != nil || s.ID() != a.s.ID() {
		t.Errorf("once its run let go, claude: %v, %v", s, err)
	}
}

// Applied one after the other, in either order, two sessions' edits of different lines of one
// file and of different files all reach the project: the second apply merges against what the
// first wrote. An edit both made of one line is not overwritten: the second apply leaves that
// file for review.
func TestApplyInTurnMergesBothOrders(t *testing.T) {
	for _, order := range [][2]string{{"claude", "codex"}, {"codex", "claude"}} {
		t.Run(order[0]+"-first", func(t *testing.T) {
			st, project := newProject(t, map[string]file{"a.txt": {Data: lines50()}, "gone.txt": {Data: "x\n"}})
			a := named(t, st, project, "claude")
			a.stage(t, map[string]file{"a.txt": {Data: lines50(5, "claude 5")}, "c.txt": {Data: "claude\n"}})
			a.whiteout(t, "gone.txt")
			a.run(t)
			b := named(t, st, project, "codex")
			b.stage(t, map[string]file{"a.txt": {Data: lines50(40, "codex 40")}, "d.txt": {Data: "codex\n"}})
			b.run(t)
			a.lock.Release()
			b.lock.Release()
			first := applyNamed(t, st, project, order[0])
			second := applyNamed(t, st, project, order[1])
			if len(second.Skipped) > 0 || !second.Closes || !first.Closes {
				t.Fatalf("first %+v\nsecond %+v", first.ApplyPlan, second.ApplyPlan)
			}
			merged := false
			for _, pf := range second.Files {
				merged = merged || pf.Path == "a.txt" && pf.Merged
			}
			if !merged {
				t.Errorf("the second apply wrote a.txt without merging: %+v", second.Files)
			}
			want := map[string]string{"a.txt": lines50(5, "claude 5", 40, "codex 40"), "c.txt": "claude\n", "d.txt": "codex\n"}
			if got := projectTree(t, project); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("project after both applies:\n%v\nwant\n%v", got, want)
			}
		})
	}
	t.Run("same-line", func(t *testing.T) {
		st, project := newProject(t, map[string]file{"a.txt": {Data: lines50()}})
		a := named(t, st, project, "claude")
		a.stage(t, map[string]file{"a.txt": {Data: lines50(20, "claude 20")}})
		a.run(t)
		b := named(t, st, project, "codex")
		b.stage(t, map[string]file{"a.txt": {Data: lines50(20, "codex 20")}})
		b.run(t)
		a.lock.Release()
		b.lock.Release()
		applyNamed(t, st, project, "claude")
		second := applyNamed(t, st, project, "codex")
		if len(second.Files) != 0 || second.Closes {
			t.Errorf("the second apply of a line both changed wrote %+v", second.ApplyPlan)
		}
		if got := projectFile(t, &fixture{project: project}, "a.txt"); got != lines50(20, "claude 20") {
			t.Errorf("the first apply's line was overwritten:\n%s", got)
		}
		s, err := st.Find(project, "codex")
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.Changes()
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := cs.Find("a.txt"); !ok || !c.Conflict {
			t.Errorf("codex's a.txt after claude's apply: %+v, want a conflict left for review", c)
		}
	})
}

// For random edits of disjoint lines of one file and random new files in two sessions, applying
// both, in a random order, is the project with both sets of edits.
func TestApplyInTurnIsBothEdits(t *testing.T) {
	for seed := range uint64(24) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 28))
			st, project := newProject(t, map[string]file{"a.txt": {Data: lines50()}})
			// Lines 1..50 in runs of three, each run given to one session or none: a line either
			// changes lies two lines or more from the other's, as a three-way merge needs.
			var edits [2][]any
			for start := 1; start+2 <= 50; start += 6 {
				who := r.IntN(3)
				if who == 2 {
					continue
				}
				for l := start; l < start+3; l++ {
					if r.IntN(2) == 0 {
						edits[who] = append(edits[who], l, fmt.Sprintf("s%d line %d", who, l))
					}
				}
			}
			both := append(append([]any(nil), edits[0]...), edits[1]...)
			want := map[string]string{"a.txt": lines50(both...)}
			names := [2]string{"one", "two"}
			for i, name := range names {
				f := named(t, st, project, name)
				files := map[string]file{"a.txt": {Data: lines50(edits[i]...)}}
				for k := range r.IntN(3) {
					p := fmt.Sprintf("%s-%d.txt", name, k)
					files[p] = file{Data: fmt.Sprintf("%d\n", r.Int())}
					want[p] = files[p].Data
				}
				if len(edits[i]) == 0 {
					delete(files, "a.txt")
				}
				f.stage(t, files)
				f.run(t)
				f.lock.Release()
			}
			if r.IntN(2) == 0 {
				names[0], names[1] = names[1], names[0]
			}
			for _, name := range names {
				applyNamed(t, st, project, name)
			}
			if got := projectTree(t, project); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("applied %v: project\n%v\nwant\n%v", names, got, want)
			}
		})
	}
}

// Discarding a session removes its layers and nothing of another's: the other's staging layer,
// checkpoints and change set are as they were.
func TestDiscardTouchesNoOtherSession(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: "a\n"}})
	a := named(t, st, project, "claude")
	a.stage(t, map[string]file{"a.txt": {Data: "claude\n"}})
	a.run(t)
	b := named(t, st, project, "codex")
	b.stage(t, map[string]file{"a.txt": {Data: "codex\n"}, "b.txt": {Data: "b\n"}})
	b.run(t)
	before := snapshot(t, b.s.Dir())
	if err := a.s.Discard(); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(before, snapshot(t, b.s.Dir())); d != "" {
		t.Errorf("discarding claude changed codex's session:\n%s", d)
	}
	if got := statuses(b.changes(t)); strings.Join(got, ",") != "A b.txt,M a.txt" && strings.Join(got, ",") != "M a.txt,A b.txt" {
		t.Errorf("codex's changes after claude's discard: %v", got)
	}
}

// Sessions opened at once by many writers are each in the project's index once, and each is
// found by its name: no writer's line is lost.
func TestConcurrentOpensKeepTheIndex(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: "a\n"}})
	// An index exists from the start (LockProject writes it), so every open appends to it.
	lk, err := st.LockProject(project, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	lk.Release()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lk, err := st.LockProject(project, store.LockOptions{Command: "run", Wait: true})
			if err != nil {
				errs[i] = err
				return
			}
			defer lk.Release()
			s, _, err := lk.CurrentOrCreateNamed(fmt.Sprintf("s%d", i))
			if err == nil {
				err = lk.HandOver(s)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	ids, ok, err := st.ReadIndex(project)
	if err != nil || !ok {
		t.Fatalf("index: %v %v", ok, err)
	}
	open, err := st.OpenSessions(project)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range open {
		names = append(names, s.Name())
	}
	sort.Strings(names)
	if len(ids) != n || len(open) != n || strings.Join(names, " ") != "s0 s1 s2 s3 s4 s5 s6 s7" {
		t.Errorf("index %v, open %v", ids, names)
	}
}

// projectTree is every regular file of the project, by path, with its content.
func projectTree(t *testing.T, project string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(project, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(project, p)
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A review holds its session, not the project (HandOver): its apply takes the project's lock for
// the apply alone, while another session of the project runs, and lets it go after; a rollback
// from it does the same.
func TestApplyFromAHeldSessionTakesTheProjectForTheApplyOnly(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: "a\n"}})
	a := named(t, st, project, "claude")
	a.stage(t, map[string]file{"a.txt": {Data: "claude\n"}})
	a.run(t)
	b := named(t, st, project, "codex")
	if err := b.s.BeginRun([]string{"codex"}); err != nil {
		t.Fatal(err)
	}
	res, err := a.s.Apply(apply.ApplyOptions{All: true})
	if err != nil || len(res.Files) != 1 {
		t.Fatalf("apply from a held session while another runs: %+v, %v", res, err)
	}
	lk, err := st.LockProject(project, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatalf("the project's lock after the apply: %v", err)
	}
	lk.Release()
	if _, err := a.lock.Rollback(""); err != nil {
		t.Fatalf("rollback from a held session: %v", err)
	}
	if got := projectFile(t, &fixture{project: project}, "a.txt"); got != "a\n" {
		t.Errorf("after the rollback a.txt is %q", got)
	}
	if err := b.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
}

// Keeping the better of two agents' work, file by file: one session takes another's version of
// a file, a new file and a deletion, as a step of its own that its log names and a revert
// undoes; a path the other did not change is refused with nothing written.
func TestTakeKeepsTheOtherSessionsVersion(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: lines50()}, "gone.txt": {Data: "x\n"}, "keep.txt": {Data: "k\n"}})
	a := named(t, st, project, "claude")
	a.stage(t, map[string]file{"a.txt": {Data: lines50(3, "claude 3")}, "keep.txt": {Data: "claude\n"}})
	a.run(t)
	b := named(t, st, project, "codex")
	b.stage(t, map[string]file{"a.txt": {Data: lines50(30, "codex 30")}, "dir/new.txt": {Data: "codex\n"}})
	b.whiteout(t, "gone.txt")
	b.run(t)
	before, err := a.s.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.s.Take(b.s, []string{"keep.txt"}); err == nil || !strings.Contains(err.Error(), "did not change") {
		t.Fatalf("taking a path the other did not change: %v", err)
	}
	if _, err := a.s.Take(a.s, []string{"a.txt"}); err == nil {
		t.Fatal("a session took from itself")
	}
	if cps, _ := a.s.Checkpoints(); len(cps) != len(before) {
		t.Fatalf("a refused take wrote checkpoints: %v", cps)
	}
	taken, err := a.s.Take(b.s, []string{"a.txt", "dir", "gone.txt"})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(taken)
	if strings.Join(taken, " ") != "a.txt dir/new.txt gone.txt" {
		t.Errorf("taken %v", taken)
	}
	got := map[string]string{}
	for _, c := range a.changes(t).Changes {
		data := ""
		if c.New.Kind == KindFile {
			_, n, err := a.s.Contents(&c, 0)
			if err != nil {
				t.Fatal(err)
			}
			data = string(n)
		}
		got[c.Path] = string(c.Status) + " " + data
	}
	want := map[string]string{"a.txt": "M " + lines50(30, "codex 30"), "dir/new.txt": "A codex\n", "gone.txt": "D ", "keep.txt": "M claude\n"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("claude's changes after taking codex's:\n%v\nwant\n%v", got, want)
	}
	cps, err := a.s.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	// A session staged before checkpoints existed (these fixtures stage without a jail) gets
	// its staging layer as c1 first: the take is the step after it.
	last := cps[len(cps)-1]
	if len(cps) < 2 || last.Trigger != "take" || !strings.Contains(last.Prompt, "codex") {
		t.Fatalf("the take's step: %+v", cps)
	}
	if _, err := a.s.Revert(cps[len(cps)-2].ID); err != nil {
		t.Fatal(err)
	}
	if got := statuses(a.changes(t)); strings.Join(got, ",") != "M a.txt,M keep.txt" {
		t.Errorf("after reverting the take: %v", got)
	}
	if cs := b.changes(t); len(cs.Changes) != 3 {
		t.Errorf("the take changed codex's session: %v", statuses(cs))
	}
}

// Taking hunks: of the diff from one session's version of a file to another's, only the hunks
// named come over; the rest of the first session's version stays. A hunk the diff lacks, or a
// path the other did not stage as text, is refused with nothing written.
func TestTakeHunks(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: lines50()}, "b.txt": {Data: "b\n"}})
	a := named(t, st, project, "claude")
	a.stage(t, map[string]file{"a.txt": {Data: lines50(5, "claude 5", 30, "claude 30")}})
	a.run(t)
	b := named(t, st, project, "codex")
	b.stage(t, map[string]file{"a.txt": {Data: lines50(5, "codex 5", 45, "codex 45")}, "b.txt": {Data: "codex\n"}})
	b.run(t)
	if n, err := a.s.TakeHunks(b.s, "a.txt", []int{4}); err == nil || n != 3 || !strings.Contains(err.Error(), "3 hunks") {
		t.Fatalf("a hunk the diff lacks: %d, %v", n, err)
	}
	if _, err := a.s.TakeHunks(b.s, "b.txt", []int{1}); err == nil || !strings.Contains(err.Error(), "claude") {
		t.Fatalf("a path the taking session did not stage: %v", err)
	}
	if _, err := a.s.TakeHunks(b.s, "a.txt", []int{1, 3}); err != nil {
		t.Fatal(err)
	}
	c, ok := a.changes(t).Find("a.txt")
	if !ok {
		t.Fatal("a.txt is no change of claude's after the take")
	}
	_, got, err := a.s.Contents(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := lines50(5, "codex 5", 30, "claude 30", 45, "codex 45"); string(got) != want {
		t.Errorf("claude's a.txt after taking hunks 1 and 3 of codex's:\n%s", got)
	}
}

// A session applied keeps its name for the commands that read what it did: Find by the name
// gives the newest session of it once none of that name is open.
func TestFindAnAppliedSessionByName(t *testing.T) {
	st, project := newProject(t, map[string]file{"a.txt": {Data: "a\n"}})
	a := named(t, st, project, "claude")
	a.stage(t, map[string]file{"a.txt": {Data: "claude\n"}})
	a.run(t)
	a.lock.Release()
	applyNamed(t, st, project, "claude")
	s, err := st.Find(project, "claude")
	if err != nil || s.ID() != a.s.ID() || s.Meta.State != StateApplied {
		t.Fatalf("Find(claude) after its apply: %v, %v", s, err)
	}
}
