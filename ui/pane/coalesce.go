package pane

// Coalescing: a flood of plain lines costs the emulator a screenful per
// write, not a scroll per line.

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// coalesceBufs are the buffers one coalesced write works in (see
// coalesceWrite), kept for the next: a flood is written in many batches.
type coalesceBufs struct {
	out, region, clamped, drawn []byte
	lines                       []plainLine
}

// coalesceWrite rewrites a write so that the emulator, which scrolls by
// moving every cell of the screen, does not pay a screenful per line of a
// flood. In its stretches of plain lines (text, colours, CR, LF), lines
// that scroll the screen are drawn in place instead (see redrawRuns), the
// lines which would scroll off before the stretch ends not at all but for
// their colour changes, or, when that cannot be done exactly, the skipped
// lines become one scroll (see skipLines). When every row is drawn again
// later in the write with only cursor moves, erases and queries between,
// what was drawn before is left out too (see unseen). The cursor's row is
// followed through the stretches and the sequences that only move the
// cursor or erase (see cursorMove). st is the clamp's state before b, r0
// the cursor's row (or a row above it), col0 whether it is in the first
// column, w×h the screen. The result leaves the same screen, cursor, pen
// and replies to queries as b; only lines that scrolled off unseen are
// missing from the emulator's scrollback. It reports false when nothing
// was changed.
func coalesceWrite(bufs *coalesceBufs, b []byte, st clamper, r0 int, col0 bool, w, h int) (out []byte, changed bool) {
	defer func() {
		if recover() != nil {
			out, changed = nil, false // draw every line instead
		}
	}()
	out = bufs.out[:0]
	defer func() { bufs.out = out[:0] }()
	pos := 0
	// Where in out a drawing of every row starts, with nothing since that
	// cannot be redrawn unseen (see unseen); -1 when there is none.
	covered := -1
	lines := bufs.lines[:0]
	defer func() { bufs.lines = lines[:0] }()
	scratch := bufs.clamped[:0] // what the clamp would pass on: only its state is wanted
	defer func() { bufs.clamped = scratch[:0] }()
	// Output arrives in reads cut anywhere: the end of a character or of a
	// control sequence the last write began is followed as such.
	if st.state == stGround || st.state == stUTF8 {
		for pos < len(b) && pos < utf8.UTFMax-1 && b[pos]&0xc0 == 0x80 {
			pos++ // the cursor moves right, or wraps down
		}
		col0 = col0 && pos == 0
	} else if n, row, first, ok := seqEnd(b, st, r0, col0, h); ok {
		pos, r0, col0 = n, row, first
	}
	scratch = st.filterInto(scratch[:0], b[:pos])
	out = append(out, b[:pos]...)
	for pos < len(b) {
		if st.state == stGround && !st.margins {
			segs, n := plainLines(b[pos:], w, lines[:0])
			lines = segs
			if n > 0 {
				end := pos + n
				region := b[pos:end]
				full := -1
				if c, f, ok := coalesceLines(bufs.region[:0], region, segs, r0, col0, h); ok {
					region, full, changed = c, f, true
					bufs.region = c[:0]
				}
				if full >= 0 && covered >= 0 {
					// Every row is drawn again: what was drawn since the
					// last such drawing cannot be seen.
					bufs.drawn = append(append(bufs.drawn[:0], out[covered:]...), region[:full]...)
					if keep, ok := unseen(bufs.drawn, w, h); ok {
						out = append(out[:covered], keep...)
						region = region[full:]
						full = 0
					}
				}
				if full >= 0 {
					covered = len(out) + full
				}
				out = append(out, region...)
				// Text and line feeds only move the cursor down.
				ended := len(segs) // the lines ended by their line feed
				if b[end-1] != '\n' {
					ended--
				}
				r0 = min(h-1, r0+ended)
				col0 = ended == len(segs) && segs[ended-1].crlf
				pos = end
				continue
			}
			if n, row, first, ok := cursorMove(b[pos:], r0, col0, h); ok {
				out = append(out, b[pos:pos+n]...)
				r0, col0 = row, first
				pos += n
				continue
			}
		}
		// Anything else up to the next line feed is passed on as it is, and
		// leaves the cursor somewhere unknown.
		var next int
		next, scratch = passLine(b[pos:], &st, scratch)
		out = append(out, b[pos:pos+next]...)
		pos += next
		r0, col0 = 0, false
		covered = -1
	}
	return out, changed
}

