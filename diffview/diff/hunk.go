package diff

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// DefaultContext is the number of unchanged lines shown around each change.
const DefaultContext = 3

// Options tune how a file's diff is cut into hunks.
type Options struct {
	// Context is the number of unchanged lines around each change; zero or
	// negative means DefaultContext (Group takes 0 for none).
	Context int
	// Budget bounds the time the line diff may take (DefaultBudget when zero).
	Budget time.Duration
}

// Hunk is a run of changed lines with the unchanged lines around them.
// OldStart and NewStart are 1-based line numbers of the hunk's first line in
// the old and new file (for an empty side, the line it would come before).
type Hunk struct {
	ID       string
	Path     string
	OldStart int
	OldCount int
	NewStart int
	NewCount int
	Lines    []Line
}

// FileDiff is the diff of one file as hunks.
type FileDiff struct {
	Path  string
	Hunks []Hunk
	// Exact is false when the line diff ran out of time and the hunks are
	// coarser than they could be (they still apply exactly).
	Exact bool
	// Added and Deleted count the inserted and removed lines.
	Added, Deleted int
}

// Compute diffs old and new contents of the file at path into hunks with
// stable ids.
func Compute(path string, old, new []byte, opts Options) FileDiff {
	ctx := opts.Context
	if ctx <= 0 {
		ctx = DefaultContext
	}
	lines, exact := DiffLines(old, new, opts.Budget)
	fd := FileDiff{Path: path, Exact: exact, Hunks: Group(path, lines, ctx)}
	fd.Added, fd.Deleted = countOps(lines)
	return fd
}

// countOps counts the inserted and deleted lines of a line diff.
func countOps(lines []Line) (added, deleted int) {
	for _, l := range lines {
		switch l.Op {
		case Insert:
			added++
		case Delete:
			deleted++
		}
	}
	return added, deleted
}

// Group cuts a whole-file line diff into hunks with ctx lines of context;
// changes closer than 2*ctx+1 unchanged lines share a hunk.
func Group(path string, lines []Line, ctx int) []Hunk {
	if ctx < 0 {
		ctx = 0
	}
	var hunks []Hunk
	oldNo, newNo := make([]int, len(lines)+1), make([]int, len(lines)+1)
	o, n := 1, 1
	for i, l := range lines {
		oldNo[i], newNo[i] = o, n
		if l.Op != Insert {
			o++
		}
		if l.Op != Delete {
			n++
		}
	}
	oldNo[len(lines)], newNo[len(lines)] = o, n
	i := 0
	for i < len(lines) {
		if lines[i].Op == Context {
			i++
			continue
		}
		first := i
		last := i
		for j := i + 1; j < len(lines); j++ {
			if lines[j].Op != Context {
				last = j
				continue
			}
			if j-last > 2*ctx {
				break
			}
		}
		from := max(first-ctx, 0)
		to := min(last+ctx+1, len(lines))
		hunks = append(hunks, makeHunk(path, lines[from:to], oldNo[from], newNo[from]))
		i = last + 1
	}
	return hunks
}

// makeHunk builds a hunk from its lines and the old/new line numbers of its
// first line, counting both sides and deriving its id.
func makeHunk(path string, lines []Line, oldStart, newStart int) Hunk {
	h := Hunk{Path: path, OldStart: oldStart, NewStart: newStart, Lines: lines}
	for _, l := range lines {
		if l.Op != Insert {
			h.OldCount++
		}
		if l.Op != Delete {
			h.NewCount++
		}
	}
	h.ID = hunkID(path, oldStart, lines)
	return h
}

