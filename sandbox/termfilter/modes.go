package termfilter

import (
	"bytes"
	"strconv"
)

// modes is what the filtered program changed in the terminal's state, as
// seen in the sequences that passed, so that Restore can undo exactly what
// it left changed and nothing else. Sending a reset the program never needed
// has effects of its own: leaving the alternate screen when not on it
// (ESC[?1049l) restores a cursor position saved long before, in tmux and
// xterm, and what is printed next lands over earlier output.
type modes struct {
	dec       [len(decModes)]int8 // per decModes entry: 0 untouched, 1 set, -1 reset
	saved     [len(decModes)]int8 // XTSAVE'd values, same encoding, and savedUntouched
	alt       int                 // DEC mode that entered the alternate screen, 0 on the main one
	kittyMain int                 // kitty keyboard entries pushed on the main screen's stack
	kittyAlt  int                 // and on the alternate screen's
	kittyBase bool                // flags of the bottom entry changed (CSI = … u with nothing pushed)
	keypad    bool                // application keypad (DECKPAM)
	c1Bits8   bool                // 8-bit controls in replies (S8C1T)
	modKeys   [8]bool             // XTMODKEYS resources set to a value
	titles    int                 // titles pushed on the title stack
	cursor    bool                // cursor style changed (DECSCUSR other than 0)
	insert    bool                // insert mode (IRM, ANSI mode 4)
	g0        bool                // G0 designated other than ASCII (ESC ( 0, ESC ( A)
	shifted   bool                // shifted out to G1 (SO)
	colours   [4]bool             // per oscColours entry: set by the program
	region    bool                // scrolling region set (DECSTBM with parameters)
}

// oscColours are the colours an OSC sets and the OSC that resets them.
var oscColours = [len(modes{}.colours)]struct{ set, reset int }{
	{4, 104},  // palette
	{10, 110}, // foreground
	{11, 111}, // background
	{12, 112}, // cursor
}

// decModes are the DEC private modes the filter lets through, besides the
// alternate screens (47, 1047, 1049) and 1048 (save the cursor: restoring it
// would move the cursor), with their value at a shell prompt: Restore puts
// back each one the program left changed. Every other DEC mode is dropped
// (csiAllowed): those that follow the user's settings (auto-repeat, alt
// sends escape), resize the window (DECCOLM) or make the terminal wait for
// the program (highlight mouse tracking, 1001).
var decModes = [...]struct {
	mode int
	set  bool // the value at a shell prompt
}{
	{1, false},    // DECCKM: application cursor keys
	{5, false},    // DECSCNM: reverse video
	{6, false},    // DECOM: origin mode
	{7, true},     // DECAWM: autowrap
	{9, false},    // X10 mouse reporting
	{12, false},   // cursor blinking (terminfo's cnorm resets it)
	{25, true},    // DECTCEM: cursor visible
	{66, false},   // DECNKM: application keypad
	{69, false},   // DECLRMM: left and right margins
	{1000, false}, // mouse: button reporting
	{1002, false}, // mouse: motion while a button is down
	{1003, false}, // mouse: all motion
	{1004, false}, // focus in and out reports
	{1005, false}, // mouse: UTF-8 coordinates
	{1006, false}, // mouse: SGR coordinates
	{1015, false}, // mouse: urxvt coordinates
	{1016, false}, // mouse: SGR pixel coordinates
	{2004, false}, // bracketed paste
	{2026, false}, // synchronized output: the terminal stops drawing
	{2031, false}, // colour scheme change reports
	{2048, false}, // in-band window size reports
}

// maxTitles is the depth of xterm's title stack: pushes past it are lost,
// and as many pops undo them all.
const maxTitles = 10

// savedUntouched marks a mode saved (XTSAVE) before the program changed it.
const savedUntouched = 2

// isAltScreen reports whether a DEC mode switches to the alternate screen.
func isAltScreen(m int) bool { return m == 47 || m == 1047 || m == 1049 }

func decIndex(m int) int {
	for i, d := range decModes {
		if d.mode == m {
			return i
		}
	}
	return -1
}

