package pane

// The clamp: what the agent writes, read with the relay's tokenizer and
// bounded before the emulator sees it.

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/shadow-sandbox/shadow/internal/termseq"
)

// clamper rewrites what the agent writes before it reaches the emulator. It
// reads control sequences and strings in every form a terminal reads them,
// 7-bit (ESC [), 8-bit (0x9B) and UTF-8 encoded (0xC2 0x9B), with the
// tokenizer the relay's filter uses (internal/termseq), and hands the
// emulator their 7-bit form only, whole: numeric parameters capped, the
// counts the emulator loops over bounded by the screen, scroll margins kept
// inside it, over-long sequences dropped. Window titles (OSC 0, 1, 2) are
// kept for the app and never reach the emulator; SOS, PM and APC strings
// are dropped. It keeps its state across writes, so a sequence or a
// character split between reads is handled.
type clamper struct {
	w, h  int
	state uint8
	seq   []byte // the CSI sequence being collected, in 7-bit form from ESC [ on
	over  bool   // the sequence or string grew past its bound: drop it
	// margins is set once the agent set scroll margins (until a reset):
	// line feeds then no longer simply scroll the whole screen.
	margins bool

	// utf holds the bytes of a UTF-8 character begun in the ground state.
	utf [utf8.UTFMax]byte
	un  int

	// str is the string being collected (OSC or DCS), its introducer in
	// 7-bit form first; kind is ']', 'P', or 'X' for one that is dropped.
	str   []byte
	kind  byte
	scont int  // UTF-8 continuation bytes the string still expects
	lead  bool // the last byte of the string was 0xC2: a UTF-8 encoded C1 may follow

	// mouse is set while the agent asked for mouse reports (DEC modes 9,
	// 1000, 1002, 1003): the mouse wheel is then the agent's.
	mouse bool

	// title is the window title the agent set last (OSC 0 or 2), as sent;
	// titled reports that one was set since the pane last took it.
	title  []byte
	titled bool
}

const (
	stGround uint8 = iota
	stUTF8         // inside a UTF-8 character
	stEsc
	stCSI
	stString    // inside an OSC, DCS, SOS, PM or APC string
	stStringEsc // an ESC inside a string: maybe the ST that ends it
)

// maxString is the longest OSC or DCS string passed on; a longer one is
// dropped (an OSC 52 clipboard write, which the pane ignores anyway).
const maxString = 4096

// filterInto appends the bytes to feed the emulator for chunk b to out.
func (c *clamper) filterInto(out, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if c.state == stGround {
			// The common case: a run of ASCII and of whole UTF-8 characters
			// that encode no C1 control, passed as it is.
			j := i
			for j < len(b) {
				if x := b[j]; x < 0x80 && x != termseq.ESC {
					j++
				} else if n := wholeRune(b[j:]); n > 0 {
					j += n
				} else {
					break
				}
			}
			if j > i {
				out = append(out, b[i:j]...)
				i = j - 1
				continue
			}
		}
		out = c.step(out, b[i])
	}
	return out
}

// wholeRune is the length of the whole multi-byte UTF-8 character at the
// start of b, or 0 when b starts with none or with a UTF-8 encoded C1 control.
func wholeRune(b []byte) int {
	n := termseq.UTF8Len(b[0])
	if n == 0 || len(b) < n || b[0] == 0xc2 && termseq.IsC1(b[1]) {
		return 0
	}
	for _, x := range b[1:n] {
		if !termseq.IsCont(x) {
			return 0
		}
	}
	return n
}

// step feeds one byte.
func (c *clamper) step(out []byte, x byte) []byte {
	switch c.state {
	case stGround:
		return c.ground(out, x)
	case stUTF8:
		return c.utf8(out, x)
	case stEsc:
		return c.esc(out, x)
	case stCSI:
		return c.csi(out, x)
	default:
		return c.string(out, x)
	}
}

