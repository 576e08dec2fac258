package termfilter

import (
	"bytes"
	"unicode/utf8"
)

// The allow-list: what may reach the terminal. Every escape sequence, control
// sequence, control string and C1 control not named here is dropped, in its
// 7-bit form (ESC x), its 8-bit form (a raw C1 byte) and its UTF-8 encoded
// form (0xC2 x) alike. What is here draws on the screen, moves the cursor or
// sets a mode that Restore undoes (modes.go); nothing here makes the
// terminal answer, reaches the clipboard, files, the window or other
// programs, or outlives the run.

// keepC1 reports whether a C1 control that introduces no sequence or string
// passes on its own.
func keepC1(b byte) bool {
	switch b {
	case 0x84, // IND: index (line feed keeping the column)
		0x85, // NEL: next line
		0x88, // HTS: set a tab stop
		0x8d: // RI: reverse index (scroll down at the top)
		return true
	}
	return false
}

// keepEsc decides on a complete escape sequence that is not a C1 control in
// 7-bit form: ESC, its intermediates, its final byte.
func keepEsc(seq []byte) bool {
	switch len(seq) {
	case 2:
		switch seq[1] {
		case '7', // DECSC: save the cursor
			'8', // DECRC: restore it
			'=', // DECKPAM: application keypad (restored)
			'>', // DECKPNM: normal keypad
			'c': // RIS: back to the terminal's defaults
			return true
		}
	case 3:
		switch inter, final := seq[1], seq[2]; inter {
		case '(', ')': // designate G0 or G1 (restored)
			return final == 'B' || final == '0' || final == 'A'
		case ' ': // S7C1T, S8C1T: 7 or 8-bit controls in replies (restored)
			return final == 'F' || final == 'G'
		case '#': // DECDHL, DECSWL, DECDWL, DECALN: line size, screen test
			return final == '3' || final == '4' || final == '5' || final == '6' || final == '8'
		}
	}
	return false
}

// csiRule decides on the parameters of an allowed control sequence; nil
// accepts any.
type csiRule func(params []byte) bool

// csiKey packs a control sequence's private marker, single intermediate and
// final byte.
func csiKey(prefix, inter, final byte) uint32 {
	return uint32(prefix)<<16 | uint32(inter)<<8 | uint32(final)
}

// csiAllowed are the control sequences that may pass, by private marker,
// intermediate and final byte; a sequence with more than one intermediate
// byte never passes.
var csiAllowed = map[uint32]csiRule{
	// Cursor movement.
	csiKey(0, 0, 'A'): nil, // CUU
	csiKey(0, 0, 'B'): nil, // CUD
	csiKey(0, 0, 'C'): nil, // CUF
	csiKey(0, 0, 'D'): nil, // CUB
	csiKey(0, 0, 'E'): nil, // CNL
	csiKey(0, 0, 'F'): nil, // CPL
	csiKey(0, 0, 'G'): nil, // CHA
	csiKey(0, 0, 'H'): nil, // CUP
	csiKey(0, 0, 'I'): nil, // CHT
	csiKey(0, 0, 'Z'): nil, // CBT
	csiKey(0, 0, '`'): nil, // HPA
	csiKey(0, 0, 'a'): nil, // HPR
	csiKey(0, 0, 'd'): nil, // VPA
	csiKey(0, 0, 'e'): nil, // VPR
	csiKey(0, 0, 'f'): nil, // HVP
	csiKey(0, 0, 's'): nil, // SCOSC, or DECSLRM (margins) with parameters
	csiKey(0, 0, 'u'): nil, // SCORC
	// Erasing, inserting, deleting, repeating.
	csiKey(0, 0, '@'):   nil, // ICH
	csiKey(0, 0, 'J'):   nil, // ED (3: the scrollback too)
	csiKey(0, 0, 'K'):   nil, // EL
	csiKey(0, 0, 'L'):   nil, // IL
	csiKey(0, 0, 'M'):   nil, // DL
	csiKey(0, 0, 'P'):   nil, // DCH
	csiKey(0, 0, 'X'):   nil, // ECH
	csiKey(0, 0, 'b'):   nil, // REP
	csiKey('?', 0, 'J'): nil, // DECSED
	csiKey('?', 0, 'K'): nil, // DECSEL
	csiKey(0, '"', 'q'): nil, // DECSCA: protected characters for DECSED
	csiKey(0, ' ', '@'): nil, // SL: scroll left
	csiKey(0, ' ', 'A'): nil, // SR: scroll right
	// Scrolling and regions.
	csiKey(0, 0, 'S'): nil,        // SU
	csiKey(0, 0, 'T'): oneParam,   // SD; with five it starts xterm's highlight mouse tracking
	csiKey(0, 0, 'r'): nil,        // DECSTBM: scroll region
	csiKey(0, 0, 'g'): nil,        // TBC: clear tab stops
	csiKey(0, 0, 'm'): nil,        // SGR: colours and attributes
	csiKey(0, 0, 't'): titleStack, // XTWINOPS: only the title stack (22, 23)
	// Modes, each undone by Restore when left set.
	csiKey(0, 0, 'h'):   ansiModes, // SM
	csiKey(0, 0, 'l'):   ansiModes, // RM
	csiKey('?', 0, 'h'): decModesOnly,
	csiKey('?', 0, 'l'): decModesOnly,
	csiKey('?', 0, 's'): decModesOnly, // XTSAVE
	csiKey('?', 0, 'r'): decModesOnly, // XTRESTORE
	csiKey(0, '!', 'p'): nil,          // DECSTR: soft reset
	csiKey(0, ' ', 'q'): nil,          // DECSCUSR: cursor style
	csiKey('>', 0, 'm'): nil,          // XTMODKEYS
	csiKey('>', 0, 'u'): nil,          // kitty keyboard: push
	csiKey('<', 0, 'u'): nil,          // kitty keyboard: pop
	csiKey('=', 0, 'u'): nil,          // kitty keyboard: set flags
}

