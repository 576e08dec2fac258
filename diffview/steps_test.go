package diffview

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// lines is a text of numbered lines "<prefix> i" for i in 1..n, with some replaced.
func lines(prefix string, n int, replace map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := replace[i]; ok {
			b.WriteString(r)
			continue
		}
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}

// stepHunks says, for a file whose text was texts[0] before the first step and texts[k] after
// step k, which hunks of the whole change (texts[0] to the last) each step claims.
func stepHunks(texts ...string) (hunks []diff.Hunk, claims [][]int) {
	last := texts[len(texts)-1]
	hunks = diff.Compute("f", []byte(texts[0]), []byte(last), diff.Options{}).Hunks
	for k := 1; k < len(texts); k++ {
		step := diff.FilePatch{OldPath: "f", NewPath: "f", OldMode: diff.ModeFile, NewMode: diff.ModeFile, Old: []byte(texts[k-1]), New: []byte(texts[k])}
		later := diff.FilePatch{OldPath: "f", NewPath: "f", OldMode: diff.ModeFile, NewMode: diff.ModeFile, Old: []byte(texts[k]), New: []byte(last)}
		m := markStep(step, later, texts[k] != last)
		var got []int
		for i, h := range hunks {
			if m.hasHunk(h) {
				got = append(got, i)
			}
		}
		claims = append(claims, got)
	}
	return hunks, claims
}

// A hunk of the whole change belongs to a step when a line the step added, or the gap a line it
// removed left, lands on or beside one of the hunk's changed lines in the latest text.
func TestStepHunks(t *testing.T) {
	base := lines("line", 30, nil)
	for _, tc := range []struct {
		name  string
		steps []string // the text after each step
		hunks int      // of the whole change
		want  [][]int  // per step, the hunks it claims
	}{{
		name: "each step its own hunk",
		steps: []string{
			lines("line", 30, map[int]string{2: "TWO\n"}),
			lines("line", 30, map[int]string{2: "TWO\n", 18: "EIGHTEEN\n"}),
		},
		hunks: 2, want: [][]int{{0}, {1}},
	}, {
		name: "a later step's insert above moves the earlier step's lines",
		steps: []string{
			lines("line", 30, map[int]string{20: "TWENTY\n"}),
			lines("line", 30, map[int]string{5: "new a\nnew b\nnew c\nline 5\n", 20: "TWENTY\n"}),
		},
		hunks: 2, want: [][]int{{1}, {0}},
	}, {
		name: "a removed line is the gap it leaves",
		steps: []string{
			lines("line", 30, map[int]string{10: ""}),
			lines("line", 30, map[int]string{10: "", 25: "TWENTY-FIVE\n"}),
		},
		hunks: 2, want: [][]int{{0}, {1}},
	}, {
		name: "a line the step added and a later step rewrote",
		steps: []string{
			lines("line", 30, map[int]string{12: "line 12\nadded\n"}),
			lines("line", 30, map[int]string{12: "line 12\nrewritten\n"}),
		},
		hunks: 1, want: [][]int{{0}, {0}},
	}, {
		name: "a change a later step undid claims nothing, not even the hunk around it",
		steps: []string{
			lines("line", 30, map[int]string{14: "FOURTEEN\n"}),
			lines("line", 30, map[int]string{16: "SIXTEEN\n"}),
		},
		hunks: 1, want: [][]int{nil, {0}},
	}, {
		name: "two steps in one hunk",
		steps: []string{
			lines("line", 30, map[int]string{7: "SEVEN\n"}),
			lines("line", 30, map[int]string{7: "SEVEN\n", 9: "NINE\n"}),
		},
		hunks: 1, want: [][]int{{0}, {0}},
	}, {
		name: "the file's end",
		steps: []string{
			base + "tail 1\n",
			base + "tail 1\ntail 2\n",
		},
		hunks: 1, want: [][]int{{0}, {0}},
	}, {
		name: "a file a later step emptied: the step's line is among those deleted",
		steps: []string{
			lines("line", 30, map[int]string{1: "first\n"}),
			"",
		},
		hunks: 1, want: [][]int{{0}, {0}},
	}, {
		name: "a step that only removed lines, then a step elsewhere",
		steps: []string{
			lines("line", 30, map[int]string{3: "", 4: ""}),
			lines("line", 30, map[int]string{3: "", 4: "", 28: "TWENTY-EIGHT\n"}),
		},
		hunks: 2, want: [][]int{{0}, {1}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			hunks, claims := stepHunks(append([]string{base}, tc.steps...)...)
			if len(hunks) != tc.hunks {
				t.Fatalf("%d hunks in the whole change, want %d", len(hunks), tc.hunks)
			}
			for k := range tc.want {
				if !slices.Equal(claims[k], tc.want[k]) {
					t.Errorf("step %d claims hunks %v, want %v", k+1, claims[k], tc.want[k])
				}
			}
		})
	}
}