func (c *clamper) ground(out []byte, x byte) []byte {
	switch {
	case x == termseq.ESC:
		c.state = stEsc
	case termseq.IsC1(x):
		return c.c1(out, x)
	case termseq.UTF8Len(x) > 0:
		c.utf[0], c.un, c.state = x, 1, stUTF8
	case x >= 0x80:
		// A stray continuation byte, or one that is never UTF-8: the
		// emulator ignores it.
	default:
		out = append(out, x)
	}
	return out
}

// utf8 collects a UTF-8 character. The emulator takes the bytes after a
// lead byte as the character's whatever they are, so a character cut short
// is passed on as U+FFFD and the byte that cut it is read afresh.
func (c *clamper) utf8(out []byte, x byte) []byte {
	if !termseq.IsCont(x) {
		c.state, c.un = stGround, 0
		return c.ground(append(out, "\uFFFD"...), x)
	}
	if c.un == 1 && c.utf[0] == 0xc2 && termseq.IsC1(x) {
		c.state, c.un = stGround, 0
		return c.c1(out, x) // a UTF-8 encoded C1 control
	}
	c.utf[c.un] = x
	c.un++
	if c.un == termseq.UTF8Len(c.utf[0]) {
		out = append(out, c.utf[:c.un]...)
		c.state, c.un = stGround, 0
	}
	return out
}

// c1 acts on a C1 control in any form, given in its 8-bit form.
func (c *clamper) c1(out []byte, x byte) []byte {
	c.state = stGround
	switch termseq.KindOf(x) {
	case termseq.Control:
		c.state, c.seq, c.over = stCSI, append(c.seq[:0], termseq.ESC, '['), false
	case termseq.Command:
		c.beginString(']')
	case termseq.Device:
		c.beginString('P')
	case termseq.Private:
		c.beginString('X')
	case termseq.End:
		// ST with no string to end.
	default:
		out = append(out, termseq.ESC, x-0x40)
	}
	return out
}

func (c *clamper) beginString(kind byte) {
	c.state, c.kind, c.over = stString, kind, false
	c.str = append(c.str[:0], termseq.ESC, kind)
	c.scont, c.lead = 0, false
}

func (c *clamper) esc(out []byte, x byte) []byte {
	if c1, ok := termseq.FromEsc(x); ok && termseq.KindOf(c1) != termseq.Single {
		return c.c1(out, c1)
	}
	switch {
	case x == termseq.ESC:
	case x == 0x18 || x == 0x1a: // CAN, SUB: the sequence is abandoned
		c.state = stGround
	case x < 0x20:
		out = append(out, x) // C0 controls act inside a sequence
	case x == 0x7f:
	case x < 0x7f:
		c.state = stGround
		if x == 'c' { // RIS: the emulator resets its margins and modes too
			c.margins, c.mouse = false, false
		}
		out = append(out, termseq.ESC, x)
	default:
		c.state = stGround
		return c.ground(out, x)
	}
	return out
}

func (c *clamper) csi(out []byte, x byte) []byte {
	switch {
	case x == 0x18 || x == 0x1a:
		c.state, c.seq = stGround, c.seq[:0]
	case x == termseq.ESC:
		c.state, c.seq = stEsc, c.seq[:0]
	case x < 0x20:
		out = append(out, x)
	case x == 0x7f:
	case x >= 0x40 && x <= 0x7e:
		if !c.over {
			c.noteMouse(c.seq, x)
			out = append(out, c.rewrite(c.seq, x)...)
		}
		c.state, c.seq = stGround, c.seq[:0]
	case x >= 0x80:
		// A C1 control or a character ends the sequence unfinished.
		c.state, c.seq = stGround, c.seq[:0]
		return c.ground(out, x)
	default:
		if len(c.seq) >= maxSeq {
			c.over = true
			return out
		}
		c.seq = append(c.seq, x)
	}
	return out
}