// ansiAllowed are the ANSI modes SM and RM may change: insert mode (IRM)
// alone. KAM locks the keyboard, SRM turns local echo on, LNM changes what
// Enter sends: none is what a program on a screen needs.
var ansiAllowed = []int{4}

func ansiModes(p []byte) bool {
	return allIn(p, func(m int) bool { return indexOf(ansiAllowed, m) >= 0 })
}

// decModesOnly accepts DEC private modes of decModes and the alternate
// screens, every one of them, and no other.
func decModesOnly(p []byte) bool {
	return allIn(p, func(m int) bool { return decIndex(m) >= 0 || isAltScreen(m) || m == 1048 })
}

// allIn reports whether the sequence names at least one mode and every mode
// it names is accepted.
func allIn(p []byte, ok func(int) bool) bool {
	if len(p) == 0 || bytes.IndexByte(p, ':') >= 0 {
		return false
	}
	for _, f := range bytes.Split(p, []byte(";")) {
		m, good := number(f)
		if !good || !ok(m) {
			return false
		}
	}
	return true
}

func indexOf(list []int, m int) int {
	for i, x := range list {
		if x == m {
			return i
		}
	}
	return -1
}

func oneParam(p []byte) bool { return bytes.IndexByte(p, ';') < 0 }

func titleStack(p []byte) bool { return windowOpKept(p) }

// number parses a decimal parameter: digits only, at most 5.
func number(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// keepCSI decides on a complete control sequence: SGR at once, the rest by
// csiAllowed.
func keepCSI(seq []byte) bool {
	h, ok := parseControl(seq[introLen(seq):])
	// Private marker bytes past the first are no parameters a terminal
	// agrees on.
	if !ok || len(h.Inter) > 1 || bytes.ContainsAny(h.Params, "<=>?") {
		return false
	}
	if h.Final == 'm' && h.Prefix == 0 && len(h.Inter) == 0 {
		return true // SGR, by far the most common
	}
	var inter byte
	if len(h.Inter) == 1 {
		inter = h.Inter[0]
	}
	rule, ok := csiAllowed[csiKey(h.Prefix, inter, h.Final)]
	return ok && (rule == nil || rule(h.Params))
}

// oscAllowed are the OSC commands that may pass, each with its check of the
// body (after the number).
var oscAllowed = map[int]func(args []byte) bool{
	0:   title, // icon name and window title
	1:   title, // icon name
	2:   title, // window title
	4:   colourSets,
	8:   hyperlink,
	10:  colourSets, // foreground (restored with 110)
	11:  colourSets, // background (111)
	12:  colourSets, // cursor colour (112)
	104: noQuery,    // reset palette colours
	110: noArgs,     // reset foreground
	111: noArgs,     // reset background
	112: noArgs,     // reset cursor colour
}

// title accepts text with no control and no bidirectional formatting
// character: what a window list shows as it is.
func title(args []byte) bool {
	if !utf8.Valid(args) {
		return false
	}
	for _, r := range string(args) {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x061c || r == 0x200e || r == 0x200f ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return false
		}
	}
	return true
}

// colourSets accepts colour settings, never a "?" that asks for one.
func colourSets(args []byte) bool {
	if len(args) == 0 || !printable(args) {
		return false
	}
	for _, f := range bytes.Split(args, []byte(";")) {
		if string(f) == "?" {
			return false
		}
	}
	return true
}

func noQuery(args []byte) bool { return printable(args) && bytes.IndexByte(args, '?') < 0 }

func noArgs(args []byte) bool { return len(args) == 0 }

// hyperlink accepts OSC 8 "params;URI" with an http or https URI, or none
// (the end of a link). file://, ssh:// and the rest name what is on the
// host, or run something when clicked.
func hyperlink(args []byte) bool {
	params, uri, ok := bytes.Cut(args, []byte(";"))
	if !ok || !printable(params) || !printable(uri) || bytes.IndexByte(uri, ' ') >= 0 {
		return false
	}
	if len(uri) == 0 {
		return true
	}
	scheme, rest, ok := bytes.Cut(uri, []byte("://"))
	if !ok || len(rest) == 0 {
		return false
	}
	s := string(bytes.ToLower(scheme))
	return s == "http" || s == "https"
}

// printable reports whether b is printable ASCII.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// oscNumberAllowed reports whether an OSC command may pass, before its body
// is known: others are dropped as they stream by.
func oscNumberAllowed(n int) bool {
	_, ok := oscAllowed[n]
	return ok
}

// keepOSC decides on a whole OSC body: its number, then its arguments.
func keepOSC(body []byte) bool {
	num, args, _ := bytes.Cut(body, []byte(";"))
	n, ok := number(num)
	if !ok {
		return false
	}
	check, ok := oscAllowed[n]
	return ok && check(args)
}