// noteCSI records what a control sequence that passed the filter changes.
func (s *modes) noteCSI(seq []byte) {
	final := seq[len(seq)-1]
	switch final {
	case 'm':
		// SGR, by far the most common, changes no mode: only XTMODKEYS
		// (CSI > … m) does.
		if i := introLen(seq); i >= len(seq) || seq[i] != '>' {
			return
		}
	case 'h', 'l', 's', 'r', 'u', 't', 'q', 'p':
	default:
		return
	}
	h, ok := parseControl(seq[introLen(seq):])
	if !ok {
		return
	}
	inter := string(h.Inter)
	switch {
	case h.Prefix == 0 && inter == "" && (final == 'h' || final == 'l'): // SM, RM
		for _, m := range params(h.Params) {
			if m == 4 {
				s.insert = final == 'h'
			}
		}
	case h.Prefix == '?' && inter == "" && (final == 'h' || final == 'l'):
		for _, m := range params(h.Params) {
			s.setDEC(m, final == 'h')
		}
	case h.Prefix == '?' && inter == "" && final == 's': // XTSAVE
		for _, m := range params(h.Params) {
			if i := decIndex(m); i >= 0 {
				s.saved[i] = s.dec[i]
				if s.saved[i] == 0 {
					s.saved[i] = savedUntouched
				}
			}
		}
	case h.Prefix == '?' && inter == "" && final == 'r': // XTRESTORE
		for _, m := range params(h.Params) {
			i := decIndex(m)
			switch {
			case i < 0:
			case s.saved[i] == savedUntouched:
				s.dec[i] = 0
			case s.saved[i] != 0:
				s.dec[i] = s.saved[i]
			case decModes[i].set:
				// Saved before the program ran, so unknown: count it
				// as changed from the prompt's value.
				s.dec[i] = -1
			default:
				s.dec[i] = 1
			}
		}
	case h.Prefix == '>' && inter == "" && final == 'u': // kitty keyboard: push
		*s.kittyStack()++
	case h.Prefix == '<' && inter == "" && final == 'u': // kitty keyboard: pop n
		n := 1
		if p := params(h.Params); len(p) > 0 && p[0] > 0 {
			n = p[0]
		}
		st := s.kittyStack()
		*st = max(0, *st-n)
	case h.Prefix == '=' && inter == "" && final == 'u':
		// kitty keyboard: set (mode 1), add (2) or clear (3) flags of the
		// top entry; only the bottom one of the main screen outlives the
		// pops.
		if *s.kittyStack() > 0 || s.alt != 0 {
			break
		}
		flags, mode := 0, 1
		if p := params(h.Params); len(p) > 1 && p[1] != 0 {
			flags, mode = p[0], p[1]
		} else if len(p) > 0 {
			flags = p[0]
		}
		switch {
		case mode == 1:
			s.kittyBase = flags != 0
		case mode == 2 && flags != 0:
			s.kittyBase = true
		}
	case h.Prefix == '>' && inter == "" && final == 'm':
		// XTMODKEYS: a resource with a value is set, without one reset;
		// no resource resets them all.
		p := params(h.Params)
		switch {
		case len(p) == 0:
			s.modKeys = [8]bool{}
		case p[0] < len(s.modKeys):
			fields := bytes.Split(h.Params, []byte(";"))
			s.modKeys[p[0]] = len(fields) > 1 && len(fields[1]) > 0
		}
	case h.Prefix == 0 && inter == "" && final == 't': // title stack
		switch p := params(h.Params); {
		case len(p) > 0 && p[0] == 22:
			s.titles = min(s.titles+1, maxTitles)
		case len(p) > 0 && p[0] == 23:
			s.titles = max(0, s.titles-1)
		}
	case h.Prefix == 0 && inter == " " && final == 'q': // DECSCUSR
		p := params(h.Params)
		s.cursor = len(p) > 0 && p[0] != 0
	case h.Prefix == 0 && inter == "" && final == 'r': // DECSTBM
		s.region = false
		for _, p := range params(h.Params) {
			s.region = s.region || p > 0
		}
	case h.Prefix == 0 && inter == "!" && final == 'p': // DECSTR: soft reset
		s.region = false
		s.setDEC(25, true)
		s.setDEC(1, false)
		s.setDEC(6, false)
		s.setDEC(7, true)
		s.keypad = false
		s.insert = false
		s.g0, s.shifted = false, false
	}
}

