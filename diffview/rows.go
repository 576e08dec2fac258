package diffview

import (
	"fmt"
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// rowKind is what one screen row of the diff pane shows.
type rowKind uint8

const (
	rowNote rowKind = iota // a line about the file: mode, rename, badge, binary
	rowHunk                // a hunk header with its decision
	rowLine                // a diff line
)

// row is one row of the diff pane in unified view. For side-by-side view,
// left and right index lines of the hunk (-1 for none).
type row struct {
	kind         rowKind
	hunk         int32
	line         int32 // unified: the line; side-by-side: the left line
	right        int32 // side-by-side: the right line
	partner      int32 // unified: the paired line for word highlights, -1 for none
	oldNo, newNo int32
	note         string
}

// fileView is a file of the review with its current hunks (after splits)
// and the rows that show them, built when the file is first shown.
type fileView struct {
	File
	hunks    []diff.Hunk
	expanded bool // an ignored file's hunks are shown
	// step is how the file shows while the view is narrowed to one step of the history (nil: all
	// of it).
	step     *stepFile
	unified  []row
	sbs      []row
	numWidth int
	selected map[string]map[int]bool // hunk id → selected line indexes
	cursor   int
	top      int
	left     int // the first cell of each line's text on screen (scrolled right)
	lex      chroma.Lexer
	lexerSet bool
	// cache holds rendered line contents (they do not depend on the
	// cursor), so a keypress re-renders only gutters.
	cache    map[contentKey]string
	cacheGen int

	acc, rej, und int
	countsValid   bool
}

// contentKey names a rendered line content: the line, its partner for
// word highlights, the width it was cut to and the cell it starts at.
type contentKey struct {
	hunk, line, partner int32
	width, left         int
}

// maxCache bounds the rendered-content cache of one file.
const maxCache = 8192

// newFileView prepares a file for display.
func newFileView(f File) *fileView {
	if f.Decisions == nil {
		f.Decisions = map[string]diff.Decision{}
	}
	fv := &fileView{File: f, selected: map[string]map[int]bool{}}
	// Hunks that were split when decided come back split.
	fv.hunks, _ = diff.Resolve(Items(f), f.Decisions)
	return fv
}

// invalidate drops the built rows after the hunks changed.
func (fv *fileView) invalidate() {
	fv.unified, fv.sbs, fv.cache, fv.countsValid = nil, nil, nil, false
}

// rows returns the rows for the view mode, building them when needed.
func (fv *fileView) rows(sideBySide bool) []row {
	if fv.unified == nil {
		fv.build()
	}
	if sideBySide {
		if fv.sbs == nil {
			fv.sbs = buildSideBySide(fv.unified, fv.hunks)
		}
		return fv.sbs
	}
	return fv.unified
}

// notes are the rows about the file above its hunks.
func (fv *fileView) notes() []string {
	f := fv.File
	var n []string
	switch {
	case f.Status == StatusRenamed:
		n = append(n, fmt.Sprintf("renamed from %s", diff.Escape(f.OldPath)))
	case f.Status == StatusAdded:
		n = append(n, fmt.Sprintf("new file, mode %06o", f.NewMode))
	case f.Status == StatusDeleted:
		n = append(n, fmt.Sprintf("deleted file, mode %06o", f.OldMode))
	}
	if f.OldMode != 0 && f.NewMode != 0 && f.OldMode != f.NewMode {
		n = append(n, fmt.Sprintf("mode %06o → %06o", f.OldMode, f.NewMode))
	}
	if f.Symlink() {
		n = append(n, "symlink: the lines below are its target")
	}
	if f.Binary {
		n = append(n, fmt.Sprintf("binary file: %d → %d bytes (accept or reject it whole)", f.OldSize, f.NewSize))
	}
	if f.TooLarge {
		n = append(n, noteRows(fmt.Sprintf("too large to show here (%s): accept or reject it as a whole", f.sizes()))...)
		if f.ShowCommand != "" {
			n = append(n, noteRows("see its diff with: "+diff.EscapeLine(f.ShowCommand))...)
		}
	}
	if f.Special != "" {
		n = append(n, fmt.Sprintf("special file (%s): listed, never applied", f.Special))
	}
	if f.Note != "" {
		n = append(n, diff.EscapeLine(f.Note))
	}
	if f.Protected && f.ProtectedWhy != "" {
		n = append(n, "PROTECTED path: not applied without --allow-protected")
		n = append(n, whyNotes(f.ProtectedWhy)...)
	} else if f.Protected {
		n = append(n, "PROTECTED path: an agent must not change it silently; not applied without --allow-protected")
	}
	n = append(n, fv.conflictNotes()...)
	for _, fnd := range f.Findings {
		n = append(n, "FINDING: "+fnd)
	}
	if f.Ignored {
		if fv.expanded {
			n = append(n, "ignored path (.gitignore of the base): not applied by --all")
		} else {
			n = append(n, fmt.Sprintf("ignored path (.gitignore of the base): %s hidden, enter shows them", english.Count(len(fv.hunks), "hunk")))
		}
	}
	if !f.Diff.Exact && len(f.Diff.Hunks) > 0 {
		n = append(n, "large change: the diff ran out of time and shows coarser hunks (still exact to apply)")
	}
	n = append(n, fv.stepNote()...)
	return n
}

// whyWidth is where the reason of a protected path is wrapped: notes are one row each, cut at the
// pane's width, and at 80 columns the diff pane shows about 57 cells.
const whyWidth = 56

// whyNotes is the reason a path is protected as note rows: "why: " and the reason, wrapped.
func whyNotes(why string) []string {
	const lead = "why: "
	lines := strings.Split(ansi.Wordwrap(why, whyWidth-len(lead), ""), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = lead + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", len(lead)) + lines[i]
		}
	}
	return lines
}

