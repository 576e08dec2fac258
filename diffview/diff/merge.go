package diff

import (
	"strings"

	"github.com/epiclabs-io/diff3"
)

// Merged is the three-way merge of a text file that the host and the agent both changed since a
// common base (SPEC §13), as hunks on the host's current content: applying every hunk to the
// host's file gives the merge with each conflict taken from the agent. Hunks where both sides
// changed the same lines, or lines with no unchanged line between them (as git counts a
// conflict), are conflicts: their - lines are the host's, their + lines the agent's, and
// Conflicts holds the base's lines there. Accepting a conflict takes the agent's lines,
// rejecting it keeps the host's, and an edit writes what the developer wrote.
type Merged struct {
	Diff FileDiff
	// Conflicts are the conflicting hunks of Diff, by hunk id.
	Conflicts map[string]Conflict
}

// Conflict is what the base held where both sides changed a file.
type Conflict struct {
	// Base are the base's lines there, each with its "\n" (none when both sides inserted lines
	// at the same place).
	Base []string
	// BaseStart is the 1-based line number of the first of them in the base (for an empty Base,
	// the line they would come before).
	BaseStart int
}

// Clean reports whether the merge has no conflict.
func (m Merged) Clean() bool { return len(m.Conflicts) == 0 }

// Merge3 merges the host's and the agent's changes of the file at path since base, line by line,
// with git merge-file's rules: changes separated by at least one unchanged line merge; changes
// that overlap or touch conflict, unless both sides made the same change; lines both sides
// added or kept alike at the edges of a conflict are left out of it (git's "zealous" level).
// The three-way merge itself is github.com/epiclabs-io/diff3 (Myers line diffs); the lines
// between conflicts are diffed against the host with DiffLines within opts.Budget.
func Merge3(path string, base, host, agent []byte, opts Options) Merged {
	ctx := opts.Context
	if ctx <= 0 {
		ctx = DefaultContext
	}
	hl, bl, al := SplitLines(host), SplitLines(base), SplitLines(agent)
	blocks := diff3.Diff3MergeWithOptions(hl, bl, al, diff3.MergeOptions{
		Algorithm: diff3.DiffAlgorithmMyers, ExcludeFalseConflicts: true})
	var (
		lines  []Line
		spans  [][2]int // the conflicts' changed lines, as indexes into lines
		bases  []Conflict
		merged []string // the merge of the host lines from hpos on, up to the next conflict
		hpos   int
		exact  = true
	)
	flush := func(to int) {
		ls, ok := DiffLines([]byte(strings.Join(hl[hpos:to], "")), []byte(strings.Join(merged, "")), opts.Budget)
		lines = append(lines, ls...)
		exact = exact && ok
		hpos, merged = to, nil
	}
	for _, blk := range blocks {
		c := blk.Conflict
		if c == nil {
			merged = append(merged, blk.Ok...)
			continue
		}
		h, a := c.A, c.B
		pre := 0
		for pre < len(h) && pre < len(a) && h[pre] == a[pre] {
			pre++
		}
		suf := 0
		for suf < len(h)-pre && suf < len(a)-pre && h[len(h)-1-suf] == a[len(a)-1-suf] {
			suf++
		}
		merged = append(merged, h[:pre]...)
		flush(c.AIndex + pre)
		start := len(lines)
		for _, l := range h[pre : len(h)-suf] {
			lines = append(lines, Line{Delete, l})
		}
		for _, l := range a[pre : len(a)-suf] {
			lines = append(lines, Line{Insert, l})
		}
		spans = append(spans, [2]int{start, len(lines)})
		bases = append(bases, Conflict{Base: c.O, BaseStart: c.OIndex + 1})
		hpos = c.AIndex + len(h) - suf
		merged = append(merged, h[len(h)-suf:]...)
	}
	flush(len(hl))

	m := Merged{Diff: FileDiff{Path: path, Exact: exact}, Conflicts: map[string]Conflict{}}
	m.Diff.Added, m.Diff.Deleted = countOps(lines)
	// Where each line sits: its old and new line numbers identify it (their sum grows by one a line).
	at := make(map[[2]int]int, len(lines))
	o, n := 1, 1
	for i, l := range lines {
		at[[2]int{o, n}] = i
		if l.Op != Insert {
			o++
		}
		if l.Op != Delete {
			n++
		}
	}
	// conflictsIn lists the conflicts among the changed lines of h, and whether it changes any
	// line outside them.
	conflictsIn := func(h Hunk) (in []int, other bool) {
		from := at[[2]int{h.OldStart, h.NewStart}]
		for i, l := range h.Lines {
			if l.Op == Context {
				continue
			}
			k := from + i
			found := false
			for ci, s := range spans {
				if k >= s[0] && k < s[1] {
					found = true
					if len(in) == 0 || in[len(in)-1] != ci {
						in = append(in, ci)
					}
				}
			}
			other = other || !found
		}
		return in, other
	}
	for _, h := range Group(path, lines, ctx) {
		pieces := []Hunk{h}
		if in, other := conflictsIn(h); len(in) > 1 || (len(in) == 1 && other) {
			// A conflict never shares a hunk with another change: it is decided alone.
			pieces = Split(h)
		}
		for _, p := range pieces {
			in, _ := conflictsIn(p)
			if len(in) > 0 {
				c := bases[in[0]]
				for _, ci := range in[1:] {
					c.Base = append(append([]string(nil), c.Base...), bases[ci].Base...)
				}
				m.Conflicts[p.ID] = c
			}
			m.Diff.Hunks = append(m.Diff.Hunks, p)
		}
	}
	return m
}
