package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/apply"
)

// A text file past the store's diff limit is never diffed: it has no hunks, says so, and a
// whole-file decision applies it; a smaller one beside it is still decided hunk by hunk.
func TestTooLargeToDiffDecidedWhole(t *testing.T) {
	big := strings.Repeat("line\n", 40) // 200 bytes
	f := newFixture(t, map[string]file{"big.txt": {Data: "old\n"}, "small.txt": {Data: "a\n"}})
	f.store.MaxDiffBytes = 100
	f.stage(t, map[string]file{"big.txt": {Data: big}, "small.txt": {Data: "b\n"}})
	f.run(t)
	cs := f.changes(t)
	c, ok := cs.Find("big.txt")
	if !ok {
		t.Fatal("no change for big.txt")
	}
	if !f.s.TooLargeToDiff(c) {
		t.Fatalf("a 200-byte file is not too large under a 100-byte limit")
	}
	if got, want := f.s.ShowCommand(c), "shadow diff -- "+filepath.Join(f.project, "big.txt")+" | less"; got != want {
		t.Errorf("ShowCommand = %q, want %q", got, want)
	}
	d, err := f.s.Diff(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hunks) != 0 {
		t.Errorf("a file too large to diff has %d hunks", len(d.Hunks))
	}
	small, _ := cs.Find("small.txt")
	if f.s.TooLargeToDiff(small) {
		t.Errorf("a 2-byte file is too large to diff")
	}
	if d, err := f.s.Diff(small); err != nil || len(d.Hunks) != 1 {
		t.Errorf("small.txt: %d hunks, err %v; want 1", len(d.Hunks), err)
	}
	if err := f.s.Decide(c, "", diff.Decision{Verdict: diff.Accepted}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Apply(apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(f.project, "big.txt"))
	if err != nil || string(got) != big {
		t.Errorf("big.txt after apply = %q, %v; want the staged file whole", got, err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.project, "small.txt")); string(got) != "a\n" {
		t.Errorf("undecided small.txt was written: %q", got)
	}
}
