package jsonout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// unsafeRunes is every character Escape must escape: the class, listed here
// independently of Unsafe.
func unsafeRunes() []rune {
	rs := []rune{0x7f, 0x061c, 0x200e, 0x200f, 0x2028, 0x2029}
	for r := rune(0x80); r <= 0x9f; r++ {
		rs = append(rs, r)
	}
	for r := rune(0x202a); r <= 0x202e; r++ {
		rs = append(rs, r)
	}
	for r := rune(0x2066); r <= 0x2069; r++ {
		rs = append(rs, r)
	}
	return rs
}

// TestEncoderEscapesEveryUnsafeCharacter: a name holding each character
// comes out as ASCII escapes, with no raw byte of it, and decodes back to the
// same name.
func TestEncoderEscapesEveryUnsafeCharacter(t *testing.T) {
	for _, r := range unsafeRunes() {
		name := "a" + string(r) + "b/é✓"
		var buf bytes.Buffer
		if err := NewEncoder(&buf).Encode(map[string]string{"path": name}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.ContainsRune(out, r) {
			t.Errorf("U+%04X printed raw: %q", r, out)
		}
		var back map[string]string
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["path"] != name {
			t.Errorf("U+%04X: decodes to %q, %v", r, back["path"], err)
		}
	}
	// Every other character of the first planes passes as it is.
	for r := rune(0x20); r < 0x3000; r++ {
		if r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' || !utf8.ValidRune(r) {
			continue
		}
		q := []byte(`"` + string(r) + `"`)
		if got := Escape(q); Unsafe(r) == bytes.Equal(got, q) {
			t.Errorf("U+%04X: Escape = %q, unsafe %v", r, got, Unsafe(r))
		}
	}
}
