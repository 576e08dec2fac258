package diff

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// byLines is the line diff as it is computed on whole lines, with no trim of the bytes first:
// what DiffLines must keep giving.
func byLines(old, new []byte) []Line {
	a, b := SplitLines(old), SplitLines(new)
	out, _ := diffGap(nil, a, b, time.Now().Add(DefaultBudget))
	return out
}

// TestTrimKeepsTheDiff compares DiffLines and CountLines with the diff of whole lines on every
// pair of small texts over the bytes 'a', 'b' and '\n' (the trim's cases are where the shared ends
// meet a line's end, a missing final newline, and one side a prefix of the other).
func TestTrimKeepsTheDiff(t *testing.T) {
	var texts []string
	var gen func(s string)
	gen = func(s string) {
		texts = append(texts, s)
		if len(s) == 4 {
			return
		}
		for _, c := range "ab\n" {
			gen(s + string(c))
		}
	}
	gen("")
	for _, o := range texts {
		for _, n := range texts {
			old, new := []byte(o), []byte(n)
			want := byLines(old, new)
			got, _ := DiffLines(old, new, 0)
			if len(want) == 0 {
				want = nil
			}
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("DiffLines(%q, %q) = %v, want %v", o, n, got, want)
			}
			wa, wd := countOps(want)
			if a, d, _ := CountLines(old, new, 0); a != wa || d != wd {
				t.Fatalf("CountLines(%q, %q) = +%d -%d, want +%d -%d", o, n, a, d, wa, wd)
			}
		}
	}
}

// TestStatCostFollowsTheChange: the diffstat of a large file changed in one line allocates what
// the changed line needs, not copies of the file or of its lines.
func TestStatCostFollowsTheChange(t *testing.T) {
	var b strings.Builder
	for i := range 200_000 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%50))
		b.WriteString("\n")
	}
	old := []byte(b.String())
	new := bytes.Replace(old, []byte("line xxxxxxxxxx\n"), []byte("line changed\n"), 1)
	p := FilePatch{OldPath: "big", NewPath: "big", Old: old, New: new}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := StatOf(p, Options{})
	runtime.ReadMemStats(&after)
	if e.Added != 1 || e.Deleted != 1 {
		t.Fatalf("stat = +%d -%d, want +1 -1", e.Added, e.Deleted)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("the stat of a %d-byte file changed in one line allocated %d bytes, want at most 64 KiB", len(old), n)
	}
}