// string collects an OSC or DCS string, or skips an SOS, PM or APC one. It
// ends at ST (ESC \, raw 0x9C or UTF-8 encoded 0xC2 0x9C), at BEL for OSC,
// and is abandoned at CAN, SUB, another ESC sequence or another C1 control,
// which then acts. A byte 0x80-0x9F that continues a UTF-8 character of the
// string is text, as the relay's filter reads it.
func (c *clamper) string(out []byte, x byte) []byte {
	if c.state == stStringEsc {
		if x == '\\' {
			return c.endString(out, false)
		}
		c.state = stEsc
		return c.esc(out, x)
	}
	switch {
	case x == termseq.ESC:
		c.state = stStringEsc
		return out
	case x == 0x18 || x == 0x1a:
		c.state = stGround
		return out
	case x == 0x07 && c.kind == ']':
		return c.endString(out, true)
	case termseq.IsC1(x) && (c.lead || c.scont == 0):
		if c.lead {
			c.str = c.str[:len(c.str)-1] // the 0xC2 was the C1's
		}
		if x == termseq.ST {
			return c.endString(out, false)
		}
		return c.c1(out, x)
	case x < 0x20 && c.kind == ']':
		return out // the emulator ignores controls inside an OSC string
	}
	switch n := termseq.UTF8Len(x); {
	case termseq.IsCont(x):
		c.scont = max(c.scont-1, 0)
	case n > 0:
		c.scont = n - 1
	default:
		c.scont = 0
	}
	c.lead = x == 0xc2
	if c.kind == 'X' || c.over {
		return out
	}
	if len(c.str) >= maxString {
		c.over = true
		return out
	}
	c.str = append(c.str, x)
	return out
}

// endString acts on a finished string: a title is kept for the app; any
// other OSC or DCS string goes to the emulator in 7-bit form, unless it is
// over long or holds a byte 0x9C, which the emulator would take for ST.
func (c *clamper) endString(out []byte, bel bool) []byte {
	c.state = stGround
	if c.kind == 'X' || c.over {
		return out
	}
	body := c.str[2:]
	if c.kind == ']' {
		num, args, _ := bytes.Cut(body, []byte(";"))
		switch string(num) {
		case "0", "2":
			c.title, c.titled = append(c.title[:0], args...), true
			return out
		case "1": // the icon name: nothing shows it
			return out
		}
	}
	if bytes.IndexByte(body, termseq.ST) >= 0 {
		return out
	}
	out = append(out, c.str...)
	if bel {
		return append(out, 0x07)
	}
	return append(out, termseq.ESC, '\\')
}

// noteMouse follows the mouse modes: DECSET and DECRST of 9, 1000, 1002 or
// 1003, and DECSTR, which resets them.
func (c *clamper) noteMouse(seq []byte, final byte) {
	if final == 'p' && string(seq[2:]) == "!" {
		c.mouse = false
		return
	}
	if (final != 'h' && final != 'l') || len(seq) < 3 || seq[2] != '?' {
		return
	}
	for _, m := range strings.Split(string(seq[3:]), ";") {
		switch m {
		case "9", "1000", "1002", "1003":
			c.mouse = final == 'h'
		}
	}
}

// clone is a copy of the clamp that shares nothing with it.
func (c *clamper) clone() clamper {
	d := *c
	d.seq = append([]byte(nil), c.seq...)
	d.str = append([]byte(nil), c.str...)
	d.title = append([]byte(nil), c.title...)
	return d
}

// countLimit is what bounds the first parameter of a control sequence (no
// private marker, no intermediate) that the emulator repeats or loops over:
// the screen's width for what moves, edits or repeats along a row, its
// height for what moves, inserts, deletes or scrolls rows; 0 for the others.
// So no sequence costs the emulator more per byte than a line feed that
// scrolls the screen (see TestPaneOutputCostIsBounded): a repeat of a
// screenful, 7 bytes, cost as much as 1,920 characters.
func (c *clamper) countLimit(final byte) int {
	switch final {
	case 'b', '@', 'P', 'X', 'C', 'D', 'G', '`', 'a', 'I', 'Z': // REP ICH DCH ECH CUF CUB CHA HPA HPR CHT CBT
		return c.w
	case 'A', 'B', 'E', 'F', 'd', 'e', 'L', 'M', 'S', 'T': // CUU CUD CNL CPL VPA VPR IL DL SU SD
		return c.h
	}
	return 0
}

