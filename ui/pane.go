package ui

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/shadow-sandbox/shadow/internal/termseq"
)

// Bounds on what one write of agent output may cost.
const (
	// paneChunk is the most bytes the emulator parses under the pane's lock
	// at once, so input and drawing interleave with a flood of output.
	paneChunk = 1 << 10
	// maxParam is the largest numeric parameter of a control sequence that
	// reaches the emulator; larger counts are clamped (a repeat of 2^31
	// characters would otherwise keep it busy for minutes).
	maxParam = 9999
	// maxSeq is the longest control sequence (CSI) passed on whole; a longer
	// one is dropped.
	maxSeq = 256
	// inputQueue is how many writes to the agent (keys, pastes, replies to
	// its terminal queries) wait while the agent does not read them.
	inputQueue = 1024
)

// Pane is the agent's terminal: the bytes the agent writes drive a terminal
// emulator, and the pane is drawn from the emulator's cells, so nothing the
// agent writes (clipboard, title, hyperlinks, queries) ever reaches the real
// terminal. Keys, pastes and mouse events are encoded for the agent as a
// terminal would, and the emulator's replies to the agent's queries are
// drained continuously onto the same input queue.
type Pane struct {
	mu     sync.Mutex
	emu    *vt.Emulator
	width  int
	height int
	clamp  clamper
	// filtered holds a chunk of output after the clamp, reused.
	filtered []byte

	// gen counts the changes to the emulator's state (writes, resizes,
	// resets), so a write worked out from a snapshot knows it is stale.
	gen uint64
	// coalesce lets a flood of plain lines skip the ones that scroll off
	// before they could be seen (see coalesceLocked).
	coalesce bool

	// wmu serializes writes, which reuse bufs to coalesce.
	wmu  sync.Mutex
	bufs coalesceBufs

	in      chan []byte
	dropped atomic.Int64
	resets  atomic.Int64
	written atomic.Int64
}

// coalesceBufs are the buffers one coalesced write works in (see
// coalesceWrite), kept for the next: a flood is written in many batches.
type coalesceBufs struct {
	out, region, clamped, drawn []byte
	lines                       []plainLine
}

// NewPane returns a pane of the given size.
func NewPane(width, height int) *Pane {
	width, height = max(1, width), max(1, height)
	p := &Pane{width: width, height: height, in: make(chan []byte, inputQueue), coalesce: true}
	p.clamp.w, p.clamp.h = width, height
	p.emu = p.newEmulator(width, height)
	return p
}

// newEmulator makes an emulator and starts draining its replies.
func (p *Pane) newEmulator(w, h int) *vt.Emulator {
	e := vt.NewEmulator(w, h)
	e.SetScrollbackSize(1000)
	go p.drain(e)
	return e
}

// drain moves what the emulator produces for the agent (encoded keys,
// pastes, replies to queries) onto the input queue until the emulator is
// retired. It never blocks on the agent: when the queue is full, the bytes
// are dropped and counted, so a flood of queries cannot stall the emulator.
func (p *Pane) drain(e *vt.Emulator) {
	buf := make([]byte, 4096)
	for {
		n, err := e.Read(buf)
		if n > 0 {
			b := append([]byte(nil), buf[:n]...)
			select {
			case p.in <- b:
			default:
				p.dropped.Add(int64(n))
			}
		}
		if err != nil {
			return
		}
	}
}

// retire stops an emulator's drain goroutine without touching the
// emulator's own state.
func retire(e *vt.Emulator) {
	if c, ok := e.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
}

// Close stops the pane's reply drain; the pane must not be used after.
func (p *Pane) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	retire(p.emu)
}

// clampState is the clamp's state: where in a control sequence the output
// fed so far left off.
func (p *Pane) clampState() clamper {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clamp.clone()
}

// Input is the queue of bytes for the agent's terminal input.
func (p *Pane) Input() <-chan []byte { return p.in }

// Size is the pane's width and height in cells.
func (p *Pane) Size() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.width, p.height
}

// maxTitle is the most cells of the agent's window title the app shows.
const maxTitle = 60

// Title is the window title the agent set last (OSC 0 or 2), fit to show:
// invalid UTF-8 replaced, control and bidirectional formatting characters
// removed, at most maxTitle cells. It is empty until the agent sets one.
func (p *Pane) Title() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cleanTitle(p.clamp.title)
}

