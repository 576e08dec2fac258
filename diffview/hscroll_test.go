package diffview

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// screenText is the screen text of pieces.
func screenText(pieces []diff.Piece) string {
	var b strings.Builder
	for _, p := range pieces {
		b.WriteString(p.Text)
	}
	return b.String()
}

// A window of a line drawn from a cell shows the same cells as the whole
// line drawn and cut there: tabs, escapes and wide characters included, and
// for a line long enough to be windowed.
func TestWindowMatchesWholeLine(t *testing.T) {
	long := strings.Repeat("a\tb\x1bc日本\xffd", 2000) // ~26 kB, one line
	for _, s := range []string{"short\tline\x00here", strings.Repeat("0123456789", 500), long} {
		for _, off := range []int{0, 1, 7, 100, 999, 4097, 20000, 60000} {
			const w = 70
			want := ansi.Cut(screenText(diff.EscapePieces(s)), off, off+w)
			text, col, skip, _ := window(s, off)
			pieces, _ := diff.EscapeFrom(text, col)
			if got := ansi.Cut(screenText(pieces), skip, skip+w); got != want {
				t.Errorf("line of %d bytes from cell %d:\n got %q\nwant %q", len(s), off, got, want)
			}
		}
	}
}

// wideSource is a file whose changed line is longer than any pane.
func wideSource() *memSource {
	long := "x := []string{" + strings.Repeat(`"word", `, 20) + `"END"}`
	base := "package p\n\nvar a = 1\n" + strings.Replace(long, "END", "OLD", 1) + "\nvar b = 2\n"
	staged := "package p\n\nvar a = 1\n" + long + "\nvar b = 2\n"
	return &memSource{
		base:      map[string]string{"wide.go": base},
		staged:    map[string]string{"wide.go": staged},
		meta:      map[string]File{"wide.go": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile}},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{},
	}
}

// l and h scroll the diff sideways, so the end of a long line can be read;
// a cut line says so with "›", a scrolled one with "‹".
func TestHorizontalScroll(t *testing.T) {
	for _, sbs := range []bool{false, true} {
		name := "unified"
		if sbs {
			name = "side-by-side"
		}
		t.Run(name, func(t *testing.T) {
			m := open(t, wideSource(), 80, 24, WithSideBySide(sbs))
			v := ansi.Strip(m.View())
			if strings.Contains(v, `"END"`) || !strings.Contains(v, "›") || strings.Contains(v, "‹") {
				t.Fatalf("the long line is not shown cut at its start:\n%s", v)
			}
			m = press(t, m, "tab", "l", "tab") // from the tree, l leaves the diff as it is
			if m.file().left != 0 {
				t.Fatalf("l scrolled the diff while the tree had the focus")
			}
			for i := 0; i < 20 && !strings.Contains(ansi.Strip(m.View()), `"END"`); i++ {
				m = press(t, m, "l")
			}
			v = m.View()
			checkScreen(t, v, 80, 24)
			plain := ansi.Strip(v)
			if !strings.Contains(plain, `"END"}`) || !strings.Contains(plain, "‹") {
				t.Fatalf("scrolling right never showed the end of the line:\n%s", plain)
			}
			golden.RequireEqual(t, v)
			// At the end of the widest line, l goes no further.
			left := m.file().left
			m = press(t, m, "l")
			if m.file().left != left || !strings.Contains(m.status, "no line on screen goes further right") {
				t.Errorf("l past the end: left %d → %d, status %q", left, m.file().left, m.status)
			}
			for i := 0; i < 20 && m.file().left > 0; i++ {
				m = press(t, m, "h")
			}
			if v := ansi.Strip(m.View()); m.file().left != 0 || strings.Contains(v, "‹") {
				t.Errorf("h did not come back to the start of the lines:\n%s", v)
			}
		})
	}
}

// A search match past the pane's edge is scrolled into view.
func TestSearchRevealsMatch(t *testing.T) {
	m := open(t, wideSource(), 80, 24)
	m = press(t, m, "/", "E", "N", "D", "enter")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "END") {
		t.Errorf("the match is off screen:\n%s", v)
	}
}

// The help lists the scroll keys, and they can be rebound.
func TestScrollKeysInKeyMap(t *testing.T) {
	k := DefaultKeyMap()
	var helps []string
	for _, group := range k.FullHelp() {
		for _, b := range group {
			helps = append(helps, fmt.Sprintf("%s %s", b.Help().Key, b.Help().Desc))
		}
	}
	all := strings.Join(helps, "\n")
	for _, want := range []string{"h/← scroll the diff left", "l/→ scroll the diff right"} {
		if !strings.Contains(all, want) {
			t.Errorf("the help lacks %q", want)
		}
	}
	if err := k.Bind("scroll-right", "L"); err != nil {
		t.Fatal(err)
	}
	m := open(t, wideSource(), 80, 24, WithKeyMap(k))
	m = press(t, m, "L")
	if m.file().left == 0 {
		t.Errorf("the rebound scroll key did not scroll")
	}
}