// unseen is what must be kept of output b that is followed by a drawing of
// every row of a w×h screen which prints the last character: the SGR
// sequences from the last reset of the pen, and the status queries, each
// after a cursor move to where the cursor is by then, as b moves it. It
// reports false when b holds anything but plain text and sequences that
// only move the cursor or erase (see cursorMove), or a query where the
// cursor's place cannot be told.
func unseen(b []byte, w, h int) ([]byte, bool) {
	var (
		queries []byte
		pen     []byte // the SGR sequences from the last that resets the pen
		x, y    int
		exact   bool // whether the cursor is surely at x, y
	)
	for i := 0; i < len(b); {
		if b[i] != 0x1b {
			exact = false // text, CR, LF
			i++
			continue
		}
		n, _, _, ok := cursorMove(b[i:], 0, false, h)
		if !ok {
			return nil, false
		}
		seq := b[i : i+n]
		p, given, _ := csiParams(seq)
		count := p[0] // of a move: 1 when empty
		if given == 0 || seq[2] == ';' {
			count = 1
		}
		switch seq[n-1] {
		case 'm':
			if sgrResets(seq) {
				pen = pen[:0]
			}
			pen = append(pen, seq...)
		case 'H', 'f':
			x, y, exact = min(max(p[1], 1), w)-1, min(max(p[0], 1), h)-1, true
		case 'd':
			y = min(max(p[0], 1), h) - 1
		case 'A':
			y = max(y-count, 0)
		case 'B', 'e':
			y = min(y+count, h-1)
		case 'C', 'a':
			x = min(x+count, w-1)
		case 'D':
			x = max(x-count, 0)
		case 'G', '`':
			x = min(max(p[0], 1), w) - 1
		case 'n':
			if !exact {
				return nil, false
			}
			queries = fmt.Appendf(queries, "\x1b[%d;%dH", y+1, x+1)
			queries = append(queries, seq...)
		}
		i += n
	}
	return append(queries, pen...), true
}

// seqEnd recognises the end of a control sequence that an earlier write
// began (see cursorMove) at the start of b, given the clamp's state st
// before b.
func seqEnd(b []byte, st clamper, r0 int, col0 bool, h int) (n, row int, first, ok bool) {
	var seq []byte
	switch {
	case st.state == stCSI && !st.over:
		seq = st.seq
	case st.state == stEsc && len(b) > 0 && b[0] == '[':
		seq = []byte{0x1b}
	default:
		return 0, 0, false, false
	}
	end := 0
	for end < len(b) && end < 32 && (b[end] < 0x40 || b[end] > 0x7e || seq[len(seq)-1] == 0x1b && end == 0) {
		end++
	}
	if end >= len(b) || end >= 32 {
		return 0, 0, false, false
	}
	whole := append(append([]byte(nil), seq...), b[:end+1]...)
	if l, row, first, ok := cursorMove(whole, r0, col0, h); ok && l == len(whole) {
		return end + 1, row, first, true
	}
	return 0, 0, false, false
}

// compactOutput shortens output waiting for a pane of at most rows rows,
// whose clamp's state before it is st: of each stretch of plain lines with
// more than 2·rows+1 lines, only the last 2·rows+1 lines are kept, and of
// the lines before only their SGR sequences since the last reset of the
// pen. The kept lines bring the cursor to the bottom row, wherever it
// started, and then fill every row; so the pane shows the same screen,
// cursor and pen for any width, and misses only the dropped lines from its
// scrollback. It leaves a stretch alone when the dropped lines hold the
// last character printed (which REP repeats) and the kept ones print none,
// and when scroll margins are set (line feeds then scroll part of the
// screen only).
func compactOutput(dst, b []byte, st clamper, rows int) []byte {
	keep := 2*rows + 1
	out := dst
	var scratch []byte // what the clamp would pass on: only its state is wanted
	for pos := 0; pos < len(b); {
		if st.state == stGround && !st.margins {
			if segs, n := plainLines(b[pos:], 1, nil); n > 0 {
				out = append(out, compactLines(b[pos:pos+n], segs, keep)...)
				pos += n
				continue
			}
		}
		var next int
		next, scratch = passLine(b[pos:], &st, scratch)
		out = append(out, b[pos:pos+next]...)
		pos += next
	}
	return out
}

// passLine is how much of b, where no plain stretch starts, is passed on as
// it is: up to its next line feed, or that line feed alone. The clamp's
// state st follows it; what the clamp would pass on goes to scratch, whose
// buffer is returned for reuse.
func passLine(b []byte, st *clamper, scratch []byte) (int, []byte) {
	n := bytes.IndexByte(b, '\n')
	switch {
	case n < 0:
		n = len(b)
	case n == 0:
		n = 1
	}
	return n, st.filterInto(scratch[:0], b[:n])
}