// noteRows is a note as rows that fit the diff pane at 80 columns (see
// whyWidth), the rows after the first indented; a long word (a path) is
// broken rather than cut.
func noteRows(note string) []string {
	lines := strings.Split(ansi.Wrap(note, whyWidth, ""), "\n")
	if len(lines) > 1 {
		rest := strings.Split(ansi.Wrap(strings.Join(lines[1:], " "), whyWidth-2, ""), "\n")
		for i := range rest {
			rest[i] = "  " + rest[i]
		}
		lines = append(lines[:1], rest...)
	}
	return lines
}

// build lays out the unified rows of the file.
func (fv *fileView) build() {
	n := 8
	for _, h := range fv.hunks {
		n += len(h.Lines) + 1
	}
	uni := make([]row, 0, n)
	for _, n := range fv.notes() {
		uni = append(uni, row{kind: rowNote, note: n})
	}
	maxNo := 0
	if !fv.Ignored || fv.expanded {
		for hi, h := range fv.hunks {
			if !fv.step.shows(h) {
				continue
			}
			uni = append(uni, row{kind: rowHunk, hunk: int32(hi)})
			uni = append(uni, fv.baseRows(hi)...)
			if h.Lines == nil {
				continue
			}
			partner := make([]int32, len(h.Lines))
			for i := range partner {
				partner[i] = -1
			}
			for _, p := range diff.Pairs(h.Lines) {
				partner[p[0]], partner[p[1]] = int32(p[1]), int32(p[0])
			}
			o, n := h.OldStart, h.NewStart
			maxNo = max(maxNo, h.OldStart+h.OldCount, h.NewStart+h.NewCount)
			for li, l := range h.Lines {
				r := row{kind: rowLine, hunk: int32(hi), line: int32(li), right: -1, partner: partner[li]}
				switch l.Op {
				case diff.Context:
					r.oldNo, r.newNo = int32(o), int32(n)
					o++
					n++
				case diff.Delete:
					r.oldNo = int32(o)
					o++
				case diff.Insert:
					r.newNo = int32(n)
					n++
				}
				uni = append(uni, r)
			}
		}
	}
	fv.unified, fv.sbs = uni, nil
	fv.numWidth = len(fmt.Sprint(maxNo))
}

