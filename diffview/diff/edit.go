package diff

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
)

// EditText is the text offered to the developer to edit a hunk in
// $EDITOR, like `git add -p`'s `e`: the hunk's lines, then instructions as
// "#" comment lines.
func EditText(h Hunk) string {
	var b strings.Builder
	b.WriteString(h.Header())
	b.WriteString("\n")
	writeBody(&b, h.Lines)
	b.WriteString(`# ---
# To leave a "-" line in place, make it a " " (context) line.
# To drop a "+" line, delete it.
# Lines starting with "#" are ignored. The old side (" " and "-" lines) must
# stay as it is: the edited hunk is applied to the same lines of the base.
# To abandon the edit, delete every line.
`)
	return b.String()
}

// ErrEmptyEdit is returned by ParseEdit when the edited text holds no diff
// lines: the developer abandoned the edit.
var ErrEmptyEdit = errors.New("edited hunk is empty")

// ParseEdit reads a hunk text edited from EditText(h) and returns the hunk it
// describes. A line starting with " " is context, "-" removed, "+" added, an
// empty line an empty context line, "\" marks the previous line as lacking
// its final newline, and "#" lines and a leading "@@" header are ignored.
// The edited hunk's old side must equal h's old side exactly, so what is
// applied is what the developer saw.
func ParseEdit(h Hunk, text string) (Hunk, error) {
	var lines []Line
	raw := strings.SplitAfter(text, "\n")
	for n, s := range raw {
		if s == "" {
			continue
		}
		switch s[0] {
		case '#':
			continue
		case '@':
			if len(lines) == 0 && strings.HasPrefix(s, "@@") {
				continue
			}
			return Hunk{}, fmt.Errorf("edited hunk line %d: a hunk header is only allowed first", n+1)
		case ' ', '-', '+':
			if !strings.HasSuffix(s, "\n") {
				// The editor dropped the newline after the last line; the
				// "\" marker, not the file's last byte, says a line lacks it.
				s += "\n"
			}
			lines = append(lines, Line{Op(s[0]), s[1:]})
		case '\n':
			lines = append(lines, Line{Context, "\n"})
		case '\r':
			if s == "\r\n" {
				lines = append(lines, Line{Context, "\r\n"})
				continue
			}
			return Hunk{}, fmt.Errorf("edited hunk line %d: starts with neither \" \", \"-\", \"+\" nor \"#\"", n+1)
		case '\\':
			if len(lines) == 0 {
				return Hunk{}, fmt.Errorf("edited hunk line %d: \"\\\" marker before any line", n+1)
			}
			lines[len(lines)-1].Text = strings.TrimSuffix(lines[len(lines)-1].Text, "\n")
		default:
			return Hunk{}, fmt.Errorf("edited hunk line %d: starts with neither \" \", \"-\", \"+\" nor \"#\"", n+1)
		}
	}
	if len(lines) == 0 {
		return Hunk{}, ErrEmptyEdit
	}
	var want, got []string
	for _, l := range h.Lines {
		if l.Op != Insert {
			want = append(want, l.Text)
		}
	}
	for _, l := range lines {
		if l.Op != Insert {
			got = append(got, l.Text)
		}
	}
	if len(want) != len(got) {
		return Hunk{}, fmt.Errorf("edited hunk has %s (context and removed), the hunk has %d: only \"+\" lines may be added or removed", english.Count(len(got), "old line"), len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			return Hunk{}, fmt.Errorf("edited hunk: old line %d was changed: only \"+\" lines may be changed", i+1)
		}
	}
	for i, l := range lines[:len(lines)-1] {
		if !l.HasEOL() && !onlyOtherSide(lines[i+1:], l.Op) {
			return Hunk{}, fmt.Errorf("edited hunk line %d: only the last line of a file can lack its newline", i+1)
		}
	}
	return makeHunk(h.Path, lines, h.OldStart, h.NewStart), nil
}

// onlyOtherSide reports whether every line in rest belongs only to the side
// op does not (an added line after a removed one without newline, or the
// reverse), so a missing newline is still at the end of its own side.
func onlyOtherSide(rest []Line, op Op) bool {
	for _, l := range rest {
		if l.Op == Context || l.Op == op {
			return false
		}
	}
	return op != Context
}