// A change without lines (binary, a symlink becoming a file) belongs whole; a file the step did
// not touch is hidden, and so is one whose every change by the step was undone later.
func TestStepFiles(t *testing.T) {
	text := lines("line", 20, map[int]string{3: "THREE\n"})
	f := File{Path: "a.txt", Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile,
		Diff: diff.Compute("a.txt", []byte(lines("line", 20, nil)), []byte(text), diff.Options{})}
	bin := File{Path: "logo.png", Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile, Binary: true}
	patch := func(path, old, new string) diff.FilePatch {
		return diff.FilePatch{OldPath: path, NewPath: path, OldMode: diff.ModeFile, NewMode: diff.ModeFile, Old: []byte(old), New: []byte(new)}
	}
	marks := markSteps(StepChanges{Step: []diff.FilePatch{
		patch("a.txt", lines("line", 20, nil), lines("line", 20, map[int]string{3: "3\n"})),
		patch("logo.png", "\x89PNG\x00", "\x89PNG\x00\x01"),
	}, Later: []diff.FilePatch{
		patch("a.txt", lines("line", 20, map[int]string{3: "3\n"}), text),
	}})
	if sf := stepOf(f, f.Diff.Hunks, marks); sf.hidden || !sf.shows(f.Diff.Hunks[0]) {
		t.Errorf("a.txt, changed by the step and again later: %+v", sf)
	}
	if sf := stepOf(bin, Items(bin), marks); sf.hidden || sf.marks != nil {
		t.Errorf("logo.png, a binary change: %+v", sf)
	}
	other := File{Path: "b.txt", Status: StatusAdded, NewMode: diff.ModeFile, Diff: diff.Compute("b.txt", nil, []byte("b\n"), diff.Options{})}
	if sf := stepOf(other, other.Diff.Hunks, marks); !sf.hidden {
		t.Errorf("b.txt, not touched by the step, shows")
	}
	undone := markSteps(StepChanges{Step: []diff.FilePatch{patch("a.txt", lines("line", 20, nil), lines("line", 20, map[int]string{15: "X\n"}))},
		Later: []diff.FilePatch{patch("a.txt", lines("line", 20, map[int]string{15: "X\n"}), text)}})
	if sf := stepOf(f, f.Diff.Hunks, undone); !sf.hidden {
		t.Errorf("a.txt, whose change by the step was undone later, shows")
	}
}

// histSource is a memSource whose staged tree was made in steps: trees[0] is the base, trees[k]
// the tree after step ck.
type histSource struct {
	*memSource
	trees []map[string]string
	sent  map[string][]StepRequest // each step's requests through the proxy
}

func (s *histSource) Steps() ([]Step, error) {
	var out []Step
	triggers := []string{"prompt", "prompt", "run end"}
	for k := 1; k < len(s.trees); k++ {
		out = append(out, Step{ID: fmt.Sprintf("c%d", k), Trigger: triggers[(k-1)%len(triggers)],
			Time: time.Date(2026, 12, 1, 10, k, 0, 0, time.UTC)})
	}
	return out, nil
}

// StepChanges diffs the trees around the step, as a session's HistoryPatches does.
func (s *histSource) StepChanges(id string) (StepChanges, error) {
	var k int
	if _, err := fmt.Sscanf(id, "c%d", &k); err != nil || k < 1 || k >= len(s.trees) {
		return StepChanges{}, fmt.Errorf("no step %q", id)
	}
	sc := StepChanges{Step: treePatches(s.trees[k-1], s.trees[k]), Later: treePatches(s.trees[k], s.trees[len(s.trees)-1]), Sent: s.sent[id]}
	sc.Requests = len(sc.Sent)
	for _, r := range sc.Sent {
		if !r.Allowed {
			sc.Denied++
		}
	}
	// As session.CountStep counts (no renames here).
	sc.Files = len(sc.Step)
	for _, p := range sc.Step {
		e := diff.StatOf(p, diff.Options{})
		sc.Added, sc.Removed = sc.Added+e.Added, sc.Removed+e.Deleted
	}
	return sc, nil
}

