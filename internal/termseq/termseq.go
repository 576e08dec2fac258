// Package termseq is the terminal tokenizer that shadow's two readers of a
// jailed program's output share: the relay's filter (sandbox/termfilter),
// which decides what reaches the user's terminal, and the agent pane, which
// decides what reaches its emulator. Both must see a control sequence where
// a terminal sees one, in every form a terminal reads: the 7-bit form
// (ESC Fe), the 8-bit form (a raw C1 byte 0x80-0x9F that continues no
// UTF-8 character) and the UTF-8 encoded form (0xC2 0x80-0x9F), which some
// terminals decode and act on. A reader that knows only ESC [ lets
// "\x9b2000000000b" (REP two billion times) through as text.
//
// It has no terminal, no state and no dependency beyond the standard
// library: byte classes, introducers and the head of a control sequence.
package termseq

// The C1 controls that introduce a sequence or a string, and ST, which ends
// a string, in their 8-bit form.
const (
	DCS = 0x90 // device control string
	SOS = 0x98 // start of string
	CSI = 0x9b // control sequence introducer
	ST  = 0x9c // string terminator
	OSC = 0x9d // operating system command
	PM  = 0x9e // privacy message
	APC = 0x9f // application program command
)

// ESC is the escape byte, which starts the 7-bit form of every C1 control.
const ESC = 0x1b

// IsC1 reports whether b is a C1 control in its 8-bit form.
func IsC1(b byte) bool { return b >= 0x80 && b <= 0x9f }

// FromEsc is the C1 control that ESC b stands for (ESC [ is CSI), and
// whether b makes one: ESC followed by 0x40-0x5F.
func FromEsc(b byte) (byte, bool) {
	if b >= 0x40 && b <= 0x5f {
		return b + 0x40, true
	}
	return 0, false
}

// Intro recognises a C1 control at the start of b in any of its forms and
// returns it in 8-bit form with the number of bytes it takes: 2 for ESC Fe
// and for 0xC2 0x80-0x9F, 1 for a raw C1 byte. It returns 0, 0 when b does
// not start with one (or with only the first byte of one). A raw byte that
// continues a UTF-8 character is the caller's to tell apart.
func Intro(b []byte) (c1 byte, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch x := b[0]; {
	case IsC1(x):
		return x, 1
	case x == ESC && len(b) > 1:
		if c, ok := FromEsc(b[1]); ok {
			return c, 2
		}
	case x == 0xc2 && len(b) > 1 && IsC1(b[1]):
		return b[1], 2
	}
	return 0, 0
}

// Kind is what a C1 control introduces.
type Kind uint8

// The kinds of C1 control.
const (
	Single  Kind = iota // a control of its own (IND, NEL, RI, ...)
	Control             // a control sequence: parameters, intermediates, a final byte
	Command             // an OSC string
	Device              // a DCS string
	Private             // an SOS, PM or APC string
	End                 // ST
)

// KindOf is what the C1 control c1 (8-bit form) introduces.
func KindOf(c1 byte) Kind {
	switch c1 {
	case CSI:
		return Control
	case OSC:
		return Command
	case DCS:
		return Device
	case SOS, PM, APC:
		return Private
	case ST:
		return End
	}
	return Single
}

// UTF8Len is the length of the UTF-8 character that lead byte b starts (2 to
// 4), or 0 when b leads none: ASCII, a continuation byte, or a byte that
// never appears in UTF-8 (0xC0, 0xC1, 0xF5-0xFF).
func UTF8Len(b byte) int {
	switch {
	case b >= 0xc2 && b <= 0xdf:
		return 2
	case b >= 0xe0 && b <= 0xef:
		return 3
	case b >= 0xf0 && b <= 0xf4:
		return 4
	}
	return 0
}

// IsCont reports whether b is a UTF-8 continuation byte.
func IsCont(b byte) bool { return b >= 0x80 && b <= 0xbf }

// Header is the parsed body of a control sequence or of a DCS string's
// head: what follows the introducer up to the final byte.
type Header struct {
	Prefix byte   // private marker '<', '=', '>', '?' or 0
	Params []byte // parameter bytes after the prefix: digits, ';', ':' (and stray markers)
	Inter  []byte // intermediate bytes, 0x20-0x2F
	Final  byte
}

// ParseHeader parses the parameter, intermediate and final bytes of a
// control sequence b (without its introducer), up to its final byte; what
// follows that (a DCS string's data) is left alone. It reports false when no
// final byte follows the parameters and intermediates.
func ParseHeader(b []byte) (Header, bool) {
	var h Header
	i := 0
	if i < len(b) && b[i] >= 0x3c && b[i] <= 0x3f {
		h.Prefix = b[i]
		i++
	}
	s := i
	for i < len(b) && b[i] >= 0x30 && b[i] <= 0x3f {
		i++
	}
	h.Params = b[s:i]
	s = i
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
		i++
	}
	h.Inter = b[s:i]
	if i >= len(b) || b[i] < 0x40 || b[i] > 0x7e {
		return h, false
	}
	h.Final = b[i]
	return h, true
}

// StrayMarker reports whether a control sequence's parameters hold a private
// marker byte ('<' to '?') past the first position: no terminal agrees on
// what those mean, and a parser may skip them and read the digits around
// them as one number.
func (h Header) StrayMarker() bool {
	for _, c := range h.Params {
		if c >= 0x3c && c <= 0x3f {
			return true
		}
	}
	return false
}

// Strip returns text without its control sequences and strings, in every form Intro knows: a
// control sequence up to its final byte, an OSC, DCS, SOS, PM or APC string up to its ST (in any
// form) or, for OSC, BEL, and any other escape with the byte it escapes. An unfinished one at the
// end is dropped whole. What is left keeps its other bytes, controls included: the caller decides
// what to do with those.
func Strip(text string) string {
	b := []byte(text)
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if n := utf8Char(b[i:]); n > 0 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		c1, n := Intro(b[i:])
		if n == 0 {
			if b[i] == ESC { // ESC and a byte that makes no C1: a two-byte escape
				i += min(2, len(b)-i)
				continue
			}
			out = append(out, b[i])
			i++
			continue
		}
		i += n
		switch KindOf(c1) {
		case Control:
			for i < len(b) && !(b[i] >= 0x40 && b[i] <= 0x7e) {
				i++
			}
			i++ // the final byte
		case Command, Device, Private:
			for i < len(b) {
				if n := utf8Char(b[i:]); n > 0 {
					i += n
					continue
				}
				if c1 == OSC && b[i] == 0x07 {
					i++
					break
				}
				if e, m := Intro(b[i:]); m > 0 && e == ST {
					i += m
					break
				}
				i++
			}
		}
	}
	return string(out)
}

// utf8Char is the length of the multi-byte UTF-8 character b starts with, 0 when it starts with
// none: ASCII, a stray byte, or 0xC2 followed by a C1 byte, which is the C1 control's UTF-8 form.
func utf8Char(b []byte) int {
	n := UTF8Len(b[0])
	if n == 0 || len(b) < n || b[0] == 0xc2 && IsC1(b[1]) {
		return 0
	}
	for _, c := range b[1:n] {
		if !IsCont(c) {
			return 0
		}
	}
	return n
}