// buildSideBySide turns unified rows into side-by-side rows, hunk by hunk.
func buildSideBySide(uni []row, hunks []diff.Hunk) []row {
	out := make([]row, 0, len(uni))
	i := 0
	for i < len(uni) {
		if uni[i].kind != rowLine {
			out = append(out, uni[i])
			i++
			continue
		}
		j := i
		for j < len(uni) && uni[j].kind == rowLine && uni[j].hunk == uni[i].hunk {
			j++
		}
		out = append(out, sideBySide(uni[i:j], hunks[uni[i].hunk])...)
		i = j
	}
	return out
}

// sideBySide pairs a hunk's unified rows into two columns: context on both
// sides, each block of removed lines beside the added lines that follow it.
func sideBySide(lines []row, h diff.Hunk) []row {
	var out []row
	i := 0
	for i < len(lines) {
		r := lines[i]
		if h.Lines[r.line].Op == diff.Context {
			r.right = r.line
			out = append(out, r)
			i++
			continue
		}
		var dels, adds []row
		for i < len(lines) && h.Lines[lines[i].line].Op == diff.Delete {
			dels = append(dels, lines[i])
			i++
		}
		for i < len(lines) && h.Lines[lines[i].line].Op == diff.Insert {
			adds = append(adds, lines[i])
			i++
		}
		for k := 0; k < max(len(dels), len(adds)); k++ {
			s := row{kind: rowLine, hunk: r.hunk, line: -1, right: -1, partner: -1}
			if k < len(dels) {
				s.line, s.oldNo = dels[k].line, dels[k].oldNo
			}
			if k < len(adds) {
				s.right, s.newNo = adds[k].line, adds[k].newNo
			}
			out = append(out, s)
		}
	}
	return out
}

// decision is the saved decision of the file's hunk hi.
func (fv *fileView) decision(hi int) diff.Decision {
	if hi < 0 || hi >= len(fv.hunks) {
		return diff.Decision{}
	}
	return fv.Decisions[fv.hunks[hi].ID]
}

// counts tallies the file's current hunks by verdict, cached until a
// decision or a split changes them.
func (fv *fileView) counts() (acc, rej, und int) {
	if !fv.countsValid {
		fv.acc, fv.rej, fv.und = counts(fv.hunks, fv.Decisions)
		fv.countsValid = true
	}
	return fv.acc, fv.rej, fv.und
}

// hunkRow is the row index of hunk hi's header in rows.
func hunkRow(rows []row, hi int) int {
	for i, r := range rows {
		if r.kind == rowHunk && int(r.hunk) == hi {
			return i
		}
	}
	return -1
}

// rowHunkIndex is the hunk a row belongs to, or -1 for a note row.
func rowHunkIndex(rows []row, i int) int {
	if i < 0 || i >= len(rows) || rows[i].kind == rowNote {
		return -1
	}
	return int(rows[i].hunk)
}

// lineText is what search looks at for a row.
func (fv *fileView) lineText(r row) string {
	switch r.kind {
	case rowNote, rowBase:
		return r.note
	case rowLine:
		h := fv.hunks[r.hunk]
		if r.right < 0 || r.right == r.line {
			return h.Lines[r.line].Content()
		}
		if r.line < 0 {
			return h.Lines[r.right].Content()
		}
		var b strings.Builder
		if r.line >= 0 {
			b.WriteString(h.Lines[r.line].Content())
		}
		if r.right >= 0 && r.right != r.line {
			b.WriteString("\x00")
			b.WriteString(h.Lines[r.right].Content())
		}
		return b.String()
	}
	return ""
}