func treePatches(from, to map[string]string) []diff.FilePatch {
	paths := slices.Sorted(maps.Keys(from))
	for p := range to {
		if _, ok := from[p]; !ok {
			paths = append(paths, p)
		}
	}
	var out []diff.FilePatch
	for _, p := range paths {
		a, inA := from[p]
		b, inB := to[p]
		if inA == inB && a == b {
			continue
		}
		fp := diff.FilePatch{OldPath: p, NewPath: p, Old: []byte(a), New: []byte(b)}
		if inA {
			fp.OldMode = diff.ModeFile
		}
		if inB {
			fp.NewMode = diff.ModeFile
		}
		out = append(out, fp)
	}
	return out
}

// stepFixture is a change set made in three steps:
//
//	c1: a.txt line 2 changed; c.txt created
//	c2: a.txt line 18 changed; b.txt created
//	c3: three lines inserted in a.txt after line 10; b.txt changed; c.txt deleted
func stepFixture() *histSource {
	t0 := map[string]string{"a.txt": lines("alpha line", 20, nil)}
	t1 := map[string]string{"a.txt": lines("alpha line", 20, map[int]string{2: "ALPHA TWO\n"}), "c.txt": "short-lived\n"}
	t2 := map[string]string{"a.txt": lines("alpha line", 20, map[int]string{2: "ALPHA TWO\n", 18: "ALPHA EIGHTEEN\n"}),
		"b.txt": "beta\n", "c.txt": "short-lived\n"}
	t3 := map[string]string{"a.txt": lines("alpha line", 20, map[int]string{2: "ALPHA TWO\n", 10: "alpha line 10\nnew x\nnew y\nnew z\n", 18: "ALPHA EIGHTEEN\n"}),
		"b.txt": "beta\nBETA TWO\n"}
	mem := &memSource{
		base:   t0,
		staged: t3,
		meta: map[string]File{
			"a.txt": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile},
			"b.txt": {Status: StatusAdded, NewMode: diff.ModeFile},
		},
		decisions: map[string]map[string]diff.Decision{},
		project:   maps.Clone(t0),
	}
	return &histSource{memSource: mem, trees: []map[string]string{t0, t1, t2, t3}}
}

// shownHunks lists the hunks the view shows of each file it lists, as "path: +first added line".
func shownHunks(m Model) []string {
	var out []string
	for _, f := range m.files {
		if f.hidden() {
			continue
		}
		for hi, h := range f.hunks {
			if !f.showsHunk(hi) {
				continue
			}
			for _, l := range h.Lines {
				if l.Op == diff.Insert {
					out = append(out, f.Path+": +"+l.Content())
					break
				}
			}
		}
	}
	return out
}