// hunkID names a hunk by its file, where its first change sits in the old
// file, and the lines from its first to its last change. Context outside the
// changes is left out so the id does not depend on the context width or on
// neighbouring hunks, and decisions survive re-computation.
func hunkID(path string, oldStart int, lines []Line) string {
	first, last := -1, -1
	for i, l := range lines {
		if l.Op != Context {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	if first < 0 {
		return hex.EncodeToString(h.Sum(nil)[:8])
	}
	at := oldStart
	for _, l := range lines[:first] {
		if l.Op != Insert {
			at++
		}
	}
	var num [8]byte
	binary.BigEndian.PutUint64(num[:], uint64(at))
	h.Write(num[:])
	buf := make([]byte, 0, 256)
	for _, l := range lines[first : last+1] {
		buf = append(buf[:0], byte(l.Op))
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(l.Text)))
		buf = append(buf, l.Text...)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Header is the hunk's unified diff header, "@@ -a,b +c,d @@".
func (h Hunk) Header() string {
	return "@@ -" + rangeText(h.OldStart, h.OldCount) + " +" + rangeText(h.NewStart, h.NewCount) + " @@"
}

// rangeText writes one side of a hunk header the way diff and git do: the
// count is left out when it is 1, and an empty side names the line before.
func rangeText(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

// Text is the hunk as unified diff text: header, then one line per diff
// line, with "\ No newline at end of file" after a line that lacks one. It
// is the raw bytes, not escaped for display.
func (h Hunk) Text() string {
	var b strings.Builder
	b.WriteString(h.Header())
	b.WriteByte('\n')
	writeBody(&b, h.Lines)
	return b.String()
}

// writeBody writes diff lines as unified diff text.
func writeBody(b *strings.Builder, lines []Line) {
	for _, l := range lines {
		b.WriteByte(byte(l.Op))
		b.WriteString(l.Text)
		if !l.HasEOL() {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// Changes counts the hunk's removed and added lines.
func (h Hunk) Changes() (deleted, added int) {
	for _, l := range h.Lines {
		switch l.Op {
		case Delete:
			deleted++
		case Insert:
			added++
		}
	}
	return deleted, added
}

// Split cuts a hunk into smaller hunks, one per group of changes separated
// by unchanged lines, like `git add -p`'s `s`. Each piece keeps the
// unchanged lines on both sides of its group (pieces share the context
// between them). A hunk that cannot be split is returned alone.
func Split(h Hunk) []Hunk {
	type group struct{ first, last int }
	var groups []group
	for i, l := range h.Lines {
		if l.Op == Context {
			continue
		}
		if n := len(groups); n > 0 && groups[n-1].last == i-1 {
			groups[n-1].last = i
			continue
		}
		groups = append(groups, group{i, i})
	}
	if len(groups) < 2 {
		return []Hunk{h}
	}
	oldNo, newNo := h.OldStart, h.NewStart
	pieces := make([]Hunk, 0, len(groups))
	pos := 0
	for gi := range groups {
		from := 0
		if gi > 0 {
			from = groups[gi-1].last + 1
		}
		to := len(h.Lines)
		if gi+1 < len(groups) {
			to = groups[gi+1].first
		}
		for ; pos < from; pos++ {
			if h.Lines[pos].Op != Insert {
				oldNo++
			}
			if h.Lines[pos].Op != Delete {
				newNo++
			}
		}
		pieces = append(pieces, makeHunk(h.Path, h.Lines[from:to], oldNo, newNo))
	}
	return pieces
}

// SelectLines returns the hunk as if only the +/- lines at the given
// indexes into h.Lines were chosen: an unselected "-" line stays (becomes
// context) and an unselected "+" line is dropped. Indexes of context lines
// or out of range are an error.
func SelectLines(h Hunk, selected []int) (Hunk, error) {
	keep := make(map[int]bool, len(selected))
	for _, i := range selected {
		if i < 0 || i >= len(h.Lines) {
			return Hunk{}, fmt.Errorf("select lines of hunk %s: line %d out of range 0..%d", h.ID, i, len(h.Lines)-1)
		}
		if h.Lines[i].Op == Context {
			return Hunk{}, fmt.Errorf("select lines of hunk %s: line %d is unchanged context", h.ID, i)
		}
		keep[i] = true
	}
	lines := make([]Line, 0, len(h.Lines))
	for i, l := range h.Lines {
		switch {
		case l.Op == Context || keep[i]:
			lines = append(lines, l)
		case l.Op == Delete:
			lines = append(lines, Line{Context, l.Text})
		}
	}
	out := makeHunk(h.Path, lines, h.OldStart, h.NewStart)
	return out, nil
}