// rewrite returns the CSI sequence seq (ESC [ params...) ending in final,
// with its numbers clamped.
func (c *clamper) rewrite(seq []byte, final byte) []byte {
	if len(seq) < 2 {
		return nil
	}
	limit := c.countLimit(final)
	if limit == 0 && final != 'r' && final != 's' && final != 't' && shortNumbers(seq[2:]) {
		return append(seq, final) // nothing to clamp: the common case, without allocating
	}
	h, ok := termseq.ParseHeader(append(seq[2:len(seq):len(seq)], final))
	if !ok || h.Final != final || h.StrayMarker() {
		return nil
	}
	prefix, params, inter := "", string(h.Params), string(h.Inter)
	if h.Prefix != 0 {
		prefix = string(h.Prefix)
	}
	parts := strings.Split(params, ";")
	nums := make([]int, len(parts))
	for i, f := range parts {
		// Sub-parameters (colons) are kept as written, each part clamped.
		subs := strings.Split(f, ":")
		for j, s := range subs {
			subs[j] = clampNumber(s)
		}
		parts[i] = strings.Join(subs, ":")
		nums[i] = atoiSmall(subs[0])
	}
	if prefix == "" && inter == "" {
		switch final {
		case 'r': // DECSTBM: margins inside the screen, top above bottom
			top, bot := 1, c.h
			if len(nums) > 0 && nums[0] > 0 {
				top = nums[0]
			}
			if len(nums) > 1 && nums[1] > 0 {
				bot = nums[1]
			}
			top, bot = min(max(top, 1), c.h), min(max(bot, 1), c.h)
			if top >= bot {
				return nil
			}
			if top != 1 || bot != c.h {
				c.margins = true
			}
			parts = []string{fmt.Sprint(top), fmt.Sprint(bot)}
		case 's': // DECSLRM (or save cursor when it has no parameters)
			if params == "" {
				break
			}
			l, r := 1, c.w
			if len(nums) > 0 && nums[0] > 0 {
				l = nums[0]
			}
			if len(nums) > 1 && nums[1] > 0 {
				r = nums[1]
			}
			l, r = min(max(l, 1), c.w), min(max(r, 1), c.w)
			if l >= r {
				return nil
			}
			c.margins = true
			parts = []string{fmt.Sprint(l), fmt.Sprint(r)}
		case 't': // window manipulation: reports and resizes of the real window, never useful in a pane
			return nil
		default:
			if limit > 0 && len(parts) > 0 && nums[0] > limit {
				parts[0] = fmt.Sprint(limit)
			}
		}
	}
	var b strings.Builder
	b.WriteString("\x1b[")
	b.WriteString(prefix)
	if params != "" || len(parts) > 1 {
		b.WriteString(strings.Join(parts, ";"))
	}
	b.WriteString(inter)
	b.WriteByte(final)
	return []byte(b.String())
}

// shortNumbers reports whether every run of digits in b has at most four
// digits, so no parameter can exceed maxParam.
func shortNumbers(b []byte) bool {
	run := 0
	for _, x := range b {
		if x >= '0' && x <= '9' {
			run++
			if run > 4 {
				return false
			}
		} else {
			run = 0
		}
	}
	return true
}

// clampNumber caps a decimal parameter at maxParam; anything not a plain
// number is kept as it is.
func clampNumber(s string) string {
	if s == "" {
		return s
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return s
		}
	}
	t := strings.TrimLeft(s, "0")
	if len(t) > 4 || atoiSmall(t) > maxParam {
		return fmt.Sprint(maxParam)
	}
	return s
}

// atoiSmall parses a clamped decimal parameter (0 when empty or not a number).
func atoiSmall(s string) int {
	n := 0
	for i := 0; i < len(s) && i < 5; i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}