// The review narrowed to a step shows only what the step changed; moving along the history
// narrows to each step in turn; a decision made there is the whole change set's; = shows every
// step again.
func TestReviewNarrowedToStep(t *testing.T) {
	src := stepFixture()
	m := open(t, src, 80, 24)
	all := []string{"a.txt: +ALPHA TWO", "a.txt: +new x", "a.txt: +ALPHA EIGHTEEN", "b.txt: +beta"}
	if got := shownHunks(m); !slices.Equal(got, all) {
		t.Fatalf("whole change set: %q", got)
	}
	for _, step := range []struct {
		key, id string
		want    []string
		hidden  []string // not on the screen (a.txt's diff and the tree)
	}{
		{"<", "c3", []string{"a.txt: +new x", "b.txt: +beta"}, []string{"ALPHA TWO", "ALPHA EIGHTEEN"}},
		{"<", "c2", []string{"a.txt: +ALPHA EIGHTEEN", "b.txt: +beta"}, []string{"ALPHA TWO", "new x"}},
		{"<", "c1", []string{"a.txt: +ALPHA TWO"}, []string{"ALPHA EIGHTEEN", "new x", "b.txt"}},
		{"<", "c1", []string{"a.txt: +ALPHA TWO"}, nil}, // the first step: stays
		{">", "c2", []string{"a.txt: +ALPHA EIGHTEEN", "b.txt: +beta"}, []string{"ALPHA TWO"}},
	} {
		m = press(t, m, step.key)
		if m.narrow == nil || m.narrow.step().ID != step.id {
			t.Fatalf("after %s: narrowed to %+v, want %s (status %q)", step.key, m.narrow, step.id, m.status)
		}
		if got := shownHunks(m); !slices.Equal(got, step.want) {
			t.Errorf("narrowed to %s: %q, want %q", step.id, got, step.want)
		}
		v := ansi.Strip(m.View())
		if !strings.Contains(v, " "+step.id+" ") {
			t.Errorf("narrowed to %s, the screen does not say so:\n%s", step.id, v)
		}
		for _, h := range step.hidden {
			if strings.Contains(v, h) {
				t.Errorf("narrowed to %s, the screen shows %q:\n%s", step.id, h, v)
			}
		}
	}
	if !strings.Contains(m.status, "step c2 (prompt") {
		t.Errorf("status after moving to c2: %q", m.status)
	}

	// Narrowed to c2, a.txt shows one hunk: accepting it accepts that hunk of the whole change.
	m = selectPath(t, m, "a.txt")
	m = press(t, m, "a")
	eighteen := src.decided("a.txt")
	if len(eighteen) != 1 {
		t.Fatalf("decisions saved from the narrowed view: %v", src.saved)
	}
	whole := diff.Compute("a.txt", []byte(src.base["a.txt"]), []byte(src.staged["a.txt"]), diff.Options{}).Hunks
	if whole[2].ID != eighteen[0] {
		t.Errorf("the decision went to hunk %s, want the whole change's third hunk %s", eighteen[0], whole[2].ID)
	}
	// The next undecided hunk stays within the step: b.txt's.
	m = press(t, m, ".")
	if f := m.file(); f == nil || f.Path != "b.txt" {
		t.Errorf("next undecided from the narrowed a.txt went to %v", f)
	}

	m = press(t, m, "=")
	if m.narrow != nil {
		t.Fatalf("= left the view narrowed")
	}
	if got := shownHunks(m); !slices.Equal(got, all) {
		t.Errorf("every step again: %q", got)
	}
	for _, f := range m.files {
		if f.Path == "a.txt" {
			if acc, _, und := f.counts(); acc != 1 || und != 2 {
				t.Errorf("a.txt after deciding in the narrowed view: %d accepted, %d undecided", acc, und)
			}
		}
	}
}

// decided lists the hunk ids of path that have a decision.
func (s *memSource) decided(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.decisions[path]))
}

// A step whose changes a later step undid shows nothing, and says so.
func TestReviewStepUndone(t *testing.T) {
	src := stepFixture()
	// c1 also changed line 5, which c2 set back.
	src.trees[1]["a.txt"] = lines("alpha line", 20, map[int]string{2: "ALPHA TWO\n", 5: "FIVE\n"})
	m := open(t, src, 80, 24)
	m = press(t, m, ">") // from every step, > goes to the first
	if got := shownHunks(m); !slices.Equal(got, []string{"a.txt: +ALPHA TWO"}) {
		t.Errorf("c1: %q", got)
	}
	src.trees[1]["a.txt"] = lines("alpha line", 20, map[int]string{5: "FIVE\n"})
	src.trees[1]["c.txt"] = "short-lived\n"
	m = press(t, m, "=", ">")
	if got := shownHunks(m); len(got) != 0 {
		t.Errorf("c1, all of it undone later, shows %q", got)
	}
	// It says what the step changed, as shadow log counts it, and where to see it.
	if v := ansi.Strip(m.View()); !strings.Contains(v, "step c1 changed 2 files (+2 -1);") || !strings.Contains(v, "none of it is still staged") ||
		!strings.Contains(v, "shadow diff --checkpoint c1") ||
		!strings.Contains(strings.Join(strings.Fields(v), " "), "step c1 (prompt at 10:01:00) changed 2 files +2 -1; 0 still staged") {
		t.Errorf("the undone step does not say what it changed:\n%s", v)
	}
}

// A source without a history says so and stays whole.
func TestReviewNoHistory(t *testing.T) {
	m := open(t, fixture(), 80, 24)
	m = press(t, m, "<")
	if m.narrow != nil || !strings.Contains(m.status, "no history") {
		t.Errorf("narrowed without a history (status %q)", m.status)
	}
}

