package diffview

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// Horizontal scrolling: the diff pane shows each line from the file's left
// cell on (0 until the developer scrolls right); a line cut at the pane's
// right edge ends in a "›", and a pane scrolled right starts each line with
// a "‹", so a cut line is never mistaken for its end.

// scanChunk is how many bytes of a long line are measured at a time when
// looking for the cell a window starts at.
const scanChunk = 256

// window is the part of a line's content drawn from cell off of its display
// (tabs expanded, unsafe bytes escaped): a line of up to maxRenderBytes is
// prepared whole and skip is off; a longer one (a minified file's megabyte
// line) from the chunk that holds cell off, so that scrolling far right
// costs a scan, not a render of everything before it. col is the tab column
// at the start of text, for EscapeFrom; skip is the cells of text to leave
// out before cell off; more is whether the line goes on after text.
func window(s string, off int) (text string, col, skip int, more bool) {
	if off <= 0 || len(s) <= maxRenderBytes {
		text = clip(s)
		return text, 0, max(0, off), len(text) < len(s)
	}
	cells, at := 0, 0
	for at < len(s) {
		end := runeStart(s, min(len(s), at+scanChunk), at)
		pieces, next := diff.EscapeFrom(s[at:end], col)
		w := piecesWidth(pieces)
		if cells+w > off {
			break
		}
		cells, col, at = cells+w, next, end
	}
	rest := s[at:]
	if len(rest) > maxRenderBytes {
		rest = rest[:runeStart(rest, maxRenderBytes, 0)]
	}
	return rest, col, off - cells, at+len(rest) < len(s)
}

// cellsFrom is the display width of text that starts at tab column col (as
// window draws it), counted no further than limit: enough to know whether
// anything is left to show past a cell without measuring a megabyte line to
// its end.
func cellsFrom(s string, col, limit int) int {
	cells, at := 0, 0
	for at < len(s) && cells <= limit {
		end := runeStart(s, min(len(s), at+scanChunk), at)
		var pieces []diff.Piece
		pieces, col = diff.EscapeFrom(s[at:end], col)
		cells += piecesWidth(pieces)
		at = end
	}
	return cells
}

// runeStart moves i back to the start of the rune it falls in, never to or
// before floor (invalid UTF-8 has no rune start to find).
func runeStart(s string, i, floor int) int {
	for j := i; j > floor && j > i-utf8.UTFMax; j-- {
		if j == len(s) || utf8.RuneStart(s[j]) {
			return j
		}
	}
	return i
}

// piecesWidth is the cells the pieces take on screen.
func piecesWidth(pieces []diff.Piece) int {
	w := 0
	for _, p := range pieces {
		w += ansi.StringWidth(p.Text)
	}
	return w
}

// textWidth is the cells a line's text gets in the diff pane, after its
// gutter and the +/- column: per side in side-by-side view.
func (m *Model) textWidth(f *fileView) int {
	if m.sideBySide {
		half := (m.diffWidth() - 1) / 2
		return max(1, half-f.numWidth-1)
	}
	return max(1, m.diffWidth()-2*f.numWidth-4)
}

// scrollX moves the diff's text dir half a pane right (1) or left (-1);
// right stops where the widest line on screen ends.
func (m *Model) scrollX(dir int) {
	f := m.file()
	if f == nil {
		return
	}
	tw := m.textWidth(f)
	step := max(4, tw/2)
	if dir < 0 {
		f.left = max(0, f.left-step)
		return
	}
	// Scrolled right, a "‹" takes the first cell of each line.
	widest := m.widestOnScreen(f, f.left+step+tw)
	limit := max(0, widest-(tw-1))
	if limit <= f.left {
		m.setStatus("no line on screen goes further right")
		return
	}
	f.left = min(f.left+step, limit)
}

// widestOnScreen is the display width of the widest line on screen, counted
// up to limit.
func (m *Model) widestOnScreen(f *fileView, limit int) int {
	rows := f.rows(m.sideBySide)
	widest := 0
	for i := f.top; i < len(rows) && i < f.top+m.diffHeight(); i++ {
		r := rows[i]
		if r.kind != rowLine {
			continue
		}
		h := f.hunks[r.hunk]
		for _, li := range []int32{r.line, r.right} {
			if li >= 0 {
				widest = max(widest, cellsFrom(h.Lines[li].Content(), 0, limit))
			}
		}
	}
	return widest
}

// revealMatch scrolls horizontally so that the first match of needle
// (lower case) in row r is on screen, when it lies past the pane's edge.
func (m *Model) revealMatch(f *fileView, r row, needle string) {
	if r.kind != rowLine || needle == "" {
		return
	}
	h := f.hunks[r.hunk]
	for _, li := range []int32{r.line, r.right} {
		if li < 0 {
			continue
		}
		text := h.Lines[li].Content()
		i := strings.Index(asciiLower(text), needle)
		if i < 0 {
			continue
		}
		pieces, _ := diff.EscapeFrom(text[:i], 0)
		at := piecesWidth(pieces)
		n := piecesWidth(diff.EscapePieces(text[i : i+len(needle)]))
		tw := m.textWidth(f) - 2 // room for the "‹" and the "›"
		if at < f.left || at+n > f.left+tw {
			f.left = max(0, at-tw/3)
		}
		return
	}
}