// compactLines keeps the last keep lines of a plain stretch b split into
// its lines segs (see compactOutput).
func compactLines(b []byte, segs []plainLine, keep int) []byte {
	m := len(segs)
	if m > 0 && b[len(b)-1] != '\n' {
		m-- // the unended tail is kept
	}
	if m <= keep {
		return b
	}
	dropped, kept := segs[:m-keep], segs[m-keep:]
	if !slices.ContainsFunc(kept, func(s plainLine) bool { return s.last }) &&
		slices.ContainsFunc(dropped, func(s plainLine) bool { return s.ascii }) {
		return b
	}
	from := dropped[0].start
	for k := len(dropped) - 1; k >= 0; k-- {
		if dropped[k].reset >= 0 {
			from = dropped[k].reset
			break
		}
	}
	out := appendSGR(nil, b[from:dropped[len(dropped)-1].end])
	return append(out, b[kept[0].start:]...)
}

// cursorMove recognises a complete CSI sequence at the start of b that
// leaves the screen's scrolling alone and moves the cursor, if at all, to a
// row that can be told: cursor position, up and down, column moves, erases,
// status reports. Given the cursor's row before it (r0, or a row above it)
// and whether it is in the first column (col0), on a screen of h rows
// without scroll margins, it returns the sequence's length, the cursor's
// row after it (or a row above it) and whether it is in the first column.
func cursorMove(b []byte, r0 int, col0 bool, h int) (n, row int, first, ok bool) {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0, 0, false, false
	}
	params, given, i := csiParams(b)
	if i < 0 {
		return 0, 0, false, false
	}
	count := params[0]
	if given == 0 {
		count = 1
	}
	row, first = r0, col0
	switch b[i] {
	case 'H', 'f': // cursor position
		row, first = min(max(params[0], 1), h)-1, params[1] <= 1
	case 'd': // line position absolute
		row = min(max(params[0], 1), h) - 1
	case 'A': // cursor up (by at least one row)
		row = max(0, r0-max(count, 1))
	case 'B', 'e': // cursor down, line position relative
		row = min(h-1, r0+count)
	case 'G', '`': // column absolute
		first = params[0] <= 1
	case 'C', 'D', 'a': // column relative
		first = false
	case 'K', 'J', 'X', 'n', 'm': // erases, reports, colours
	default:
		return 0, 0, false, false
	}
	return i + 1, row, first, true
}

// csiParams reads the parameters of a short CSI sequence at the start of
// b made of digits and semicolons only: the first two (0 when empty,
// clamped as the clamp does), how many were given (0 for none), and where
// its final byte is (-1 when it is not such a sequence).
func csiParams(b []byte) (params [2]int, given, final int) {
	i := 2
	for ; i < len(b) && i < 32; i++ {
		x := b[i]
		if x >= '0' && x <= '9' {
			if given == 0 {
				given = 1
			}
			if given <= 2 {
				params[given-1] = min(params[given-1]*10+int(x-'0'), maxParam)
			}
			continue
		}
		if x != ';' {
			break
		}
		given = max(given, 1) + 1
	}
	if i >= len(b) || i >= 32 {
		return params, given, -1
	}
	return params, given, i
}

// coalesceLines rewrites a plain stretch b, split into its lines segs, so
// that drawing it costs the emulator as little scrolling as it can. The
// emulator is in its ground state with no scroll margins, its cursor is on
// row r0 or below, and in the first column if col0. The result is appended
// to dst. It reports false when nothing was changed; full is where in out a
// drawing of every row starts
// that surely prints the last character (see redrawRun), or -1.
func coalesceLines(dst, b []byte, segs []plainLine, r0 int, col0 bool, h int) (out []byte, full int, ok bool) {
	if len(segs) < 3 {
		return nil, -1, false // at most one line feed: nothing to gain
	}
	if out, full, ok := redrawRuns(dst, b, segs, r0, col0, h); ok {
		return out, full, true
	}
	out, ok = skipLines(dst, b, segs, r0, h)
	return out, -1, ok
}