// The narrowed review as it looks on an 80×24 screen.
func TestReviewStepGolden(t *testing.T) {
	m := open(t, stepFixture(), 80, 24)
	m = press(t, m, "<", "<")
	m.status = "" // the status line's counts and the step's label
	v := m.View()
	checkScreen(t, v, 80, 24)
	golden.RequireEqual(t, v)
}

// A step's status line says what it sent through the proxy: nothing without requests, the count,
// and the refused ones' destinations, the first three.
func TestStepNetworkStatus(t *testing.T) {
	for _, c := range []struct {
		n    narrowing
		want string
	}{
		{narrowing{}, ""},
		{narrowing{requests: 1}, "; 1 request"},
		{narrowing{requests: 5, denied: 2, deniedTo: []string{"evil.test:443"}}, "; 5 requests, 2 DENIED (evil.test:443)"},
		{narrowing{requests: 9, denied: 4, deniedTo: []string{"a:1", "b:2", "c:3", "d:4"}}, "; 9 requests, 4 DENIED (a:1, b:2, c:3, …)"},
	} {
		if got := c.n.network(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.n, got, c.want)
		}
	}
}

// A step's requests are listed under its files in the tree pane: each with its method and status,
// the refused ones marked DENIED, where it went wrapped to the pane's width; what does not fit is
// counted; a step without requests, and the whole change set, list none.
func TestStepRequestsBesideFiles(t *testing.T) {
	src := stepFixture()
	many := make([]StepRequest, 40)
	for i := range many {
		many[i] = StepRequest{Method: "GET", Destination: fmt.Sprintf("http://api.test/%d", i), Status: 200, Allowed: true}
	}
	src.sent = map[string][]StepRequest{
		"c2": {
			{Method: "GET", Destination: "http://127.0.0.1:8080/v1/models/long/path", Status: 200, Allowed: true},
			{Method: "CONNECT", Destination: "evil.test:443", Status: 403},
		},
		"c3": many,
	}
	tree := func(m Model) []string {
		var out []string
		for _, l := range strings.Split(ansi.Strip(m.View()), "\n") {
			out = append(out, strings.TrimRight(ansi.Truncate(l, m.treeWidth(), ""), " "))
		}
		return out
	}
	for _, sz := range []struct{ w, h int }{{100, 30}, {160, 40}} {
		m := open(t, src, sz.w, sz.h)
		m = press(t, m, "<", "<") // c2
		v := m.View()
		checkScreen(t, v, sz.w, sz.h)
		got := strings.Join(tree(m), "\n")
		for _, want := range []string{"c2: 2 requests (1 DENIED)", "✓ GET 200", "✗ CONNECT DENIED", "  evil.test:443"} {
			if !strings.Contains(got, want) {
				t.Errorf("%dx%d: the tree pane lacks %q:\n%s", sz.w, sz.h, want, got)
			}
		}
		// The URL, wrapped, is whole.
		var url strings.Builder
		for _, l := range tree(m) {
			if rest, ok := strings.CutPrefix(l, "  "); ok && !strings.Contains(l, "evil") && strings.TrimSpace(rest) != "" &&
				(strings.HasPrefix(rest, "http") || url.Len() > 0 && !strings.Contains(url.String(), "/path")) {
				url.WriteString(rest)
			}
		}
		if url.String() != "http://127.0.0.1:8080/v1/models/long/path" {
			t.Errorf("%dx%d: the wrapped URL reads %q:\n%s", sz.w, sz.h, url.String(), got)
		}

		m = press(t, m, ">") // c3: more than fit
		v = m.View()
		checkScreen(t, v, sz.w, sz.h)
		got = strings.Join(tree(m), "\n")
		shown := strings.Count(got, "✓ GET 200")
		if !strings.Contains(got, "c3: 40 requests") || shown == 0 || !strings.Contains(got, fmt.Sprintf("\n… %d more\n", 40-shown)) {
			t.Errorf("%dx%d: c3's 40 requests are not cut with a count:\n%s", sz.w, sz.h, got)
		}

		m = press(t, m, "<", "<") // c1: none
		if got := strings.Join(tree(m), "\n"); strings.Contains(got, " request") {
			t.Errorf("%dx%d: c1, which sent nothing, lists requests:\n%s", sz.w, sz.h, got)
		}
		m = press(t, m, "=")
		if got := strings.Join(tree(m), "\n"); strings.Contains(got, " request") {
			t.Errorf("%dx%d: the whole change set lists a step's requests:\n%s", sz.w, sz.h, got)
		}
	}
}
