// Package jsonout writes the JSON shadow prints (the --json output of its
// commands, the audit's JSON and SARIF reports) so that it is safe to show
// on a terminal: the names it holds come from the agent, and a terminal acts
// on some characters that encoding/json writes as they are.
package jsonout

import (
	"encoding/json"
	"io"
	"unicode/utf8"
)

// NewEncoder returns an encoder for w that indents by two spaces, as every
// --json output of shadow does, and writes each value through Escape.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(escaper{w})
	enc.SetIndent("", "  ")
	return enc
}

// escaper escapes what a json.Encoder writes: one whole value per Write.
type escaper struct{ w io.Writer }

func (e escaper) Write(p []byte) (int, error) {
	if _, err := e.w.Write(Escape(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unsafe reports whether r is written as a \u escape: DEL, the C1 controls
// (U+0080 to U+009F: a terminal may act on them as on ESC sequences), the
// bidirectional controls (they reorder what is shown: Trojan Source,
// CVE-2021-42574), and the line and paragraph separators.
func Unsafe(r rune) bool {
	switch {
	case r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, // ARABIC LETTER MARK
		r == 0x200e, r == 0x200f, // LRM, RLM
		r >= 0x202a && r <= 0x202e, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069, // LRI, RLI, FSI, PDI
		r == 0x2028, r == 0x2029:   // LINE and PARAGRAPH SEPARATOR
		return true
	}
	return false
}

const hex = "0123456789abcdef"

// Escape returns data, JSON as encoding/json writes it, with every Unsafe
// character written as a \u escape. They appear only inside strings there,
// where the escape means the same character, so the JSON decodes the same.
// data is returned as it is when it holds none.
func Escape(data []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		c := data[i]
		if c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if !Unsafe(r) {
			i += n
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(data)+16)
		}
		out = append(out, data[last:i]...)
		out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		i += n
		last = i
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