// noteControl records what a C0 control that passed changes: the shift
// between G0 and G1.
func (s *modes) noteControl(b byte) {
	switch b {
	case 0x0e: // SO
		s.shifted = true
	case 0x0f: // SI
		s.shifted = false
	}
}

// noteOSC records the colours a kept OSC sets or resets.
func (s *modes) noteOSC(n int) {
	for i, c := range oscColours {
		switch n {
		case c.set:
			s.colours[i] = true
		case c.reset:
			s.colours[i] = false
		}
	}
}

// noteEsc records what an ESC sequence that passed the filter changes.
func (s *modes) noteEsc(seq []byte) {
	switch string(seq) {
	case "\x1b=": // DECKPAM
		s.keypad = true
	case "\x1b>": // DECKPNM
		s.keypad = false
	case "\x1b G": // S8C1T
		s.c1Bits8 = true
	case "\x1b F": // S7C1T
		s.c1Bits8 = false
	case "\x1bc": // RIS: the terminal is back to its defaults
		*s = modes{}
	case "\x1b(B":
		s.g0 = false
	case "\x1b(0", "\x1b(A":
		s.g0 = true
	}
}

func (s *modes) setDEC(m int, on bool) {
	if isAltScreen(m) {
		switch {
		case on && s.alt == 0:
			s.alt = m
		case !on:
			s.alt = 0
		}
		return
	}
	if i := decIndex(m); i >= 0 {
		s.dec[i] = -1
		if on {
			s.dec[i] = 1
		}
	}
}

func (s *modes) kittyStack() *int {
	if s.alt != 0 {
		return &s.kittyAlt
	}
	return &s.kittyMain
}

// restore returns the sequences that put back, at the end of the program,
// what it changed and left changed; nothing when it left nothing.
func (s *modes) restore() []byte {
	var b []byte
	csi := func(format ...string) {
		b = append(b, "\x1b["...)
		for _, f := range format {
			b = append(b, f...)
		}
	}
	dec := func(i int) bool { return s.dec[i] != 0 && (s.dec[i] > 0) != decModes[i].set }
	// Drawing first, so that the rest shows.
	if i := decIndex(2026); dec(i) {
		csi("?2026l")
	}
	if s.alt != 0 {
		if s.kittyAlt > 0 {
			csi("<", strconv.Itoa(s.kittyAlt), "u")
		}
		csi("?", strconv.Itoa(s.alt), "l")
	}
	if s.kittyMain > 0 {
		csi("<", strconv.Itoa(s.kittyMain), "u")
	}
	if s.kittyBase {
		csi("=0;1u")
	}
	for i, d := range decModes {
		if d.mode == 2026 || !dec(i) {
			continue
		}
		if d.set {
			csi("?", strconv.Itoa(d.mode), "h")
		} else {
			csi("?", strconv.Itoa(d.mode), "l")
		}
	}
	for r, set := range s.modKeys {
		if set {
			csi(">", strconv.Itoa(r), "m")
		}
	}
	for range s.titles {
		csi("23;0t")
	}
	if s.cursor {
		csi("0 q")
	}
	if s.insert {
		csi("4l")
	}
	if s.region {
		// DECSTBM homes the cursor: saved and restored around it.
		b = append(b, "\x1b7\x1b[r\x1b8"...)
	}
	if s.shifted {
		b = append(b, 0x0f) // SI
	}
	if s.g0 {
		b = append(b, "\x1b(B"...)
	}
	for i, c := range oscColours {
		if s.colours[i] {
			b = append(b, "\x1b]"...)
			b = strconv.AppendInt(b, int64(c.reset), 10)
			b = append(b, "\x1b\\"...)
		}
	}
	if s.keypad {
		b = append(b, "\x1b>"...)
	}
	if s.c1Bits8 {
		b = append(b, "\x1b F"...)
	}
	return b
}

// params parses the numeric parameters of a control sequence; an empty one
// is 0, a sub-parameter (after ':') is ignored.
func params(p []byte) []int {
	if len(p) == 0 {
		return nil
	}
	var out []int
	for _, f := range bytes.Split(p, []byte(";")) {
		if i := bytes.IndexByte(f, ':'); i >= 0 {
			f = f[:i]
		}
		n, err := strconv.Atoi(string(f))
		if err != nil || n < 0 {
			n = 0
		}
		out = append(out, n)
	}
	return out
}
