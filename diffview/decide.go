package diffview

import (
	"fmt"
	"sort"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// Decisions: accepting and rejecting hunks, files and lines, splitting,
// undoing; each is queued for saving (save.go).

// record sets decisions, queues them for saving and pushes one undo step.
func (m *Model) record(f *fileView, ds map[string]diff.Decision) {
	if len(ds) == 0 {
		return
	}
	fi := m.indexOf(f)
	var step []undoEntry
	ids := make([]string, 0, len(ds))
	for id := range ds {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		d := ds[id]
		step = append(step, undoEntry{file: fi, id: id, prev: f.Decisions[id]})
		m.set(f, id, d)
	}
	m.undo = append(m.undo, step)
}

// set changes one decision in memory and queues it for saving.
func (m *Model) set(f *fileView, id string, d diff.Decision) {
	f.countsValid = false
	if d.Verdict == diff.Undecided {
		delete(f.Decisions, id)
	} else {
		f.Decisions[id] = d
	}
	m.saves = append(m.saves, save{path: f.Path, id: id, d: d})
}

// indexOf finds a file's index.
func (m *Model) indexOf(f *fileView) int {
	for i, g := range m.files {
		if g == f {
			return i
		}
	}
	return -1
}

// decideHunk accepts or rejects the hunk under the cursor, or only its
// selected lines when some are selected.
func (m *Model) decideHunk(v diff.Verdict) {
	f, hi := m.cursorHunk()
	if hi < 0 {
		return
	}
	h := f.hunks[hi]
	d := diff.Decision{Verdict: v}
	if sel := f.selected[h.ID]; len(sel) > 0 {
		// Accepting selected lines takes just them; rejecting them takes
		// every other changed line.
		var lines []int
		changed := 0
		for i, l := range h.Lines {
			if l.Op == diff.Context {
				continue
			}
			changed++
			if sel[i] == (v == diff.Accepted) {
				lines = append(lines, i)
			}
		}
		d = diff.Decision{Verdict: diff.Accepted, Lines: lines}
		if len(lines) == 0 {
			d = diff.Decision{Verdict: diff.Rejected}
		}
		delete(f.selected, h.ID)
		n, rest := len(sel), english.Count(changed-len(sel), "other changed line")
		if v == diff.Accepted {
			m.setStatus(fmt.Sprintf("accepted only the %s of the hunk; its %s left out", english.Count(n, "selected line"), rest))
		} else {
			m.setStatus(fmt.Sprintf("rejected the %s of the hunk; its %s accepted", english.Count(n, "selected line"), rest))
		}
	}
	m.record(f, map[string]diff.Decision{h.ID: d})
	m.advance(f, hi)
}

// lineMode reports whether the cursor is in a hunk with selected lines:
// then j/k move among its changed lines, and a/r take only the selected.
func (m *Model) lineMode() (*fileView, int, bool) {
	if m.sideBySide || m.focus != diffPane {
		return nil, -1, false
	}
	f, hi := m.cursorHunk()
	if hi < 0 || len(f.selected[f.hunks[hi].ID]) == 0 {
		return nil, -1, false
	}
	return f, hi, true
}

// inLineMode is lineMode's answer alone.
func (m *Model) inLineMode() bool {
	_, _, ok := m.lineMode()
	return ok
}

// moveLine moves the cursor to the next (dir 1) or previous changed line of
// its hunk, in line mode; at the hunk's edge it stays and says so.
func (m *Model) moveLine(f *fileView, hi, dir int) {
	rows := f.rows(false)
	for i := f.cursor + dir; i >= 0 && i < len(rows); i += dir {
		r := rows[i]
		if r.kind != rowLine || int(r.hunk) != hi {
			break
		}
		if f.hunks[hi].Lines[r.line].Op != diff.Context {
			f.cursor = i
			m.scrollTo(f)
			return
		}
	}
	edge := "last"
	if dir < 0 {
		edge = "first"
	}
	m.setStatus(fmt.Sprintf("the %s changed line of the hunk · %s", edge, m.lineHint(f, hi)))
}

// lineHint says, in line mode, what is selected and what the keys do.
func (m *Model) lineHint(f *fileView, hi int) string {
	h := f.hunks[hi]
	changed := 0
	for _, l := range h.Lines {
		if l.Op != diff.Context {
			changed++
		}
	}
	k := m.keys
	return fmt.Sprintf("%d of %s selected: %s accepts only them, %s rejects only them · %s toggles · %s move · esc clears",
		len(f.selected[h.ID]), english.Count(changed, "changed line"), k.Accept.Help().Key, k.Reject.Help().Key, k.SelectLine.Help().Key, "j/k")
}

// clearLines drops the selection of the hunk under the cursor.
func (m *Model) clearLines(f *fileView, hi int) {
	delete(f.selected, f.hunks[hi].ID)
	m.setStatus("selection cleared: a and r take the whole hunk again")
}

// advance moves the cursor to the next hunk after a decision.
func (m *Model) advance(f *fileView, hi int) {
	if next := f.nextShownHunk(hi); next >= 0 {
		f.cursor = max(0, hunkRow(f.rows(m.sideBySide), next))
		m.scrollTo(f)
	}
}

// decideFile accepts or rejects every hunk of the selected file.
func (m *Model) decideFile(v diff.Verdict) {
	f := m.file()
	if f == nil {
		return
	}
	ds := map[string]diff.Decision{}
	for _, h := range f.hunks {
		ds[h.ID] = diff.Decision{Verdict: v}
		delete(f.selected, h.ID)
	}
	m.record(f, ds)
}

// acceptAll accepts every undecided hunk of every file that is not
// ignored, protected, in conflict, special or flagged by the audit (those
// are decided one by one).
func (m *Model) acceptAll() {
	var step []undoEntry
	n := 0
	for fi, f := range m.files {
		if f.Ignored || f.Protected || f.Conflict != "" || f.Special != "" || len(f.Findings) > 0 {
			continue
		}
		for _, h := range f.hunks {
			if _, conflict := f.conflictOf(h.ID); f.Decisions[h.ID].Verdict != diff.Undecided || conflict {
				continue
			}
			step = append(step, undoEntry{file: fi, id: h.ID, prev: f.Decisions[h.ID]})
			m.set(f, h.ID, diff.Decision{Verdict: diff.Accepted})
			n++
		}
	}
	if n > 0 {
		m.undo = append(m.undo, step)
	}
	m.setStatus(fmt.Sprintf("accepted %s (ignored, protected, conflicting and flagged files left for you)", english.Count(n, "undecided hunk")))
}

// undoLast restores the decisions changed by the last step.
func (m *Model) undoLast() {
	if len(m.undo) == 0 {
		m.setStatus("nothing to undo")
		return
	}
	step := m.undo[len(m.undo)-1]
	m.undo = m.undo[:len(m.undo)-1]
	for i := len(step) - 1; i >= 0; i-- {
		e := step[i]
		if e.file < 0 || e.file >= len(m.files) {
			continue
		}
		f := m.files[e.file]
		m.set(f, e.id, e.prev)
		if !hasHunk(f.hunks, e.id) {
			// The decision of a hunk split since: show it whole again.
			f.hunks, _ = diff.Resolve(Items(f.File), f.Decisions)
			f.invalidate()
		}
	}
	if e := step[0]; e.file >= 0 && e.file < len(m.files) {
		m.cur = e.file
		f := m.files[e.file]
		for hi, h := range f.hunks {
			if h.ID == e.id {
				f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi))
			}
		}
		m.clampAll()
	}
	m.setStatus("undone")
}

