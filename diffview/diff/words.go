package diff

import (
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Segment is a piece of a line for intra-line highlighting: Changed marks
// the parts that differ from the paired line.
type Segment struct {
	Text    string
	Changed bool
}

// wordBudget bounds the character diff of one line pair.
const wordBudget = 50 * time.Millisecond

// WordDiff compares a removed line with the added line that replaces it and
// returns each split into changed and unchanged segments (go-diff with
// semantic cleanup, so highlights fall on whole words rather than scattered
// characters). The segments of each side concatenate to that side.
func WordDiff(old, new string) (oldSegs, newSegs []Segment) {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = wordBudget
	diffs := dmp.DiffCleanupSemantic(dmp.DiffMain(old, new, false))
	add := func(segs []Segment, text string, changed bool) []Segment {
		if text == "" {
			return segs
		}
		if n := len(segs); n > 0 && segs[n-1].Changed == changed {
			segs[n-1].Text += text
			return segs
		}
		return append(segs, Segment{text, changed})
	}
	for _, d := range diffs {
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			oldSegs = add(oldSegs, d.Text, false)
			newSegs = add(newSegs, d.Text, false)
		case diffmatchpatch.DiffDelete:
			oldSegs = add(oldSegs, d.Text, true)
		case diffmatchpatch.DiffInsert:
			newSegs = add(newSegs, d.Text, true)
		}
	}
	// go-diff works on runes and replaces invalid UTF-8; fall back to
	// whole-line segments so the bytes shown are the bytes in the file.
	if joined(oldSegs) != old || joined(newSegs) != new {
		return wholeLine(old), wholeLine(new)
	}
	return oldSegs, newSegs
}

// joined concatenates segments.
func joined(segs []Segment) string {
	n := 0
	for _, s := range segs {
		n += len(s.Text)
	}
	b := make([]byte, 0, n)
	for _, s := range segs {
		b = append(b, s.Text...)
	}
	return string(b)
}

// wholeLine is a line as one changed segment.
func wholeLine(s string) []Segment {
	if s == "" {
		return nil
	}
	return []Segment{{s, true}}
}

// Pairs returns, for a hunk's lines, the (removed, added) index pairs that
// word-level highlighting compares: within each block of "-" lines followed
// by "+" lines, the i-th removed line pairs with the i-th added line.
func Pairs(lines []Line) [][2]int {
	var out [][2]int
	i := 0
	for i < len(lines) {
		if lines[i].Op != Delete {
			i++
			continue
		}
		d0 := i
		for i < len(lines) && lines[i].Op == Delete {
			i++
		}
		a0 := i
		for i < len(lines) && lines[i].Op == Insert {
			i++
		}
		for k := 0; k < a0-d0 && k < i-a0; k++ {
			out = append(out, [2]int{d0 + k, a0 + k})
		}
	}
	return out
}