// redrawRuns draws the runs of lines that scroll the screen without
// scrolling it a line at a time. A run is two or more lines, each ending
// with CR LF and too short to wrap, the first of which starts in the first
// column of the bottom row; its n lines end up on the bottom rows of the
// screen, each drawn on a row its scroll filled with the background colour
// of the moment, and the bottom row is such a blank. A run shorter than
// the screen is drawn as: its first line in place, one scroll of n rows,
// then each other row put right in place: the cursor moved to its start,
// the row erased (which fills it with the same blank as the scroll did,
// the pen being what it was at that scroll) and its line drawn. A run of
// a screenful or more leaves only its last h-1 lines and a blank on the
// screen, so they are drawn the same way on every row and the lines before
// are left out but for their SGR sequences since the last reset of the
// pen; unless those hold the last character printed (which REP repeats)
// and the shown lines print none. Lines outside runs are passed on as they
// are. It reports false when there is no run.
func redrawRuns(dst, b []byte, segs []plainLine, r0 int, col0 bool, h int) (out []byte, full int, ok bool) {
	out = dst
	m := len(segs)
	if m > 0 && b[len(b)-1] != '\n' {
		m-- // the unended tail
	}
	changed := false
	full = -1
	for k := 0; k < m; {
		startsRun := r0+k >= h-1 && (k == 0 && col0 || k > 0 && segs[k-1].crlf)
		e := k
		for startsRun && e < m && segs[e].short && segs[e].crlf {
			e++
		}
		if e-k < 2 {
			out = append(out, b[segs[k].start:segs[k].end]...)
			k++
			continue
		}
		if c, at, ok := redrawRun(out, b, segs[k:e], h); ok {
			out, changed = c, true
			if at >= 0 {
				full = at
			}
		} else {
			out = append(out, b[segs[k].start:segs[e-1].end]...)
		}
		k = e
	}
	if !changed {
		return nil, -1, false
	}
	if m < len(segs) {
		out = append(out, b[segs[m].start:segs[m].end]...)
	}
	return out, full, true
}

// redrawRun appends to out the drawing of one run of lines (see
// redrawRuns). For a run of a screenful or more whose shown lines surely
// print the last character, it also returns where in out the drawing of
// its rows starts (else -1): from there on it sets every cell.
func redrawRun(out, b []byte, run []plainLine, h int) (_ []byte, at int, ok bool) {
	n := len(run)
	content := func(s plainLine) []byte { return b[s.start : s.end-2] } // without CR LF
	if n < h {
		out = append(out, content(run[0])...)
		out = fmt.Appendf(out, "\x1b[%dS", n)
		for j := 1; j < n; j++ {
			out = fmt.Appendf(out, "\x1b[%dH\x1b[2K", h-n+j)
			out = append(out, content(run[j])...)
		}
		return fmt.Appendf(out, "\x1b[%dH\x1b[2K", h), -1, true
	}
	hidden, shown := run[:n-h+1], run[n-h+1:]
	sets := slices.ContainsFunc(shown, func(s plainLine) bool { return s.last })
	if !sets && slices.ContainsFunc(hidden, func(s plainLine) bool { return s.ascii }) {
		return nil, -1, false
	}
	// The pen: the SGR sequences of the hidden lines from the last one
	// that starts with a reset.
	from := hidden[0].start
	for k := len(hidden) - 1; k >= 0; k-- {
		if hidden[k].reset >= 0 {
			from = hidden[k].reset
			break
		}
	}
	out = appendSGR(out, b[from:hidden[len(hidden)-1].end])
	at = -1
	if sets {
		at = len(out)
	}
	for j, s := range shown {
		out = fmt.Appendf(out, "\x1b[%dH\x1b[2K", j+1)
		out = append(out, content(s)...)
	}
	return fmt.Appendf(out, "\x1b[%dH\x1b[2K", h), at, true
}

// sgrResets reports whether an SGR sequence starts by resetting the pen
// (its first parameter is 0 or empty), so the sequences before it do not
// matter.
func sgrResets(seq []byte) bool {
	for _, x := range seq[2:] {
		switch x {
		case '0':
		case ';', ':', 'm':
			return true
		default:
			return false
		}
	}
	return false
}

