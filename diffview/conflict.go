package diffview

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// HostChange is, for a file the host changed too since the session's pre-image (SPEC §13), what
// the review shows of the host's side: a line saying what happened and what to do, the host's
// change against the pre-image (read-only: it is already in the project), and, when the file's
// hunks are the merge on the host's current file (Merge3), which of them are conflicts.
type HostChange struct {
	Summary string
	// Diff is the host's change against the pre-image; nil where it cannot be shown (no
	// pre-image, binary).
	Diff []diff.Hunk
	// Conflicts are the file's hunks that change lines both sides changed, by hunk id.
	Conflicts map[string]diff.Conflict
}

// rowBase is a row of a conflict hunk that shows the base's lines (line >= 0) or the conflict's
// heading (line < 0); it belongs to its hunk, so deciding on it decides the conflict.
const rowBase = rowLine + 1

// maxHostRows bounds the rows that show the host's change.
const maxHostRows = 60

// conflictNotes are the file's note rows about a conflict: the one-line reason of a path apply
// refuses, or for a file the host changed too, what happened, what to do, and the host's change.
func (fv *fileView) conflictNotes() []string {
	f := fv.File
	if f.Host == nil {
		if f.Conflict != "" {
			return []string{"CONFLICT: " + f.Conflict + " — apply refuses this path"}
		}
		return nil
	}
	n := wrapSummary(f.Host.Summary, "")
	if len(f.Host.Diff) == 0 {
		return append(n, "(your change cannot be shown as lines: no pre-image of it, or binary)")
	}
	n = append(n, "your change since the pre-image (already in the project, not decided here):")
	rows := 0
	for _, h := range f.Host.Diff {
		for _, l := range append([]diff.Line{{Op: '@', Text: h.Header()}}, h.Lines...) {
			if rows == maxHostRows {
				return append(n, "  … more of your change: see it with git diff")
			}
			if l.Op == '@' {
				n = append(n, "  "+l.Text)
			} else {
				n = append(n, "  "+string(l.Op)+l.Content())
			}
			rows++
		}
	}
	return n
}

// wrapSummary wraps a note to whyWidth, the first row led by lead.
func wrapSummary(s, lead string) []string {
	lines := strings.Split(ansi.Wordwrap(diff.EscapeLine(s), whyWidth-len(lead), ""), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = lead + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", len(lead)) + lines[i]
		}
	}
	return lines
}

// conflictOf is the conflict of the hunk with the id, if it is one.
func (fv *fileView) conflictOf(id string) (diff.Conflict, bool) {
	if fv.Host == nil {
		return diff.Conflict{}, false
	}
	c, ok := fv.Host.Conflicts[id]
	return c, ok
}

// openConflicts counts the file's conflict hunks not decided yet.
func (fv *fileView) openConflicts() int {
	n := 0
	for _, h := range fv.hunks {
		if _, ok := fv.conflictOf(h.ID); ok && fv.Decisions[h.ID].Verdict == diff.Undecided {
			n++
		}
	}
	return n
}

// baseRows are the rows under the header of hunk hi when it is a conflict: a heading, then what
// the base held there.
func (fv *fileView) baseRows(hi int) []row {
	c, ok := fv.conflictOf(fv.hunks[hi].ID)
	if !ok {
		return nil
	}
	out := []row{{kind: rowBase, hunk: int32(hi), line: -1, right: -1, partner: -1,
		note: "CONFLICT: you (−) and the agent (+) both changed these lines; the base had:"}}
	if len(c.Base) == 0 {
		out = append(out, row{kind: rowBase, hunk: int32(hi), line: 0, right: -1, partner: -1, note: "  (nothing: you both added lines here)"})
	}
	for i, l := range c.Base {
		if i == maxHostRows {
			out = append(out, row{kind: rowBase, hunk: int32(hi), line: int32(i), right: -1, partner: -1,
				note: "  … " + english.Count(len(c.Base)-i, "more line")})
			break
		}
		out = append(out, row{kind: rowBase, hunk: int32(hi), line: int32(i), right: -1, partner: -1,
			oldNo: int32(c.BaseStart + i), note: "= " + strings.TrimSuffix(l, "\n")})
	}
	return out
}

// baseRow draws a row of baseRows.
func (c *renderCtx) baseRow(r row) string {
	st := c.m.styles
	if r.line < 0 {
		return "  " + st.BadgeAlert.Render(fit(diff.EscapeLine(r.note), c.width-2))
	}
	return "  " + st.Note.Render(fit(diff.EscapeLine(r.note), c.width-2))
}

// conflictState is the decision shown in a conflict hunk's header: which side it takes, or the
// keys that resolve it; state for any other hunk.
func (c *renderCtx) conflictState(h diff.Hunk, d diff.Decision, state string) string {
	if _, ok := c.f.conflictOf(h.ID); !ok {
		return state
	}
	st := c.m.styles
	switch {
	case d.Verdict == diff.Accepted && (d.Edit != "" || len(d.Lines) > 0):
		return st.HunkAccepted.Render("✓ your edit (conflict resolved)")
	case d.Verdict == diff.Accepted:
		return st.HunkAccepted.Render("✓ the agent's lines (conflict resolved)")
	case d.Verdict == diff.Rejected:
		return st.HunkRejected.Render("✗ yours kept (conflict resolved)")
	}
	return st.BadgeAlert.Render("! CONFLICT: a agent's · r yours · e edit")
}
