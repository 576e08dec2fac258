// Package quote spells out, for a one-line message on a terminal, what a file name or an error
// holds that a terminal would act on or that would misread: control bytes (C0, DEL and C1, whose
// 0x9b and 0x9d start a CSI or an OSC on many terminals), bidirectional and other invisible
// format characters (CVE-2021-42574), newlines and invalid UTF-8. A name comes from the agent;
// printed raw, an OSC 52 in it writes the developer's clipboard and an ESC [ 6n makes the
// terminal type a reply. Every message shadow prints with a path quotes it with Path; what prints
// an error goes through Text as well, for a path an error of the system carries unquoted.
package quote

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Path returns p as it may appear in a message: unchanged when it is printable and has no space
// at its ends, otherwise in double quotes with Go's escapes (\x1b, \u009b, \u202e, \n, \xff).
func Path(p string) string {
	if !utf8.ValidString(p) || strings.TrimSpace(p) != p {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if Unsafe(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// Unsafe reports whether the rune r is one a message must not print as it is: a control
// character (C0, DEL, C1), a format character (bidi controls, zero-width and tag characters), a
// line or paragraph separator. (A byte of invalid UTF-8 is unsafe too: a terminal may take 0x9b
// for a CSI.)
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029
}

// Text returns the message s with every rune Unsafe reports, and every byte of invalid UTF-8,
// spelled as an escape (\x1b, \u009b, \xff), but for newlines and tabs, which a message of
// several lines holds.
func Text(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x80 && Unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Shell is s as one word of a POSIX shell command line, in single quotes (a quote in s closes,
// escapes and reopens them).
func Shell(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