// skipLines skips the lines of a plain stretch that cannot be seen when it
// has been drawn, turning their line feeds into one scroll. Line k is
// skipped when: the cursor is on the bottom row by then (r0+k ≥ h-1); the
// line cannot wrap; it and the line before end with CR LF, so it starts
// and ends in the first column; at least h more lines follow, scrolling
// whatever the skipping left out of sight; and it prints no character REP
// may repeat, or a later line surely prints one.
func skipLines(dst, b []byte, segs []plainLine, r0, h int) ([]byte, bool) {
	lines := len(segs)
	if lines > 0 && b[len(b)-1] != '\n' {
		lines-- // the unterminated tail is never skipped
	}
	// A line printing a character REP may repeat is skipped only when a
	// later line surely prints one.
	lastAfter := -1 // the last line that surely prints one
	for k := len(segs) - 1; k >= 0 && lastAfter < 0; k-- {
		if segs[k].last {
			lastAfter = k
		}
	}
	skip := func(k int) bool {
		return k >= 1 && k <= lines-1-h && r0+k >= h-1 && segs[k].short && segs[k].crlf && segs[k-1].crlf &&
			(!segs[k].ascii || k < lastAfter)
	}
	out := dst
	changed := false
	for k := 0; k < len(segs); {
		if !skip(k) {
			out = append(out, b[segs[k].start:segs[k].end]...)
			k++
			continue
		}
		n := 0
		for ; k < len(segs) && skip(k); k++ {
			out = appendSGR(out, b[segs[k].start:segs[k].end])
			n++
		}
		out = fmt.Appendf(out, "\x1b[%dS", min(n, h))
		changed = true
	}
	return out, changed
}

// plainLine is one line of a plain stretch: its bytes (with the LF), where
// its last SGR sequence that resets the pen starts (-1 if none), whether
// it may print and whether it surely prints a character that REP would
// repeat (an ASCII one of its own), whether it surely stays narrower than
// the screen, and whether it ends with CR LF.
type plainLine struct {
	start, end  int
	reset       int
	ascii, last bool
	short       bool
	crlf        bool
}

// plainLines splits the plain stretch at the start of b, the longest
// prefix holding nothing but printable text, complete SGR sequences, CR and
// LF, into lines (the last may be unended), and returns them with the
// stretch's length, appending the lines to the given slice. A line is
// short when it stays narrower than w columns, counting every non-ASCII
// character as two.
func plainLines(b []byte, w int, lines []plainLine) ([]plainLine, int) {
	cur := plainLine{reset: -1, short: true}
	col, i := 0, 0
scan:
	for i < len(b) {
		x := b[i]
		switch {
		case x >= 0x20 && x < 0x7f:
			j := i + 1
			for j < len(b) && b[j] >= 0x20 && b[j] < 0x7f {
				j++
			}
			col += j - i
			cur.ascii = true
			// A character is REP's last one only if it is a grapheme of its
			// own: one followed by another ASCII one or a line's end surely is.
			cur.last = cur.last || j-i >= 2 || j < len(b) && (b[j] == '\r' || b[j] == '\n')
			i = j
		case x == '\n':
			cur.end = i + 1
			cur.crlf = i > 0 && b[i-1] == '\r'
			lines = append(lines, cur)
			cur = plainLine{start: i + 1, reset: -1, short: true}
			col = 0
			i++
			continue
		case x == '\r':
			col = 0
			i++
		case x == 0x1b:
			j := i + 2
			if j > len(b) || b[i+1] != '[' {
				break scan
			}
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';' || b[j] == ':') {
				j++
			}
			if j >= len(b) || b[j] != 'm' || j+1-i > maxSeq {
				break scan
			}
			if sgrResets(b[i : j+1]) {
				cur.reset = i
			}
			i = j + 1
		case x >= 0x80:
			size := safeRune(b[i:])
			if size == 0 {
				break scan
			}
			col += 2 // at most a wide character
			i += size
		default:
			break scan
		}
		if col >= w {
			cur.short = false
		}
	}
	if cur.start < i {
		cur.end = i
		lines = append(lines, cur)
	}
	return lines, i
}

// safeRune is the length of the UTF-8 character at the start of b, or 0
// when it is invalid or one that must never be printed raw (see
// unsafeRune).
func safeRune(b []byte) int {
	// Most two-byte characters, without decoding: U+00A0 to U+07FF but for
	// U+0600 to U+063F (which holds the bidi mark U+061C).
	if len(b) >= 2 && b[1]&0xc0 == 0x80 && (b[0] == 0xc2 && b[1] >= 0xa0 || b[0] >= 0xc3 && b[0] <= 0xdf && b[0] != 0xd8) {
		return 2
	}
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError || unsafeRune(r) {
		return 0
	}
	return size
}

// appendSGR appends the SGR sequences of the plain bytes b to out.
func appendSGR(out, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, 0x1b)
		if i < 0 {
			return out
		}
		j := bytes.IndexByte(b[i:], 'm')
		if j < 0 {
			return out
		}
		out = append(out, b[i:i+j+1]...)
		b = b[i+j+1:]
	}
}
