// Package termfilter filters a jailed program's terminal output before it
// reaches the user's real terminal. It is an allow-list (allow.go): text,
// colours, cursor movement, erasing, scrolling regions, the screen modes a
// full-screen program needs, titles, colour settings and http(s) links pass;
// every other escape sequence, control sequence, control string and C1
// control is dropped, in its 7-bit, 8-bit and UTF-8 encoded forms alike. So
// what lets a program reach beyond its screen never passes: the clipboard
// (OSC 52), fonts, files and commands of the host (OSC 7, 51, 633, file://
// links), notifications, sequences that make the terminal answer (ENQ,
// device attributes, status and cursor reports, mode and setting queries,
// colour queries, window reports), whose answers would otherwise be typed
// into the user's shell after the program ends, and sequences that reprogram
// keys, lock the keyboard, turn on local echo or move and resize the window.
//
// The filter also follows the modes the program sets (alternate screen,
// cursor visibility, mouse and focus reports, bracketed paste, keyboard
// protocols, insert mode, character sets, colours, …); Restore returns what
// undoes those it left set, and only those.
//
// The filter never lets through a sequence it has not seen to its end: an
// escape sequence split across Write calls is held until it completes, and a
// sequence longer than a fixed bound is dropped whole while it streams by, so
// memory stays bounded whatever the program writes. A C1 control inside a
// string (a raw 0x9C among them) ends the string for the filter as it does
// for some terminal, so that nothing a terminal reads as plain text passes as
// a string's content.
package termfilter

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"

	"github.com/shadow-sandbox/shadow/internal/termseq"
)

// Bounds on what is held while a sequence is incomplete.
const (
	maxControlSeq = 256  // CSI and ESC sequences: parameters and intermediates
	maxStringSeq  = 4096 // OSC, DCS, APC, PM and SOS strings
)

// enq is ENQ, which makes a terminal send its answerback message.
const enq = 0x05

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("termfilter: write after close")

type state uint8

const (
	stGround     state = iota
	stLeadC2           // held 0xC2: may start a UTF-8 encoded C1 control
	stEscape           // after ESC
	stEscInter         // ESC followed by intermediates
	stCSI              // control sequence, collecting parameters
	stCSIDrop          // over-long control sequence, dropped up to its final byte
	stString           // OSC/DCS/APC/PM/SOS, collecting
	stStringEsc        // ESC inside a collected string
	stDiscard          // string being dropped up to its terminator
	stDiscardEsc       // ESC inside a dropped string
	stPass             // string being passed through up to its terminator
	stPassEsc          // ESC inside a passed string
)

type strKind uint8

const (
	kindOSC strKind = iota
	kindDCS
	kindOther // APC, PM, SOS: always dropped
)

// Writer is an io.Writer that forwards a filtered copy of what is written to
// it. It is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	st     state
	kind   strKind
	seq    []byte // the incomplete sequence, as received
	out    []byte // output of the current Write
	cont   int    // UTF-8 continuation bytes still expected in ground state
	scont  int    // and inside a string
	prevC2 bool   // last string byte was 0xC2 (a UTF-8 encoded C1 may follow)
	head   bool   // the head of the string (OSC number, DCS header) was decided on
	closed bool
	modes  modes // terminal state changed by what passed
	// answers queues the answers to DA1 (answer.go); nil: none are given.
	answers     chan struct{}
	answersDone chan struct{} // closed once the queued answers are written, after Close
}

// New returns a Writer that writes the filtered stream to w.
func New(w io.Writer) *Writer {
	return &Writer{w: w, seq: make([]byte, 0, 64)}
}

