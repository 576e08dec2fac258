package quote

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile is a name with one of every kind of rune a terminal acts on or a reader misreads.
func hostile() []string {
	var out []string
	for r := rune(0); r < 0x20; r++ {
		out = append(out, "a"+string(r)+"b")
	}
	for r := rune(0x7f); r < 0xa0; r++ {
		out = append(out, "a"+string(r)+"b")
	}
	for _, r := range []rune{0x200b, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069, 0x2028, 0x2029, 0xfeff, 0xe0041} {
		out = append(out, "a"+string(r)+"b")
	}
	for _, b := range []byte{0x80, 0x9b, 0x9d, 0xc3, 0xff} {
		out = append(out, "a"+string([]byte{b})+"b")
	}
	return append(out, "\x1b]52;c;aGk=\x07\x1b[6n", " lead", "trail ")
}

// printable reports whether s holds only printable, valid UTF-8 (and, with lines, newlines).
func printable(s string, lines bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if lines && (r == '\n' || r == '\t') {
			continue
		}
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

func TestPathAndTextSpellOutEveryUnsafeRune(t *testing.T) {
	for _, name := range hostile() {
		if q := Path(name); !printable(q, false) || q == name {
			t.Errorf("Path(%q) = %q", name, q)
		}
		if q := Text("open " + name + ": no such file\n"); !printable(q, true) {
			t.Errorf("Text of %q = %q", name, q)
		}
	}
	for _, plain := range []string{"a.txt", "src/main.go", "über/naïve.txt", "a b"} {
		if Path(plain) != plain || Text(plain) != plain {
			t.Errorf("%q is changed: %q %q", plain, Path(plain), Text(plain))
		}
	}
	if got := Text("one\ntwo\tthree"); got != "one\ntwo\tthree" {
		t.Errorf("Text changed newlines or tabs: %q", got)
	}
	if got := Text("x\x1b[6n\u202e\xff"); !strings.Contains(got, `\x1b[6n\u202e\xff`) {
		t.Errorf("Text = %q", got)
	}
}