// hasHunk reports whether a hunk with the id is among hunks.
func hasHunk(hunks []diff.Hunk, id string) bool {
	for _, h := range hunks {
		if h.ID == id {
			return true
		}
	}
	return false
}

// split replaces the hunk under the cursor by its pieces.
func (m *Model) split() {
	f, hi := m.cursorHunk()
	if hi < 0 {
		return
	}
	pieces := diff.Split(f.hunks[hi])
	if len(pieces) < 2 {
		m.setStatus(fmt.Sprintf("this hunk cannot be split further: select its lines with %s on a + or - line, then %s or %s",
			m.keys.SelectLine.Help().Key, m.keys.Accept.Help().Key, m.keys.Reject.Help().Key))
		return
	}
	h := f.hunks[hi]
	if _, ok := f.Decisions[h.ID]; ok {
		// The pieces are decided from scratch; undo brings the old
		// decision back, and the hunk whole.
		m.record(f, map[string]diff.Decision{h.ID: {}})
	}
	delete(f.selected, h.ID)
	f.hunks = append(f.hunks[:hi:hi], append(pieces, f.hunks[hi+1:]...)...)
	f.invalidate()
	f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi))
	m.scrollTo(f)
	m.setStatus(fmt.Sprintf("split into %s", english.Count(len(pieces), "hunk")))
}

// toggleLine selects or unselects the changed line under the cursor, or
// says why it cannot.
func (m *Model) toggleLine() {
	k := m.keys
	if m.sideBySide {
		m.setError(fmt.Sprintf("line selection works in unified view (%s)", k.ToggleView.Help().Key))
		return
	}
	if m.focus != diffPane {
		m.setError(fmt.Sprintf("%s selects a line of the diff: %s to it, then j/k onto a + or - line", k.SelectLine.Help().Key, k.Focus.Help().Key))
		return
	}
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(false)
	var r row
	if f.cursor < len(rows) {
		r = rows[f.cursor]
	}
	switch {
	case f.cursor >= len(rows) || (r.kind != rowLine && r.kind != rowHunk):
		m.setError(fmt.Sprintf("%s selects a + or - line of a hunk: move onto one with j/k", k.SelectLine.Help().Key))
		return
	case r.kind == rowHunk && f.hunks[r.hunk].Lines == nil:
		m.setError(fmt.Sprintf("this file is decided whole (%s or %s): it has no lines to select", k.Accept.Help().Key, k.Reject.Help().Key))
		return
	case r.kind == rowHunk:
		m.setError(fmt.Sprintf("%s selects a + or - line: the cursor is on the hunk's header, move onto a line with j", k.SelectLine.Help().Key))
		return
	case f.hunks[r.hunk].Lines[r.line].Op == diff.Context:
		m.setError(fmt.Sprintf("%s selects a + or - line: this line is unchanged context, move onto a changed one with j/k", k.SelectLine.Help().Key))
		return
	}
	hi := int(r.hunk)
	h := f.hunks[hi]
	sel := f.selected[h.ID]
	if sel == nil {
		sel = map[int]bool{}
		f.selected[h.ID] = sel
	}
	if sel[int(r.line)] {
		delete(sel, int(r.line))
	} else {
		sel[int(r.line)] = true
	}
	if len(sel) == 0 {
		m.clearLines(f, hi)
		return
	}
	// On to the next changed line of the hunk, as git add -p would ask.
	m.moveLine(f, hi, 1)
	m.setStatus(m.lineHint(f, hi))
}
