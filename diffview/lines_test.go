package diffview

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// threeLines is a file whose one hunk adds three lines: too small to split,
// so taking part of it means selecting lines.
func threeLines() *memSource {
	return &memSource{
		base:      map[string]string{"f.txt": "x\n"},
		staged:    map[string]string{"f.txt": "x\none\ntwo\nthree\n"},
		meta:      map[string]File{"f.txt": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile}},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{"f.txt": "x\n"},
	}
}

// diffLines are the rows of the diff pane of a plain screen that hold the
// file's lines, keyed by their text.
func diffLines(screen string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(screen, "\n") {
		i := strings.Index(l, "│")
		if i < 0 {
			continue
		}
		l = strings.TrimRight(l[i+len("│"):], " ")
		for _, w := range []string{"one", "two", "three"} {
			if strings.HasSuffix(l, "+"+w) {
				out[w] = l
			}
		}
	}
	return out
}

// The line cursor and the selected lines are on screen; space off a + or -
// line says why; a takes only the selected line and says so; apply writes
// only it.
func TestSelectLinesOfAHunk(t *testing.T) {
	src := threeLines()
	m := open(t, src, 80, 12)
	if n := len(diff.Split(m.file().hunks[0])); n != 1 {
		t.Fatalf("the hunk splits into %d pieces, want 1", n)
	}
	m = press(t, m, "s")
	if !strings.Contains(ansi.Strip(m.View()), "cannot be split further: select its lines with space") {
		t.Errorf("s on the small hunk does not point to line selection:\n%s", ansi.Strip(m.View()))
	}

	// space off a + or - line: on the header, on the context line, from the tree.
	for _, c := range []struct {
		keys []string
		why  string
	}{
		{nil, "the cursor is on the hunk's header"},
		{[]string{"j"}, "this line is unchanged context"},
		{[]string{"tab"}, "space selects a line of the diff: tab to it"},
	} {
		m := open(t, threeLines(), 80, 12)
		m = press(t, m, append(c.keys, "space")...)
		if plain := ansi.Strip(m.View()); !strings.Contains(plain, c.why) || strings.Contains(plain, "selected") {
			t.Errorf("space after %q does not say %q:\n%s", c.keys, c.why, plain)
		}
	}

	// The cursor shows on the line j moved to, before anything is selected.
	m = press(t, m, "j", "j", "j")
	if l := diffLines(ansi.Strip(m.View()))["two"]; !strings.Contains(l, "▸+two") {
		t.Errorf("no line cursor on +two: %q", l)
	}
	m = press(t, m, "space")
	v := m.View()
	checkScreen(t, v, 80, 12)
	plain := ansi.Strip(v)
	rows := diffLines(plain)
	if !strings.Contains(rows["two"], "●+two") || !strings.Contains(rows["three"], "▸+three") || strings.ContainsAny(rows["one"], "●◉▸") {
		t.Errorf("the selected line or the cursor is not shown: %q", rows)
	}
	if !strings.Contains(plain, "1 selected") || !strings.Contains(flat(v), "1 of 3 changed lines selected: a accepts only them") {
		t.Errorf("the screen does not say what is selected and what a does:\n%s", plain)
	}
	golden.RequireEqual(t, v)

	// In line mode j/k stay on the hunk's changed lines.
	m = press(t, m, "j")
	if l := diffLines(ansi.Strip(m.View()))["three"]; !strings.Contains(l, "▸+three") || !strings.Contains(ansi.Strip(m.View()), "the last changed line of the hunk") {
		t.Errorf("j past the hunk's last line left it: %q\n%s", l, ansi.Strip(m.View()))
	}
	m = press(t, m, "k")
	if l := diffLines(ansi.Strip(m.View()))["two"]; !strings.Contains(l, "◉+two") {
		t.Errorf("the cursor on a selected line is not shown: %q", l)
	}
	m = press(t, m, "k", "k")
	if l := diffLines(ansi.Strip(m.View()))["one"]; !strings.Contains(l, "▸+one") || !strings.Contains(ansi.Strip(m.View()), "the first changed line of the hunk") {
		t.Errorf("k in line mode did not stop on the first changed line: %q", l)
	}

	m = press(t, m, "a")
	if plain := flat(m.View()); !strings.Contains(plain, "accepted only the 1 selected line of the hunk; its 2 other changed lines left out") ||
		!strings.Contains(plain, "✓ accepted (1 line)") {
		t.Errorf("a does not say it took only the selected line:\n%s", plain)
	}
	m = press(t, m, "w", "y")
	if got := src.project["f.txt"]; got != "x\ntwo\n" {
		t.Errorf("apply wrote %q, want only the selected line: %q", got, "x\ntwo\n")
	}
}

// Rejecting the selected lines accepts the hunk's others; esc clears a
// selection, and a then takes the whole hunk.
func TestRejectAndClearSelectedLines(t *testing.T) {
	src := threeLines()
	m := open(t, src, 80, 12)
	m = press(t, m, "j", "j", "space", "r")
	if plain := flat(m.View()); !strings.Contains(plain, "rejected the 1 selected line of the hunk; its 2 other changed lines accepted") {
		t.Errorf("r does not say what it took:\n%s", plain)
	}
	m = press(t, m, "w", "y")
	if got := src.project["f.txt"]; got != "x\ntwo\nthree\n" {
		t.Errorf("apply wrote %q after rejecting +one", got)
	}

	m = open(t, threeLines(), 80, 12)
	m = press(t, m, "j", "j", "space", "esc")
	if plain := ansi.Strip(m.View()); !strings.Contains(plain, "selection cleared") || strings.Contains(plain, "1 selected") {
		t.Errorf("esc does not clear the selection:\n%s", plain)
	}
}

// flat is a screen's text with its runs of spaces and line breaks as one
// space, so a status message that wraps reads whole.
func flat(v string) string { return strings.Join(strings.Fields(ansi.Strip(v)), " ") }
