package diffview

import (
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// Moving around: the cursor of each pane, scrolling, the mouse, jumps to
// hunks, files and undecided hunks.

// move moves the cursor of the focused pane by n rows.
func (m *Model) move(n int) {
	if m.focus == treePane {
		m.selectFile(m.cur + max(-len(m.files), min(n, len(m.files))))
		return
	}
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(m.sideBySide)
	f.cursor = max(0, min(len(rows)-1, f.cursor+max(-len(rows), min(n, len(rows)))))
	m.scrollTo(f)
}

// wheel scrolls the pane under the mouse.
func (m *Model) wheel(msg tea.MouseWheelMsg) {
	step := 0
	switch msg.Button {
	case tea.MouseWheelDown:
		step = 3
	case tea.MouseWheelUp:
		step = -3
	default:
		return
	}
	if m.showTree() && msg.X < m.treeWidth() {
		m.treeTop = max(0, min(len(m.tree)-m.bodyHeight(), m.treeTop+step))
		return
	}
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(m.sideBySide)
	f.top = max(0, min(len(rows)-m.diffHeight(), f.top+step))
	f.cursor = max(f.top, min(f.cursor, f.top+m.diffHeight()-1, len(rows)-1))
}

// click selects the file or diff row under a left click and focuses its
// pane.
func (m *Model) click(msg tea.MouseClickMsg) {
	if msg.Button != tea.MouseLeft || m.mode != modeNormal || !m.loaded || m.busy || msg.Y >= m.bodyHeight() {
		return
	}
	if m.showTree() && msg.X < m.treeWidth() {
		m.focus = treePane
		if i := m.treeTop + msg.Y; i < len(m.tree) && m.tree[i].file >= 0 {
			m.selectFile(m.tree[i].file)
		}
		return
	}
	f := m.file()
	if f == nil || msg.Y == 0 {
		return
	}
	m.focus = diffPane
	rows := f.rows(m.sideBySide)
	if i := f.top + msg.Y - 1; i < len(rows) {
		f.cursor = i
	}
}

// scrollTo keeps the diff cursor on screen with a little margin.
func (m *Model) scrollTo(f *fileView) {
	h := m.diffHeight()
	margin := min(3, h/4)
	if f.cursor < f.top+margin {
		f.top = max(0, f.cursor-margin)
	}
	if f.cursor >= f.top+h-margin {
		f.top = f.cursor - h + margin + 1
	}
	rows := f.rows(m.sideBySide)
	f.top = max(0, min(f.top, len(rows)-h))
}

// clampAll keeps cursors and scroll positions valid after a size change.
func (m *Model) clampAll() {
	m.cur = m.shownFrom(max(0, min(m.cur, len(m.files)-1)), 1)
	if f := m.file(); f != nil {
		rows := f.rows(m.sideBySide)
		f.cursor = max(0, min(f.cursor, len(rows)-1))
		m.scrollTo(f)
	}
	m.scrollTree()
}

// selectFile selects file i (clamped) and keeps it visible in the tree.
func (m *Model) selectFile(i int) {
	if len(m.files) == 0 {
		return
	}
	dir := 1
	if i < m.cur {
		dir = -1
	}
	m.cur = m.shownFrom(max(0, min(i, len(m.files)-1)), dir)
	m.clampAll()
}

// scrollTree keeps the selected file on screen in the tree.
func (m *Model) scrollTree() {
	at := 0
	for i, t := range m.tree {
		if t.file == m.cur {
			at = i
			break
		}
	}
	h := m.bodyHeight()
	if at < m.treeTop {
		m.treeTop = max(0, at-1)
	}
	if at >= m.treeTop+h {
		m.treeTop = at - h + 1
	}
}

// jumpHunk moves the cursor to the next (dir 1) or previous hunk header.
func (m *Model) jumpHunk(dir int) {
	m.focus = diffPane
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(m.sideBySide)
	for i := f.cursor + dir; i >= 0 && i < len(rows); i += dir {
		if rows[i].kind == rowHunk {
			f.cursor = i
			m.scrollTo(f)
			return
		}
	}
}

// nextUndecided moves to the next undecided hunk after the cursor, across
// files, wrapping around to the current file's earlier hunks.
func (m *Model) nextUndecided() {
	f := m.file()
	if f == nil {
		return
	}
	n := len(m.files)
	start := rowHunkIndex(f.rows(m.sideBySide), f.cursor)
	for step := 0; step <= n; step++ {
		fi := (m.cur + step) % n
		fv := m.files[fi]
		for hi, h := range fv.hunks {
			if step == 0 && hi <= start {
				continue
			}
			if step == n && hi > start {
				break
			}
			if fv.Decisions[h.ID].Verdict != diff.Undecided || !fv.showsHunk(hi) {
				continue
			}
			if fv.Ignored && !fv.expanded {
				fv.expanded = true
				fv.invalidate()
			}
			m.cur = fi
			fv.cursor = max(0, hunkRow(fv.rows(m.sideBySide), hi))
			m.focus = diffPane
			m.clampAll()
			return
		}
	}
	m.setStatus("no undecided hunk left")
}

// cursorHunk is the index of the hunk under the diff cursor, or -1.
func (m *Model) cursorHunk() (*fileView, int) {
	f := m.file()
	if f == nil {
		return nil, -1
	}
	rows := f.rows(m.sideBySide)
	hi := rowHunkIndex(rows, f.cursor)
	if hi < 0 {
		// On the notes above the first hunk: the first hunk.
		if first := f.nextShownHunk(-1); first >= 0 && (!f.Ignored || f.expanded) {
			return f, first
		}
	}
	return f, hi
}

// toggleView switches unified and side-by-side, keeping the cursor on the
// same hunk.
func (m *Model) toggleView() {
	f := m.file()
	m.sideBySide = !m.sideBySide
	if f == nil {
		return
	}
	hi := rowHunkIndex(f.rows(!m.sideBySide), f.cursor)
	if hi >= 0 {
		f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi))
	}
	m.clampAll()
}