// cleanTitle is a title safe to print in the status bar and to send to the
// user's terminal.
func cleanTitle(b []byte) string {
	var t strings.Builder
	for _, r := range strings.ToValidUTF8(string(b), "\uFFFD") {
		if !unsafeRune(r) && !unicode.Is(unicode.Cf, r) {
			t.WriteRune(r)
		}
	}
	return ansi.Truncate(strings.TrimSpace(t.String()), maxTitle, "…")
}

// Resets counts the times the emulator failed on hostile output and was
// replaced by a fresh one.
func (p *Pane) Resets() int64 { return p.resets.Load() }

// Dropped counts the input bytes dropped because the agent did not read.
func (p *Pane) Dropped() int64 { return p.dropped.Load() }

// Written counts the bytes of output the pane has taken.
func (p *Pane) Written() int64 { return p.written.Load() }

// Write feeds agent output to the emulator, a bounded chunk at a time with
// its parameters clamped. A panic in the emulator is recovered and the
// emulator reset, so the app survives any output. It never fails.
func (p *Pane) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	n := len(b)
	p.written.Add(int64(n))
	if c, ok := p.coalesced(b); ok {
		b = c
	}
	for len(b) > 0 {
		c := b[:chunkEnd(b)]
		b = b[len(c):]
		p.mu.Lock()
		p.feed(c)
		p.mu.Unlock()
	}
	return n, nil
}

// coalesced is b with the lines skipped that would scroll off unseen (see
// coalesceWrite), worked out from a snapshot of the emulator's state outside
// the lock, so keys and frames are not held up by the scan. It reports
// false when nothing was skipped, or when the pane changed meanwhile.
func (p *Pane) coalesced(b []byte) ([]byte, bool) {
	if bytes.Count(b, []byte{'\n'}) < 2 { // b is the caller's: counted outside the lock
		return nil, false
	}
	p.mu.Lock()
	if !p.coalesce {
		p.mu.Unlock()
		return nil, false
	}
	st := p.clamp.clone()
	cur, w, h, gen := p.emu.CursorPosition(), p.width, p.height, p.gen
	p.mu.Unlock()
	// In the first column, the cursor cannot be waiting to wrap unless the
	// screen is one column wide.
	out, ok := coalesceWrite(&p.bufs, b, st, cur.Y, cur.X == 0 && w > 1, w, h)
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return out, p.gen == gen
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

// chunkEnd is where the next chunk of b ends: about paneChunk bytes, cut
// before an ASCII byte so that no character or grapheme cluster (which the
// emulator completes at the end of each write) is split.
func chunkEnd(b []byte) int {
	if len(b) <= paneChunk {
		return len(b)
	}
	for i := paneChunk; i > paneChunk/2; i-- {
		if b[i] < 0x80 {
			return i
		}
	}
	for i := paneChunk; i < len(b) && i < 16*paneChunk; i++ {
		if b[i] < 0x80 {
			return i
		}
	}
	// No ASCII for a long way: at least keep UTF-8 sequences whole.
	i := min(len(b), 16*paneChunk)
	for i < len(b) && i > 0 && b[i]&0xc0 == 0x80 {
		i--
	}
	return max(i, 1)
}

// feed passes one chunk through the clamp into the emulator. The caller
// holds mu.
func (p *Pane) feed(c []byte) {
	defer func() {
		if recover() != nil {
			p.resetLocked()
		}
	}()
	p.gen++
	p.filtered = p.clamp.filterInto(p.filtered[:0], c)
	if len(p.filtered) > 0 {
		_, _ = p.emu.Write(p.filtered)
	}
}

// resetLocked replaces a failed emulator with a fresh one that says so.
func (p *Pane) resetLocked() {
	p.gen++
	p.resets.Add(1)
	retire(p.emu)
	p.emu = p.newEmulator(p.width, p.height)
	p.clamp = clamper{w: p.width, h: p.height}
	func() {
		defer func() { _ = recover() }()
		_, _ = p.emu.WriteString("\x1b[7m[shadow: the terminal was reset after bad output]\x1b[m\r\n")
	}()
}

// Resize changes the pane's size.
func (p *Pane) Resize(width, height int) {
	width, height = max(1, width), max(1, height)
	p.mu.Lock()
	defer p.mu.Unlock()
	if width == p.width && height == p.height {
		return
	}
	p.gen++
	p.width, p.height = width, height
	p.clamp.w, p.clamp.h = width, height
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.resetLocked()
			}
		}()
		keepCursorRow(p.emu, height)
		p.emu.Resize(width, height)
	}()
}

