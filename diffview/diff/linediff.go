package diff

import (
	"bytes"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Op says how a line takes part in a diff: kept, removed or added.
type Op byte

// The three kinds of diff line, spelled as in unified diff text.
const (
	Context Op = ' '
	Delete  Op = '-'
	Insert  Op = '+'
)

// Line is one line of a diff: its op and its raw bytes, including the "\n"
// that ends it when there is one (so "\r\n" and a missing final newline are
// kept exactly).
type Line struct {
	Op   Op
	Text string
}

// Content is the line without its final "\n".
func (l Line) Content() string { return strings.TrimSuffix(l.Text, "\n") }

// HasEOL reports whether the line ends with "\n"; only the last line of a
// file can lack it ("\ No newline at end of file").
func (l Line) HasEOL() bool { return strings.HasSuffix(l.Text, "\n") }

// DefaultBudget is the time the line diff may spend before it settles for a
// coarser but still correct result.
const DefaultBudget = time.Second

// maxUniqueLines bounds go-diff's line-to-rune encoding, which runs out of
// valid code points a little above a million distinct lines.
const maxUniqueLines = 1_000_000

// SplitLines cuts b into lines, each keeping its "\n"; the last line lacks it
// when b does not end with a newline. An empty b has no lines.
func SplitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	n := bytes.Count(b, []byte{'\n'})
	if b[len(b)-1] != '\n' {
		n++
	}
	return splitString(string(b), n)
}

// splitString cuts s into about n lines, each keeping its "\n".
func splitString(s string, n int) []string {
	lines := make([]string, 0, n)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// DiffLines computes the line diff of old and new: a sequence of Context,
// Delete and Insert lines whose Context+Delete lines concatenate to old and
// whose Context+Insert lines concatenate to new. It uses go-diff's line mode
// within budget (DefaultBudget when zero or less); exact is false when the
// budget ran out or the input was too large, in which case the result is
// still correct but may replace more lines than necessary (the common
// prefix and suffix are always kept).
func DiffLines(old, new []byte, budget time.Duration) (lines []Line, exact bool) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	deadline := time.Now().Add(budget)
	// The lines both sides share at their ends are found in the bytes, before anything is split
	// (the trim diffGap does on lines): a large file changed in one line costs a comparison of its
	// bytes, and of new only what differs is split.
	pre, suf := commonLines(old, new)
	all := SplitLines(old)
	npre, nsuf := lineCount(old[:pre]), lineCount(old[len(old)-suf:])
	b := SplitLines(new[pre : len(new)-suf])
	out := make([]Line, 0, len(all)+len(b))
	for _, s := range all[:npre] {
		out = append(out, Line{Context, s})
	}
	out, exact = diffMiddle(out, all[npre:len(all)-nsuf], b, deadline)
	for _, s := range all[len(all)-nsuf:] {
		out = append(out, Line{Context, s})
	}
	return out, exact
}

// CountLines counts the lines DiffLines would insert and delete, splitting only what lies between
// the lines old and new share at both ends.
func CountLines(old, new []byte, budget time.Duration) (added, deleted int, exact bool) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	pre, suf := commonLines(old, new)
	a, b := SplitLines(old[pre:len(old)-suf]), SplitLines(new[pre:len(new)-suf])
	lines, exact := diffMiddle(make([]Line, 0, len(a)+len(b)), a, b, time.Now().Add(budget))
	added, deleted = countOps(lines)
	return added, deleted, exact
}

// commonLines returns the lengths in bytes of the longest run of whole lines that old and new
// share at their start, and of the longest run of whole lines after it that they share at their
// end.
func commonLines(old, new []byte) (pre, suf int) {
	n := min(len(old), len(new))
	for pre < n && old[pre] == new[pre] {
		pre++
	}
	if pre < len(old) || pre < len(new) {
		// Within a line that differs: back to its start (what is before it is the same on
		// both sides).
		pre = bytes.LastIndexByte(old[:pre], '\n') + 1
	}
	n = min(len(old), len(new)) - pre
	for suf < n && old[len(old)-1-suf] == new[len(new)-1-suf] {
		suf++
	}
	// The shared end must start a line on both sides, else it starts after its first "\n".
	lineStart := func(b []byte, i int) bool { return i == pre || b[i-1] == '\n' }
	if suf > 0 && !(lineStart(old, len(old)-suf) && lineStart(new, len(new)-suf)) {
		if i := bytes.IndexByte(old[len(old)-suf:], '\n'); i >= 0 {
			suf -= i + 1
		} else {
			suf = 0
		}
	}
	return pre, suf
}

// lineCount is the number of lines SplitLines cuts b into.
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// anchorThreshold is the size (lines of both sides) above which the diff
// is first cut at anchors before go-diff sees it.
const anchorThreshold = 2000

