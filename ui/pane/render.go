package pane

// Rendering: the pane drawn from the emulator's cells, text and SGR only.

import (
	"strings"
	"unicode"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// Cursor is the cursor's cell in the pane and whether the agent shows it.
func (p *term) Cursor() (x, y int, visible bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pos := p.emu.CursorPosition()
	x, y = min(max(pos.X, 0), p.width-1), min(max(pos.Y, 0), p.height-1)
	return x, y, !p.emu.CursorHidden() && p.offset == 0
}

// Line is the text of row y of the pane from column x on, as View draws it (every cell's content
// stripped of control and bidi characters), without its trailing spaces.
func (p *term) Line(y, x int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	if y >= 0 && y < p.height {
		p.guard(func() {
			for col := max(x, 0); col < p.width; col++ {
				if c := p.emu.CellAt(col, y); c == nil {
					b.WriteByte(' ')
				} else if c.Width > 0 || c.Content != "" {
					b.WriteString(cellText(c.Content, max(c.Width, 1)))
				}
			}
		})
	}
	return strings.TrimRight(b.String(), " ")
}

// View draws the pane from the emulator's cells: text and SGR colours and
// attributes only, every cell's content stripped of control and bidi
// characters, so the output is exactly width×height cells.
func (p *term) View() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	b.Grow(p.width * p.height * 2)
	func() {
		defer func() {
			if r := recover(); r != nil {
				b.Reset()
				p.resetLocked()
				b.WriteString(p.blankLocked())
			}
		}()
		p.render(&b)
	}()
	return b.String()
}

// blankLocked is an empty pane.
func (p *term) blankLocked() string {
	line := strings.Repeat(" ", p.width)
	return strings.TrimSuffix(strings.Repeat(line+"\n", p.height), "\n")
}

// render writes every row of the emulator's screen, or, scrolled back by
// offset lines, the rows that many lines above it, from the scrollback
// first. The caller holds mu.
func (p *term) render(b *strings.Builder) {
	var zero uv.Style
	off := min(p.offset, p.scrollbackLen())
	kept := p.emu.ScrollbackLen()
	for y := 0; y < p.height; y++ {
		if y > 0 {
			b.WriteByte('\n')
		}
		prev := zero
		col := 0
		row := y - off // a row of the screen, or from the end of the scrollback when negative
		for x := 0; x < p.width && col < p.width; x++ {
			var c *uv.Cell
			if row < 0 {
				c = p.emu.ScrollbackCellAt(x, kept+row)
			} else {
				c = p.emu.CellAt(x, row)
			}
			if c == nil {
				b.WriteString(uv.StyleDiff(&prev, &zero))
				prev = zero
				b.WriteByte(' ')
				col++
				continue
			}
			if c.Width == 0 && c.Content == "" {
				continue // the second column of a wide character
			}
			w := max(c.Width, 1)
			if col+w > p.width {
				break
			}
			b.WriteString(uv.StyleDiff(&prev, &c.Style))
			prev = c.Style
			b.WriteString(cellText(c.Content, w))
			col += w
		}
		if !prev.IsZero() {
			b.WriteString("\x1b[m")
		}
		if col < p.width {
			b.WriteString(strings.Repeat(" ", p.width-col))
		}
	}
}

// cellText is a cell's content safe to print: a cell that holds anything
// but printable characters (controls, bidi overrides, invalid UTF-8) is
// drawn as '?' of the same width.
func cellText(s string, width int) string {
	if s == "" || s == " " {
		return strings.Repeat(" ", width)
	}
	if !utf8.ValidString(s) {
		return strings.Repeat("?", width)
	}
	for _, r := range s {
		if unsafeRune(r) {
			return strings.Repeat("?", width)
		}
	}
	// A cell starting with a joiner or mark (half of a cluster split between
	// writes) would merge into its neighbour on screen and shift the row.
	if first, _ := utf8.DecodeRuneInString(s); first == 0x200d || unicode.In(first, unicode.Mn, unicode.Me, unicode.Variation_Selector) {
		return strings.Repeat(" ", width)
	}
	// Keep the grid: text the terminal would draw narrower is padded, wider
	// is replaced.
	switch sw := ansi.StringWidth(s); {
	case sw < width:
		return s + strings.Repeat(" ", width-sw)
	case sw > width:
		return strings.Repeat("?", width)
	}
	return s
}

// unsafeRune reports characters that must never be printed raw: C0 and C1
// controls and the bidirectional controls of CVE-2021-42574.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return unicode.Is(unicode.Cc, r)
}

// maxTitle is the most cells of the agent's window title the app shows.
const maxTitle = 60

// Title is the window title the agent set last (OSC 0 or 2), fit to show:
// invalid UTF-8 replaced, control and bidirectional formatting characters
// removed, at most maxTitle cells. It is empty until the agent sets one.
func (p *term) Title() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cleanTitle(p.clamp.title)
}

// cleanTitle is a title safe to print in the status bar and to send to the
// user's terminal.
func cleanTitle(b []byte) string {
	var t strings.Builder
	for _, r := range strings.ToValidUTF8(string(b), "\uFFFD") {
		if !unsafeRune(r) && !unicode.Is(unicode.Cf, r) {
			t.WriteRune(r)
		}
	}
	return ansi.Truncate(strings.TrimSpace(t.String()), maxTitle, "…")
}
