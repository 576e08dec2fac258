package termfilter

import (
	"bytes"

	"github.com/shadow-sandbox/shadow/internal/termseq"
)

// The strings of the stream (OSC, DCS, APC, PM, SOS): collected while they arrive, passed whole
// (sixel images) or dropped, and decided on once complete.

// beginString starts a string of kind k; one of no kind the filter keeps is discarded as it comes.
func (f *Writer) beginString(k strKind) {
	f.kind = k
	f.prevC2, f.scont = false, 0
	f.head = false
	if k == kindOther {
		f.seq = f.seq[:0]
		f.st = stDiscard
		return
	}
	f.st = stString
}

// str collects an OSC or DCS string.
func (f *Writer) str(b byte) {
	if c1, isST := f.stringC1(b); c1 {
		if isST {
			f.seq = append(f.seq, b)
			f.finishString()
		}
		return
	}
	switch {
	case b == 0x07 && f.kind == kindOSC:
		f.seq = append(f.seq, b)
		f.finishString()
		return
	case b == 0x1b:
		f.seq = append(f.seq, b)
		f.st = stStringEsc
		return
	case isAbort(b):
		f.drop()
		return
	case b == enq:
		// Ignored inside a string by a careful terminal, acted on by
		// others: not kept.
		return
	}
	f.trackUTF8(b)
	f.seq = append(f.seq, b)
	switch {
	case f.head:
	case f.kind == kindOSC && b == ';':
		f.head = true
		if !oscNumberAllowed(oscNumber(f.seq)) {
			f.seq = f.seq[:0]
			f.st = stDiscard
			return
		}
	case f.kind == kindDCS && b >= 0x40 && b <= 0x7e:
		f.head = true
		if h, ok := dcsHeader(f.seq); ok && streamDCS(h) {
			f.emit(f.seq...)
			f.seq = f.seq[:0]
			f.st = stPass
			return
		}
	}
	if len(f.seq) > maxStringSeq {
		f.seq = f.seq[:0]
		f.st = stDiscard
	}
}

// finishString decides on a complete OSC or DCS string.
func (f *Writer) finishString() {
	if keepString(f.kind, f.seq) {
		f.emit(f.seq...)
		if f.kind == kindOSC {
			num, _, _ := bytes.Cut(stringPayload(f.seq), []byte(";"))
			if n, ok := number(num); ok {
				f.modes.noteOSC(n)
			}
		}
	}
	f.drop()
}

// stringC1 acts on a C1 control met inside a string, UTF-8 encoded (after
// 0xC2) or raw (a byte 0x80 to 0x9F that continues no character), and
// reports whether b was one. Some terminal ends the string at any of them
// and acts on the control, raw 0x9C (ST) included: so the filter ends it
// too, dropping it, and then treats the control as in plain text, so that
// nothing the terminal reads outside a string escapes the filter. Only the
// encoded ST ends the string as its terminator (isST): then the state is
// left as it is, for the caller to finish the string.
func (f *Writer) stringC1(b byte) (c1, isST bool) {
	if b < 0x80 || b > 0x9f || !f.prevC2 && f.scont > 0 {
		return false, false
	}
	encoded := f.prevC2
	if encoded && b == 0x9c {
		f.prevC2, f.scont = false, 0
		return true, true
	}
	f.st, f.prevC2, f.scont = stGround, false, 0
	if encoded {
		f.seq = append(f.seq[:0], 0xc2, b)
	} else {
		f.seq = append(f.seq[:0], b)
	}
	f.c1(b)
	return true, false
}

// trackUTF8 follows the UTF-8 characters of a string, so that a byte in the
// C1 range is told from a continuation byte.
func (f *Writer) trackUTF8(b byte) {
	switch n := termseq.UTF8Len(b); {
	case termseq.IsCont(b):
		if f.scont > 0 {
			f.scont--
		}
	case n > 0:
		f.scont = n - 1
	default:
		f.scont = 0
	}
	f.prevC2 = b == 0xc2
}

// through consumes a string that is being dropped or passed whole.
func (f *Writer) through(b byte, pass bool) {
	if pass && b >= 0x80 {
		// A passed string is sixel data, ASCII: a terminal may read any
		// other byte as a C1 control that ends it. It ends here, in the
		// terminal too, and the byte is plain text again.
		f.emit(0x1b, '\\')
		f.drop()
		f.ground(b)
		return
	}
	if c1, isST := f.stringC1(b); c1 {
		if isST {
			f.drop()
		}
		return
	}
	if pass && b != enq {
		f.emit(b)
	}
	switch {
	case b == 0x07 && f.kind == kindOSC, isAbort(b):
		f.drop()
	case b == 0x1b:
		if pass {
			f.out = f.out[:len(f.out)-1] // decided on the next byte
			f.st = stPassEsc
		} else {
			f.st = stDiscardEsc
		}
	}
	f.trackUTF8(b)
}

// stringPayload returns the body of a complete string: between introducer
// and terminator.
func stringPayload(seq []byte) []byte {
	p := seq[introLen(seq):]
	switch {
	case bytes.HasSuffix(p, []byte("\x1b\\")), bytes.HasSuffix(p, []byte{0xc2, 0x9c}):
		return p[:len(p)-2]
	case bytes.HasSuffix(p, []byte{0x07}):
		return p[:len(p)-1]
	}
	return p
}

// oscNumber returns the command number of an OSC string collected up to and
// including its first ';', or -1.
func oscNumber(seq []byte) int {
	p := seq[introLen(seq):]
	i := bytes.IndexByte(p, ';')
	if i < 0 {
		i = len(p)
	}
	n, ok := number(p[:i])
	if !ok {
		return -1
	}
	return n
}

// keepString reports whether a complete string of kind k may reach the terminal.
func keepString(k strKind, seq []byte) bool {
	payload := stringPayload(seq)
	switch k {
	case kindOSC:
		return keepOSC(payload)
	case kindDCS:
		h, ok := dcsHeader(seq)
		return ok && keepDCS(h)
	}
	return false
}

// dcsHeader parses the head of a DCS string once its final byte has arrived.
func dcsHeader(seq []byte) (ctlHeader, bool) {
	return parseControl(seq[introLen(seq):])
}

// streamDCS reports whether a DCS string is passed through as it arrives:
// sixel images, which may be large.
func streamDCS(h ctlHeader) bool {
	return h.Final == 'q' && len(h.Inter) == 0 && h.Prefix == 0
}

// keepDCS allows the DCS strings that only draw: sixel images and the
// synchronized-update markers (DCS = 1 s, DCS = 2 s). Everything else is
// dropped: setting queries (DECRQSS "$q", XTGETTCAP "+q"), termcap and
// function-key programming (XTSETTCAP, DECUDK), tmux passthrough.
func keepDCS(h ctlHeader) bool {
	if streamDCS(h) {
		return true
	}
	return h.Prefix == '=' && len(h.Inter) == 0 && h.Final == 's' && (string(h.Params) == "1" || string(h.Params) == "2")
}
