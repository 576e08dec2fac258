package ui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// A text file past the session's diff limit (lowered here so that the test
// generates kilobytes, not 64 MiB) shows its size, that it is too large and
// the command that shows it, and is accepted whole and applied.
func TestTooLargeFileOverSession(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 8<<10; i++ {
		fmt.Fprintf(&b, "log line %d\n", i)
	}
	big := b.String()
	ts := newTestSession(t, map[string]string{"big.log": "old\n", "a.txt": baseText})
	ts.store.MaxDiffBytes = 4 << 10
	ts.stage(t, map[string]string{"big.log": big, "a.txt": stagedText})
	src := reviewsrc.New(ts.lock, ts.s)
	f := loadFile(t, src, "big.log")
	want := "shadow diff -- " + filepath.Join(ts.project, "big.log") + " | less"
	if !f.TooLarge || f.ShowCommand != want || len(f.Diff.Hunks) != 0 {
		t.Fatalf("big.log: TooLarge %v, ShowCommand %q, %d hunks; want too large, %q, none",
			f.TooLarge, f.ShowCommand, len(f.Diff.Hunks), want)
	}
	if small := loadFile(t, src, "a.txt"); small.TooLarge || len(small.Diff.Hunks) == 0 {
		t.Fatalf("a.txt under the limit: TooLarge %v, %d hunks", small.TooLarge, len(small.Diff.Hunks))
	}

	tm := startReview(t, src, "true")
	sc := newFlowScreen(t, 80, 24)
	sc.waitFor(t, tm, "file 1/")
	send(tm, "}") // a.txt, then big.log
	sc.waitFor(t, tm, "too large to show here (4 B → 8.0 KiB)")
	sc.waitFor(t, tm, "see its diff with: shadow diff --")
	send(tm, "a")
	sc.waitFor(t, tm, "whole file ✓ accepted")
	send(tm, "w")
	sc.waitFor(t, tm, "Apply to the project?")
	send(tm, "y")
	sc.waitFor(t, tm, "apply done")
	if got := readFile(t, filepath.Join(ts.project, "big.log")); got != big {
		t.Errorf("big.log after apply: %d bytes, want the staged %d", len(got), len(big))
	}
	if got := readFile(t, filepath.Join(ts.project, "a.txt")); got != baseText {
		t.Errorf("undecided a.txt was written")
	}
}
