package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// lines50 is a 50-line file with line i replaced by text (i is 1-based; 0 changes none), more
// pairs allowed.
func lines50(edits ...any) string {
	ls := make([]string, 50)
	for i := range ls {
		ls[i] = fmt.Sprintf("line %d\n", i+1)
	}
	for k := 0; k+1 < len(edits); k += 2 {
		ls[edits[k].(int)-1] = edits[k+1].(string) + "\n"
	}
	return strings.Join(ls, "")
}

// mergeFixture is a session whose agent changed a.txt (agentEdits, pre-image taken by a run) and
// whose host then changed it too (hostEdits).
func mergeFixture(t *testing.T, agentEdits, hostEdits []any) *fixture {
	t.Helper()
	f := newFixture(t, map[string]file{"a.txt": {Data: lines50()}})
	f.stage(t, map[string]file{"a.txt": {Data: lines50(agentEdits...)}})
	f.run(t)
	writeTree(t, f.project, map[string]file{"a.txt": {Data: lines50(hostEdits...)}})
	return f
}

func projectFile(t *testing.T, f *fixture, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.project, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func findChange(t *testing.T, f *fixture, p string) *changeset.Change {
	t.Helper()
	cs := f.changes(t)
	c, ok := cs.Find(p)
	if !ok {
		t.Fatalf("no change at %s in %v", p, statuses(cs))
	}
	return c
}

// The host edits line 2, the agent line 40: review offers the agent's hunk on the host's file,
// apply writes both, and nothing is left pending.
func TestMergeSeparateLines(t *testing.T) {
	f := mergeFixture(t, []any{40, "agent 40"}, []any{2, "host 2"})
	c := findChange(t, f, "a.txt")
	if c.Merge != changeset.MergeClean || c.Conflict || c.Host == nil {
		t.Fatalf("merge %q conflict %v host %v; want a clean merge", c.Merge, c.Conflict, c.Host)
	}
	v, err := f.s.HostView(c)
	if err != nil {
		t.Fatal(err)
	}
	if v.Merge == nil || len(v.Merge.Diff.Hunks) != 1 || !v.Merge.Clean() {
		t.Fatalf("want one clean hunk, got %+v", v.Merge)
	}
	if h := v.Merge.Diff.Hunks[0]; !strings.Contains(h.Text(), "-line 40\n+agent 40\n") {
		t.Fatalf("the agent's hunk:\n%s", h.Text())
	}
	if len(v.Diff) != 1 || !strings.Contains(v.Diff[0].Text(), "-line 2\n+host 2\n") {
		t.Fatalf("the host's change is not shown: %v", v.Diff)
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || !res.Files[0].Merged || len(res.Skipped) > 0 {
		t.Fatalf("plan %+v", res.ApplyPlan)
	}
	if got, want := projectFile(t, f, "a.txt"), lines50(2, "host 2", 40, "agent 40"); got != want {
		t.Fatalf("merged apply lost a change:\n%s", got)
	}
	if cs := f.changes(t); len(cs.Changes) != 0 || !res.Closes {
		t.Fatalf("after the merged apply: %v pending (closes %v)", statuses(cs), res.Closes)
	}
	// Rolled back, the host's edit is back and the path is a merge again, not a change that
	// would overwrite it.
	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatal(err)
	}
	if got := projectFile(t, f, "a.txt"); got != lines50(2, "host 2") {
		t.Fatalf("rollback: %q", got)
	}
	if c := findChange(t, f, "a.txt"); c.Merge != changeset.MergeClean || c.Host == nil {
		t.Fatalf("after rollback: merge %q host %v", c.Merge, c.Host)
	}
}

// conflictHunk is the conflicting hunk of c's merge.
func conflictHunk(t *testing.T, f *fixture, c *changeset.Change) diff.Hunk {
	t.Helper()
	v, err := f.s.HostView(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.Merge.Diff.Hunks {
		if _, ok := v.Merge.Conflicts[h.ID]; ok {
			return h
		}
	}
	t.Fatal("no conflict hunk")
	return diff.Hunk{}
}

// Both edit line 5 (the agent line 30 too): apply --all refuses the path with a one-line reason
// and writes nothing until the conflict is decided; taking either side or an edit then writes it
// with the agent's other change.
func TestMergeSameLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decide func(h diff.Hunk) diff.Decision
		line5  string
	}{
		{"take agent", func(diff.Hunk) diff.Decision { return diff.Decision{Verdict: diff.Accepted} }, "agent 5"},
		{"keep host", func(diff.Hunk) diff.Decision { return diff.Decision{Verdict: diff.Rejected} }, "host 5"},
		{"edit", func(h diff.Hunk) diff.Decision {
			return diff.Decision{Verdict: diff.Accepted, Edit: strings.Replace(diff.EditText(h), "+agent 5", "+both 5", 1)}
		}, "both 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mergeFixture(t, []any{5, "agent 5", 30, "agent 30"}, []any{5, "host 5"})
			c := findChange(t, f, "a.txt")
			if c.Merge != changeset.MergeConflict || !c.Conflict {
				t.Fatalf("merge %q conflict %v; want a conflict", c.Merge, c.Conflict)
			}
			before := projectFile(t, f, "a.txt")
			res, err := f.s.Apply(apply.ApplyOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 0 || len(res.Skipped) != 1 {
				t.Fatalf("apply --all wrote %+v", res.ApplyPlan)
			}
			reason := res.Skipped[0].Reason
			if strings.Contains(reason, "\n") || !strings.Contains(reason, "line 5") || !strings.Contains(reason, "shadow review") {
				t.Fatalf("reason %q", reason)
			}
			if projectFile(t, f, "a.txt") != before {
				t.Fatal("apply --all touched a conflicting file")
			}
			h := conflictHunk(t, f, c)
			if err := f.s.Decide(c, h.ID, tc.decide(h)); err != nil {
				t.Fatal(err)
			}
			res, err = f.s.Apply(apply.ApplyOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 1 || len(res.Skipped) != 0 {
				t.Fatalf("after deciding: %+v", res.ApplyPlan)
			}
			if got, want := projectFile(t, f, "a.txt"), lines50(5, tc.line5, 30, "agent 30"); got != want {
				t.Fatalf("got\n%s", got)
			}
			if !res.Closes {
				t.Fatal("a decided conflict left the session open")
			}
			// What the developer kept stays decided: nothing comes back as undecided.
			if cs := f.changes(t); len(cs.Changes) == 1 {
				fd := must(f.s.LoadDecisions()).For(&cs.Changes[0])
				if len(fd.Hunks) == 0 {
					t.Fatalf("the kept side came back undecided: %v", statuses(cs))
				}
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A binary file changed on both sides is a conflict that names both versions and how to settle it.
func TestMergeBinaryConflict(t *testing.T) {
	f := newFixture(t, map[string]file{"img.bin": {Data: "\x00\x01base"}})
	f.stage(t, map[string]file{"img.bin": {Data: "\x00\x01agent's version"}})
	f.run(t)
	writeTree(t, f.project, map[string]file{"img.bin": {Data: "\x00\x01host"}})
	c := findChange(t, f, "img.bin")
	if !c.Conflict || c.Merge != "" {
		t.Fatalf("conflict %v merge %q", c.Conflict, c.Merge)
	}
	for _, want := range []string{"binary", "yours is 6 B", "the agent's 17 B", changeset.ShortHash(projectfs.Sha256Hex([]byte("\x00\x01host")))} {
		if !strings.Contains(c.Reason, want) {
			t.Fatalf("reason %q lacks %q", c.Reason, want)
		}
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "cp -P ") {
		t.Fatalf("%+v", res.ApplyPlan)
	}
	// Taking the agent's version as the reason says settles it: the change leaves the set.
	data, _ := os.ReadFile(filepath.Join(f.s.UpperDir(), "img.bin"))
	writeTree(t, f.project, map[string]file{"img.bin": {Data: string(data)}})
	if cs := f.changes(t); len(cs.Changes) != 0 {
		t.Fatalf("still pending: %v", statuses(cs))
	}
}
