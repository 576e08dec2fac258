package diffview

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// hostSource is a Source of files the host changed too: one merged with a conflict, one that
// cannot be merged.
type hostSource struct {
	files     []File
	decisions map[string]map[string]diff.Decision
}

func (s *hostSource) Load() ([]File, error) {
	out := make([]File, len(s.files))
	for i, f := range s.files {
		f.Decisions = maps.Clone(s.decisions[f.Path])
		out[i] = f
	}
	return out, nil
}

func (s *hostSource) Decide(path, id string, d diff.Decision) error {
	if s.decisions[path] == nil {
		s.decisions[path] = map[string]diff.Decision{}
	}
	s.decisions[path][id] = d
	return nil
}

func (s *hostSource) Apply(Plan) (Outcome, error)          { return Outcome{}, nil }
func (s *hostSource) Rollback() (Outcome, error)           { return Outcome{}, nil }
func (s *hostSource) decided(path, id string) diff.Verdict { return s.decisions[path][id].Verdict }

func newHostSource() (*hostSource, diff.Merged) {
	var base, host, agent []string
	for i := 1; i <= 30; i++ {
		l := fmt.Sprintf("line %d\n", i)
		base, host, agent = append(base, l), append(host, l), append(agent, l)
	}
	host[1], host[4] = "host 2\n", "host 5\n"
	agent[4], agent[24] = "agent 5\n", "agent 25\n"
	b, h, a := []byte(strings.Join(base, "")), []byte(strings.Join(host, "")), []byte(strings.Join(agent, ""))
	m := diff.Merge3("both.txt", b, h, a, diff.Options{})
	merged := File{Path: "both.txt", Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile, Diff: m.Diff,
		Host: &HostChange{Summary: "you changed this file too", Diff: diff.Compute("both.txt", b, h, diff.Options{}).Hunks, Conflicts: m.Conflicts}}
	gone := File{Path: "gone.txt", Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile,
		Conflict: "the host deleted it since its pre-image was taken",
		Diff:     diff.Compute("gone.txt", []byte("a\n"), []byte("b\n"), diff.Options{}),
		Host:     &HostChange{Summary: "CONFLICT: the host deleted it — apply refuses this path; keep yours, or take the agent's: cp -P x y"}}
	return &hostSource{files: []File{merged, gone}, decisions: map[string]map[string]diff.Decision{}}, m
}

// The review shows the host's change, the base of a conflict and the keys that resolve it;
// ctrl+a leaves the conflict for the developer, r keeps the host's lines.
func TestConflictView(t *testing.T) {
	src, merged := newHostSource()
	m := open(t, src, 120, 60)
	m = selectPath(t, m, "both.txt")
	v := ansi.Strip(m.View())
	for _, want := range []string{
		"you changed this file too",
		"your change since the pre-image",
		"-line 2", "+host 2",
		"CONFLICT: you (−) and the agent (+) both changed these lines; the base had:",
		"= line 5",
		"! CONFLICT: a agent's · r yours · e edit",
		"-host 5", "+agent 5", "+agent 25",
	} {
		if !strings.Contains(v, want) {
			t.Fatalf("the review does not show %q:\n%s", want, v)
		}
	}
	if !strings.Contains(v, "C 0✓0✗2·") {
		t.Fatalf("the tree has no conflict badge:\n%s", v)
	}
	var conflict, clean string
	for _, h := range merged.Diff.Hunks {
		if _, ok := merged.Conflicts[h.ID]; ok {
			conflict = h.ID
		} else {
			clean = h.ID
		}
	}
	m = press(t, m, "ctrl+a")
	if src.decided("both.txt", clean) != diff.Accepted || src.decided("both.txt", conflict) != diff.Undecided {
		t.Fatalf("ctrl+a: clean %q, conflict %q; want the conflict left undecided", src.decided("both.txt", clean), src.decided("both.txt", conflict))
	}
	// On the base rows of the conflict, r decides the conflict.
	f := m.file()
	for i, r := range f.rows(false) {
		if r.kind == rowBase && r.line == 0 {
			f.cursor = i
		}
	}
	m = press(t, m, "r")
	if src.decided("both.txt", conflict) != diff.Rejected {
		t.Fatalf("r on the conflict's base rows did not keep the host's lines: %v", src.decisions)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "✗ yours kept (conflict resolved)") || !strings.Contains(v, "H 1✓1✗0·") {
		t.Fatalf("after r:\n%s", v)
	}
	// A conflict that cannot be merged says what happened and how to settle it.
	m = selectPath(t, m, "gone.txt")
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "the host deleted it") || !strings.Contains(v, "cp -P x y") {
		t.Fatalf("unmerged conflict:\n%s", v)
	}
}
