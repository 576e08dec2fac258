package diff

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Piece is part of a string prepared for display: either text that is safe
// to print as is, or the visible spelling of bytes that are not (Escaped).
type Piece struct {
	Text    string
	Escaped bool
}

// TabWidth is the tab stop used when expanding tabs for display.
const TabWidth = 4

// EscapePieces splits s into printable text and visible escapes: C0 control
// characters and DEL become `\n`, `\r` or `\x1b`-style escapes; C1
// controls, bidirectional controls (CVE-2021-42574), zero-width and other
// invisible format characters become `<U+202E>`-style escapes; invalid UTF-8
// bytes become `\xff`. Tabs are expanded to TabWidth columns, counted from
// the start of s.
func EscapePieces(s string) []Piece {
	out, _ := EscapeFrom(s, 0)
	return out
}

// EscapeFrom is EscapePieces for text that starts at column col of its
// line (so tabs line up); it also returns the column after it.
func EscapeFrom(s string, col int) ([]Piece, int) {
	return escapeText(s, col, false)
}

// escapeText is EscapeFrom that, with backslash, also spells a backslash
// `\\`, for text whose escapes are not set apart by colour.
func escapeText(s string, col int, backslash bool) ([]Piece, int) {
	var out []Piece
	var plain strings.Builder
	flush := func() {
		if plain.Len() > 0 {
			out = append(out, Piece{plain.String(), false})
			plain.Reset()
		}
	}
	esc := func(text string) {
		flush()
		if n := len(out); n > 0 && out[n-1].Escaped {
			out[n-1].Text += text
		} else {
			out = append(out, Piece{text, true})
		}
		col += len(text)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			esc(fmt.Sprintf(`\x%02x`, s[i]))
		case r == '\t':
			n := TabWidth - col%TabWidth
			plain.WriteString(strings.Repeat(" ", n))
			col += n
		case r == '\\' && backslash:
			esc(`\\`)
		case r == '\n':
			esc(`\n`)
		case r == '\r':
			esc(`\r`)
		case r < 0x20 || r == 0x7f:
			esc(fmt.Sprintf(`\x%02x`, r))
		case r >= 0x80 && r < 0xa0:
			esc(fmt.Sprintf(`<U+%04X>`, r))
		case invisible(r):
			esc(fmt.Sprintf(`<U+%04X>`, r))
		default:
			plain.WriteString(s[i : i+size])
			col++
		}
		i += size
	}
	flush()
	return out, col
}

// invisible reports runes that change or hide how text reads without being
// seen: bidi controls, zero-width characters, other format characters (such
// as the tag characters U+E0000..E007F), line and paragraph separators.
func invisible(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c,
		r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff,
		r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r)
}

// Escape returns s with every byte that is not safe and visible on a
// terminal spelled out (see EscapePieces), and a backslash spelled `\\`:
// names and messages are shown without colour, where a file named with a
// literal `\x1b` must not read like one holding an ESC. Escape is for names,
// and targets; a diff's lines and messages go through EscapeLine.
func Escape(s string) string {
	if safe(s, true) {
		return s
	}
	pieces, _ := escapeText(s, 0, true)
	return join(pieces)
}

// EscapeLine is Escape for a line of a file's content or of a patch (whose
// headers quote names the way git does), and for a message, where a
// backslash is common and kept as it is. It leaves Escape's output as it is,
// so a message may hold names escaped with Escape.
func EscapeLine(s string) string {
	if safe(s, false) {
		return s
	}
	return join(EscapePieces(s))
}

func join(pieces []Piece) string {
	var b strings.Builder
	for _, p := range pieces {
		b.WriteString(p.Text)
	}
	return b.String()
}

// safe reports whether s is printable ASCII (without a backslash, if
// backslash), the common case.
func safe(s string, backslash bool) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f || (backslash && s[i] == '\\') {
			return false
		}
	}
	return true
}