// diffMiddle diffs the part of the files between their common prefix and
// suffix. Large inputs are first cut at anchors, lines that occur exactly
// once on each side, in order (as patience diff does), so that go-diff only
// sees the small gaps between them; a correct diff results whatever the
// anchors, and go-diff's cost grows with the square of what it sees.
func diffMiddle(out []Line, a, b []string, deadline time.Time) ([]Line, bool) {
	if len(a) == 0 || len(b) == 0 || (len(a)*len(b) <= 64 && disjoint(a, b)) {
		// With no line in common every diff is "remove a, add b"; this is
		// most gaps between anchors, and go-diff's setup would dominate.
		return replaceAll(out, a, b), true
	}
	if len(a)+len(b) <= anchorThreshold {
		return goDiff(out, a, b, deadline)
	}
	anchors := uniqueAnchors(a, b)
	if len(anchors) == 0 {
		return goDiff(out, a, b, deadline)
	}
	exact := true
	pa, pb := 0, 0
	for _, an := range anchors {
		var ok bool
		out, ok = diffGap(out, a[pa:an[0]], b[pb:an[1]], deadline)
		exact = exact && ok
		out = append(out, Line{Context, a[an[0]]})
		pa, pb = an[0]+1, an[1]+1
	}
	out, ok := diffGap(out, a[pa:], b[pb:], deadline)
	return out, exact && ok
}

// disjoint reports whether a and b share no line.
func disjoint(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return false
			}
		}
	}
	return true
}

// diffGap diffs the lines between two anchors, trimming what they share at
// both ends first.
func diffGap(out []Line, a, b []string, deadline time.Time) ([]Line, bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	for _, s := range a[:pre] {
		out = append(out, Line{Context, s})
	}
	out, exact := diffMiddle(out, a[pre:len(a)-suf], b[pre:len(b)-suf], deadline)
	for _, s := range a[len(a)-suf:] {
		out = append(out, Line{Context, s})
	}
	return out, exact
}

// uniqueAnchors returns index pairs (i in a, j in b) of lines that occur
// exactly once in a and once in b, keeping the longest run increasing on
// both sides.
func uniqueAnchors(a, b []string) [][2]int {
	type seen struct{ na, nb, ib int32 }
	idx := make(map[string]int32, len(a))
	var counts []seen
	for _, s := range a {
		k, ok := idx[s]
		if !ok {
			k = int32(len(counts))
			idx[s] = k
			counts = append(counts, seen{})
		}
		counts[k].na++
	}
	for j, s := range b {
		if k, ok := idx[s]; ok {
			counts[k].nb++
			counts[k].ib = int32(j)
		}
	}
	var pairs [][2]int
	for i, s := range a {
		if e := counts[idx[s]]; e.na == 1 && e.nb == 1 {
			pairs = append(pairs, [2]int{i, int(e.ib)})
		}
	}
	// Longest increasing subsequence of the b indexes (patience sorting).
	tails := []int{}
	prev := make([]int, len(pairs))
	for k, p := range pairs {
		lo, hi := 0, len(tails)
		for lo < hi {
			mid := (lo + hi) / 2
			if pairs[tails[mid]][1] < p[1] {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo > 0 {
			prev[k] = tails[lo-1]
		} else {
			prev[k] = -1
		}
		if lo == len(tails) {
			tails = append(tails, k)
		} else {
			tails[lo] = k
		}
	}
	if len(tails) == 0 {
		return nil
	}
	out := make([][2]int, len(tails))
	for k, i := tails[len(tails)-1], len(tails)-1; k >= 0; k, i = prev[k], i-1 {
		out[i] = pairs[k]
	}
	return out
}

// goDiff runs go-diff's line mode (DiffLinesToChars → DiffMain →
// DiffCharsToLines) until the deadline, falling back to "delete all, insert
// all" when it cannot be used or its answer does not add up.
func goDiff(out []Line, a, b []string, deadline time.Time) ([]Line, bool) {
	left := time.Until(deadline)
	if left <= 0 {
		return replaceAll(out, a, b), false
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = left
	ta, tb := strings.Join(a, ""), strings.Join(b, "")
	ca, cb, lineArray := dmp.DiffLinesToChars(ta, tb)
	if len(lineArray) > maxUniqueLines {
		return replaceAll(out, a, b), false
	}
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lineArray)
	start := len(out)
	na, nb := 0, 0
	for _, d := range diffs {
		var op Op
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			op = Context
		case diffmatchpatch.DiffDelete:
			op = Delete
		default:
			op = Insert
		}
		for _, s := range splitString(d.Text, len(d.Text)/32+1) {
			out = append(out, Line{op, s})
			if op != Insert {
				if na >= len(a) || a[na] != s {
					return replaceAll(out[:start], a, b), false
				}
				na++
			}
			if op != Delete {
				if nb >= len(b) || b[nb] != s {
					return replaceAll(out[:start], a, b), false
				}
				nb++
			}
		}
	}
	if na != len(a) || nb != len(b) {
		return replaceAll(out[:start], a, b), false
	}
	return out, time.Now().Before(deadline)
}

// replaceAll is the coarse diff: every line of a removed, every line of b added.
func replaceAll(out []Line, a, b []string) []Line {
	for _, s := range a {
		out = append(out, Line{Delete, s})
	}
	for _, s := range b {
		out = append(out, Line{Insert, s})
	}
	return out
}