// Write filters p and writes what passes to the underlying writer in one
// call. It reports len(p) when that write succeeds, whatever was dropped. An
// incomplete escape sequence at the end of p is held, not written, until a
// later Write completes it.
func (f *Writer) Write(p []byte) (int, error) {
	if f.closed {
		return 0, ErrClosed
	}
	f.out = f.out[:0]
	for i := 0; i < len(p); {
		if f.st == stGround && f.cont == 0 {
			// Fast path: a run of ASCII without ESC, ENQ, SO or SI, and of whole
			// UTF-8 characters that cannot encode a C1 control (their lead
			// byte is not 0xC2), passes as is.
			// So does a whole SGR sequence (colours: CSI digits, ';' or
			// ':', then 'm'), which the filter always keeps and which sets
			// no mode.
			j := passRun(p, i)
			if i == 0 && j == len(p) {
				// All of it passes: no copy.
				if _, err := f.w.Write(p); err != nil {
					return 0, err
				}
				return len(p), nil
			}
			if j > i {
				f.out = append(f.out, p[i:j]...)
				i = j
				continue
			}
		}
		f.step(p[i])
		i++
	}
	if len(f.out) == 0 {
		return len(p), nil
	}
	if _, err := f.w.Write(f.out); err != nil {
		return 0, err
	}
	if cap(f.out) > 64<<10 {
		f.out = nil // do not keep a huge buffer after one large write
	}
	return len(p), nil
}

// Flush ends the stream for now: an escape sequence still incomplete is
// discarded (it was never written and never will be), a held UTF-8 lead byte
// is written, and the next Write starts in plain text. Call it when the
// program's output ends, so that a sequence it left open cannot swallow or
// combine with what is written next.
func (f *Writer) Flush() error {
	var tail []byte
	if f.st == stLeadC2 {
		tail = []byte{0xC2}
	}
	if f.st == stPass || f.st == stPassEsc {
		// A passed string was already partly written: close it in the
		// terminal too.
		tail = []byte("\x1b\\")
	}
	f.reset()
	if len(tail) > 0 {
		if _, err := f.w.Write(tail); err != nil {
			return err
		}
	}
	return nil
}

// Restore returns the sequences that undo the terminal modes the program
// set and left set, as seen in what passed the filter: leave the alternate
// screen it stayed on, show the cursor it hid, stop the mouse and focus
// reports and bracketed paste it started, pop the keyboard modes it pushed.
// It is empty when the program left nothing set, or undid what it set. Call
// it after the program's output has ended and been flushed.
func (f *Writer) Restore() []byte { return f.modes.restore() }

// Close flushes (see Flush) and makes later writes fail with ErrClosed. It
// does not close the underlying writer.
func (f *Writer) Close() error {
	err := f.Flush()
	if f.answers != nil && !f.closed {
		close(f.answers)
	}
	f.closed = true
	return err
}

func (f *Writer) reset() {
	f.st = stGround
	f.seq = f.seq[:0]
	f.cont, f.scont = 0, 0
	f.prevC2 = false
}

func (f *Writer) emit(b ...byte) { f.out = append(f.out, b...) }

// control acts on a C0 control byte met inside a sequence, where it takes
// effect at once: it passes, except ENQ.
func (f *Writer) control(b byte) {
	if b != enq {
		f.emit(b)
		f.modes.noteControl(b)
	}
}

