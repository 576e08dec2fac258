package session

import (
	"os"
	"path/filepath"
	"runtime"
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

// A side of a change is read into one buffer of its size: reading an 8 MB staged file allocates
// about 8 MB, not the doubling buffers of a read of unknown length (about twice as much).
func TestContentsAllocatesTheFileOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's allocations count too")
	}
	const size = 8 << 20
	f := newFixture(t, map[string]file{"keep.txt": {Data: "k\n"}})
	f.stage(t, map[string]file{"big.txt": {Data: strings.Repeat("0123456789abcde\n", size/16)}})
	f.run(t)
	c, ok := f.changes(t).Find("big.txt")
	if !ok {
		t.Fatal("no change at big.txt")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, data, err := f.s.Contents(c, 0)
	runtime.ReadMemStats(&after)
	if err != nil || len(data) != size {
		t.Fatalf("Contents: %d bytes, %v", len(data), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > size*3/2 {
		t.Errorf("reading an %d-byte staged file allocated %d bytes, want under %d", size, got, size*3/2)
	}
}