// keepCursorRow prepares emu for a shrink to height rows the way terminals
// shrink: the rows that go are the empty ones at the bottom, then rows at the
// top, into the scrollback, so that the cursor and what is drawn below it
// stay on the screen (xterm keeps the bottom, tmux the cursor; this is both
// where they agree). An agent that draws its input box at the bottom (codex)
// keeps it on the screen; the emulator alone cuts the bottom, which lost the
// box until the agent repainted.
func keepCursorRow(emu *vt.Emulator, height int) {
	oldHeight := emu.Height()
	if height >= oldHeight {
		return
	}
	pos := emu.CursorPosition()
	last := pos.Y
	for y := oldHeight - 1; y > pos.Y; y-- {
		if !blankRow(emu, y) {
			last = y
			break
		}
	}
	off := min(last-(height-1), pos.Y)
	if off <= 0 {
		return
	}
	// The whole screen as scroll region (the resize resets it anyway),
	// line feeds at its bottom row, then the cursor back on its line.
	_, _ = emu.WriteString(fmt.Sprintf("\x1b[r\x1b[%d;1H%s\x1b[%d;%dH",
		oldHeight, strings.Repeat("\n", off), pos.Y-off+1, pos.X+1))
}

// blankRow reports whether row y of emu's screen holds nothing but spaces.
func blankRow(emu *vt.Emulator, y int) bool {
	for x := range emu.Width() {
		if c := emu.CellAt(x, y); c != nil && c.Content != "" && c.Content != " " {
			return false
		}
	}
	return true
}

// SendKey encodes a key press for the agent, honouring the modes the agent
// set (application cursor keys, keypad).
func (p *Pane) SendKey(k tea.KeyPressMsg) {
	if seq, ok := modifiedKey(k); ok {
		p.queue([]byte(seq))
		return
	}
	ev := vt.KeyPressEvent{Code: k.Code, Text: k.Text, Mod: k.Mod &^ (uv.ModCapsLock | uv.ModNumLock | uv.ModScrollLock)}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.guard(func() { p.emu.SendKey(ev) })
}

// Paste sends pasted text, bracketed when the agent enabled bracketed
// paste. The text is the user's own; only the end marker is removed from
// it, so a paste cannot end the bracket early and type commands.
func (p *Pane) Paste(text string) {
	text = strings.ReplaceAll(text, "\x1b[201~", "")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.guard(func() { p.emu.Paste(text) })
}

// SendMouse forwards a mouse event at pane coordinates when the agent asked
// for mouse reporting; events outside the pane are ignored.
func (p *Pane) SendMouse(m tea.MouseMsg, x, y int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x < 0 || y < 0 || x >= p.width || y >= p.height {
		return
	}
	mm := m.Mouse()
	ev := uv.Mouse{X: x, Y: y, Button: mm.Button, Mod: mm.Mod}
	var e vt.Mouse
	switch m.(type) {
	case tea.MouseClickMsg:
		e = vt.MouseClick(ev)
	case tea.MouseReleaseMsg:
		e = vt.MouseRelease(ev)
	case tea.MouseWheelMsg:
		e = vt.MouseWheel(ev)
	case tea.MouseMotionMsg:
		e = vt.MouseMotion(ev)
	default:
		return
	}
	p.guard(func() { p.emu.SendMouse(e) })
}

// queue puts bytes on the input queue without blocking.
func (p *Pane) queue(b []byte) {
	select {
	case p.in <- b:
	default:
		p.dropped.Add(int64(len(b)))
	}
}

// guard runs f on the emulator, resetting it if f panics. The caller holds mu.
func (p *Pane) guard(f func()) {
	defer func() {
		if recover() != nil {
			p.resetLocked()
		}
	}()
	f()
}

// Cursor is the cursor's cell in the pane and whether the agent shows it.
func (p *Pane) Cursor() (x, y int, visible bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pos := p.emu.CursorPosition()
	x, y = min(max(pos.X, 0), p.width-1), min(max(pos.Y, 0), p.height-1)
	return x, y, !p.emu.CursorHidden()
}

// View draws the pane from the emulator's cells: text and SGR colours and
// attributes only, every cell's content stripped of control and bidi
// characters, so the output is exactly width×height cells.
func (p *Pane) View() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	b.Grow(p.width * p.height * 2)
	func() {
		defer func() {
			if r := recover(); r != nil {
				b.Reset()
				p.resetLocked()
				b.WriteString(p.blankLocked())
			}
		}()
		p.render(&b)
	}()
	return b.String()
}