// wholeChar is the length of the multi-byte UTF-8 character at the start of
// b when its lead byte is 0xC3 to 0xF4 and all its continuation bytes are in
// b, the bytes that ground passes one by one; 0 otherwise.
// passRun is where the run of p from i that passes as it is ends (Write's
// fast path): ASCII but ESC, ENQ, SO and SI, whole UTF-8 characters that
// cannot encode a C1 control, whole SGR sequences. Printable ASCII, most of
// any output, is taken eight bytes at a time.
func passRun(p []byte, i int) int {
	const lows, highs = 0x2020202020202020, 0x8080808080808080
	for i < len(p) {
		switch x := p[i]; {
		case x >= 0x20 && x < 0x80:
			i++
			for len(p)-i >= 8 {
				// A byte under 0x20 borrows into its high bit, one of 0x80 or more has
				// it set; no byte above the first such one borrows, so the lowest high
				// bit is the first byte that is not printable ASCII.
				w := binary.LittleEndian.Uint64(p[i:])
				if m := ((w - lows) | w) & highs; m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
		case x < 0x20 && x != 0x1b && x != enq && x != 0x0e && x != 0x0f:
			i++
		case x == 0x1b:
			n := sgrLen(p[i:])
			if n == 0 {
				return i
			}
			i += n
		default:
			n := wholeChar(p[i:])
			if n == 0 {
				return i
			}
			i += n
		}
	}
	return i
}

func wholeChar(b []byte) int {
	n := termseq.UTF8Len(b[0])
	if n == 0 || b[0] == 0xc2 || len(b) < n {
		return 0
	}
	for _, c := range b[1:n] {
		if !termseq.IsCont(c) {
			return 0
		}
	}
	return n
}

// sgrLen is the length of the whole SGR sequence (ESC [ params m, the
// params digits, ';' and ':' only) at the start of b; 0 when b does not start
// with one or it is incomplete or longer than a control sequence may be.
func sgrLen(b []byte) int {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b) && i < maxControlSeq; i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// drop forgets the sequence being collected and returns to plain text.
func (f *Writer) drop() {
	f.seq = f.seq[:0]
	f.st = stGround
}

// startEscape begins a new escape sequence at an ESC byte.
func (f *Writer) startEscape() {
	f.seq = append(f.seq[:0], 0x1b)
	f.st = stEscape
	f.cont = 0
}

// isAbort reports whether b cancels a sequence in progress (CAN, SUB).
func isAbort(b byte) bool { return b == 0x18 || b == 0x1a }

func (f *Writer) step(b byte) {
	switch f.st {
	case stGround:
		f.ground(b)
	case stLeadC2:
		f.st = stGround
		if b >= 0x80 && b <= 0x9f {
			f.seq = append(f.seq[:0], 0xc2, b)
			f.c1(b)
			return
		}
		f.emit(0xc2)
		if b >= 0xa0 && b <= 0xbf {
			f.emit(b)
			return
		}
		f.ground(b)
	case stEscape:
		f.escape(b)
	case stEscInter:
		f.escInter(b)
	case stCSI:
		f.csi(b)
	case stCSIDrop:
		f.csiDrop(b)
	case stString:
		f.str(b)
	case stStringEsc:
		if b == '\\' {
			f.seq = append(f.seq, b)
			f.finishString()
			return
		}
		// An ESC that is not ST aborts the string and starts a new sequence.
		f.startEscape()
		f.escape(b)
	case stDiscard, stPass:
		f.through(b, f.st == stPass)
	case stDiscardEsc, stPassEsc:
		pass := f.st == stPassEsc
		if b == '\\' {
			if pass {
				f.emit(0x1b, '\\')
			}
			f.drop()
			return
		}
		if pass {
			f.emit(0x1b, '\\') // close the passed string in the terminal
		}
		f.startEscape()
		f.escape(b)
	}
}

func (f *Writer) ground(b byte) {
	if f.cont > 0 && b >= 0x80 && b <= 0xbf {
		f.cont--
		f.emit(b)
		return
	}
	f.cont = 0
	switch {
	case b == 0x1b:
		f.startEscape()
	case b == enq:
	case b == 0xc2:
		f.st = stLeadC2
	case b >= 0x80 && b <= 0x9f:
		// A raw C1 byte that is not part of a UTF-8 character: some
		// terminals read it as a control.
		f.seq = append(f.seq[:0], b)
		f.c1(b)
	case b < 0x20:
		f.control(b)
	default:
		f.cont = max(termseq.UTF8Len(b)-1, 0)
		f.emit(b)
	}
}

// c1 handles a C1 control, 7-bit (after ESC) or 8-bit; f.seq holds its bytes.
func (f *Writer) c1(b byte) {
	switch termseq.KindOf(b) {
	case termseq.Control:
		f.st = stCSI
	case termseq.Command:
		f.beginString(kindOSC)
	case termseq.Device:
		f.beginString(kindDCS)
	case termseq.Private:
		f.beginString(kindOther)
	default:
		if keepC1(b) {
			f.emit(f.seq...)
		} else if b == 0x9a {
			f.answer() // DECID (ESC Z), the old form of DA1
		}
		f.drop()
	}
}

func (f *Writer) escape(b byte) {
	switch {
	case b == 0x1b:
		f.startEscape()
	case isAbort(b):
		f.drop()
	case b < 0x20:
		f.control(b) // C0 controls act immediately, even inside a sequence
	case b == 0x7f:
	case b <= 0x2f:
		f.seq = append(f.seq, b)
		f.st = stEscInter
	case b >= 0x40 && b <= 0x5f:
		// ESC Fe is the 7-bit form of a C1 control.
		c1, _ := termseq.FromEsc(b)
		f.seq = append(f.seq, b)
		f.c1(c1)
	case b < 0x7f:
		f.seq = append(f.seq, b)
		f.finishEsc()
	default:
		f.drop()
		f.ground(b)
	}
}

// finishEsc decides on a complete escape sequence.
func (f *Writer) finishEsc() {
	if keepEsc(f.seq) {
		f.emit(f.seq...)
		f.modes.noteEsc(f.seq)
	}
	f.drop()
}

func (f *Writer) escInter(b byte) {
	switch {
	case b == 0x1b:
		f.startEscape()
	case isAbort(b):
		f.drop()
	case b < 0x20:
		f.control(b)
	case b == 0x7f:
	case b <= 0x2f:
		if len(f.seq) >= maxControlSeq {
			f.drop()
			return
		}
		f.seq = append(f.seq, b)
	case b < 0x7f:
		f.seq = append(f.seq, b)
		f.finishEsc()
	default:
		f.drop()
		f.ground(b)
	}
}

func (f *Writer) csi(b byte) {
	switch {
	case b == 0x1b:
		f.startEscape()
	case isAbort(b):
		f.drop()
	case b < 0x20:
		f.control(b)
	case b == 0x7f:
	case b <= 0x3f:
		if len(f.seq) >= maxControlSeq {
			f.seq = f.seq[:0]
			f.st = stCSIDrop
			return
		}
		f.seq = append(f.seq, b)
	case b <= 0x7e:
		f.seq = append(f.seq, b)
		if keepCSI(f.seq) {
			f.emit(f.seq...)
			f.modes.noteCSI(f.seq)
		} else if isDA1(f.seq) {
			f.answer()
		}
		f.drop()
	default:
		f.drop()
		f.ground(b)
	}
}

func (f *Writer) csiDrop(b byte) {
	switch {
	case b == 0x1b:
		f.startEscape()
	case isAbort(b):
		f.drop()
	case b < 0x20:
		f.control(b)
	case b >= 0x40 && b <= 0x7e:
		f.drop()
	case b >= 0x80:
		f.drop()
		f.ground(b)
	}
}

// introLen is the length of the introducer at the start of seq: ESC x, or a
// UTF-8 encoded C1 (0xC2 x), or a raw C1 byte.
func introLen(seq []byte) int {
	if _, n := termseq.Intro(seq); n > 0 {
		return n
	}
	return 2
}

// ctlHeader is the parsed head of a control sequence or a DCS string.
type ctlHeader = termseq.Header

// parseControl parses parameter, intermediate and final bytes.
func parseControl(b []byte) (ctlHeader, bool) { return termseq.ParseHeader(b) }

func windowOpKept(params []byte) bool {
	first := params
	for i := 0; i < len(params); i++ {
		if params[i] == ';' || params[i] == ':' {
			first = params[:i]
			break
		}
	}
	return string(first) == "22" || string(first) == "23"
}