// blankLocked is an empty pane.
func (p *Pane) blankLocked() string {
	line := strings.Repeat(" ", p.width)
	return strings.TrimSuffix(strings.Repeat(line+"\n", p.height), "\n")
}

// render writes every row of the emulator's screen. The caller holds mu.
func (p *Pane) render(b *strings.Builder) {
	var zero uv.Style
	for y := 0; y < p.height; y++ {
		if y > 0 {
			b.WriteByte('\n')
		}
		prev := zero
		col := 0
		for x := 0; x < p.width && col < p.width; x++ {
			c := p.emu.CellAt(x, y)
			if c == nil {
				b.WriteString(uv.StyleDiff(&prev, &zero))
				prev = zero
				b.WriteByte(' ')
				col++
				continue
			}
			if c.Width == 0 && c.Content == "" {
				continue // the second column of a wide character
			}
			w := max(c.Width, 1)
			if col+w > p.width {
				break
			}
			b.WriteString(uv.StyleDiff(&prev, &c.Style))
			prev = c.Style
			b.WriteString(cellText(c.Content, w))
			col += w
		}
		if !prev.IsZero() {
			b.WriteString("\x1b[m")
		}
		if col < p.width {
			b.WriteString(strings.Repeat(" ", p.width-col))
		}
	}
}

// cellText is a cell's content safe to print: a cell that holds anything
// but printable characters (controls, bidi overrides, invalid UTF-8) is
// drawn as '?' of the same width.
func cellText(s string, width int) string {
	if s == "" || s == " " {
		return strings.Repeat(" ", width)
	}
	if !utf8.ValidString(s) {
		return strings.Repeat("?", width)
	}
	for _, r := range s {
		if unsafeRune(r) {
			return strings.Repeat("?", width)
		}
	}
	// A cell starting with a joiner or mark (half of a cluster split between
	// writes) would merge into its neighbour on screen and shift the row.
	if first, _ := utf8.DecodeRuneInString(s); first == 0x200d || unicode.In(first, unicode.Mn, unicode.Me, unicode.Variation_Selector) {
		return strings.Repeat(" ", width)
	}
	// Keep the grid: text the terminal would draw narrower is padded, wider
	// is replaced.
	switch sw := ansi.StringWidth(s); {
	case sw < width:
		return s + strings.Repeat(" ", width-sw)
	case sw > width:
		return strings.Repeat("?", width)
	}
	return s
}

// unsafeRune reports characters that must never be printed raw: C0 and C1
// controls and the bidirectional controls of CVE-2021-42574.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return unicode.Is(unicode.Cc, r)
}

// modifiedKey encodes the xterm form of cursor, editing and function keys
// held with shift, alt or ctrl (CSI 1;m X and CSI n;m ~), which the
// emulator's key table leaves out.
func modifiedKey(k tea.KeyPressMsg) (string, bool) {
	mod := k.Mod & (tea.ModShift | tea.ModAlt | tea.ModCtrl)
	if mod == 0 {
		return "", false
	}
	m := 1
	if mod&tea.ModShift != 0 {
		m++
	}
	if mod&tea.ModAlt != 0 {
		m += 2
	}
	if mod&tea.ModCtrl != 0 {
		m += 4
	}
	letters := map[rune]byte{
		tea.KeyUp: 'A', tea.KeyDown: 'B', tea.KeyRight: 'C', tea.KeyLeft: 'D',
		tea.KeyHome: 'H', tea.KeyEnd: 'F',
		tea.KeyF1: 'P', tea.KeyF2: 'Q', tea.KeyF3: 'R', tea.KeyF4: 'S',
	}
	if c, ok := letters[k.Code]; ok {
		return fmt.Sprintf("\x1b[1;%d%c", m, c), true
	}
	tilde := map[rune]int{
		tea.KeyInsert: 2, tea.KeyDelete: 3, tea.KeyPgUp: 5, tea.KeyPgDown: 6,
		tea.KeyF5: 15, tea.KeyF6: 17, tea.KeyF7: 18, tea.KeyF8: 19, tea.KeyF9: 20,
		tea.KeyF10: 21, tea.KeyF11: 23, tea.KeyF12: 24,
	}
	if n, ok := tilde[k.Code]; ok {
		return fmt.Sprintf("\x1b[%d;%d~", n, m), true
	}
	return "", false
}

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
		if x == 'c' { // RIS: the emulator resets its margins too
			c.margins = false
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
