package ui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
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

	// gen counts the changes to the emulator's state (writes, resizes,
	// resets), so a write worked out from a snapshot knows it is stale.
	gen uint64
	// coalesce lets a flood of plain lines skip the ones that scroll off
	// before they could be seen (see coalesceLocked).
	coalesce bool

	in      chan []byte
	dropped atomic.Int64
	resets  atomic.Int64
	written atomic.Int64
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

// Input is the queue of bytes for the agent's terminal input.
func (p *Pane) Input() <-chan []byte { return p.in }

// Size is the pane's width and height in cells.
func (p *Pane) Size() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.width, p.height
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
	p.mu.Lock()
	if !p.coalesce || bytes.Count(b, []byte{'\n'}) <= p.height+1 {
		p.mu.Unlock()
		return nil, false
	}
	st := p.clamp
	st.seq = append([]byte(nil), p.clamp.seq...)
	r0, w, h, gen := p.emu.CursorPosition().Y, p.width, p.height, p.gen
	p.mu.Unlock()
	out, ok := coalesceWrite(b, st, r0, w, h)
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return out, p.gen == gen
}

// coalesceWrite rewrites a write so that, in its stretches of plain lines
// (text, colours, CR, LF), the lines which would scroll off the screen
// before the stretch ends are not drawn: their colour changes are kept and
// their line feeds become one scroll. The emulator scrolls by moving every
// cell of the screen, so a flood of output costs a screenful per line; this
// makes it a screenful per stretch. st is the clamp's state before b, r0
// the cursor's row, w×h the screen. A line is skipped only when the result
// is the same screen (see coalesceLines). It reports false when nothing
// was skipped.
func coalesceWrite(b []byte, st clamper, r0, w, h int) (out []byte, changed bool) {
	defer func() {
		if recover() != nil {
			out, changed = nil, false // draw every line instead
		}
	}()
	for pos := 0; pos < len(b); {
		end := pos + plainPrefix(b[pos:])
		if end > pos {
			region := b[pos:end]
			if st.state == stGround && !st.margins {
				if c, ok := coalesceLines(region, r0, w, h); ok {
					region, changed = c, true
				}
			} else {
				st.filter(region)
			}
			out = append(out, region...)
			pos = end
		}
		if pos >= len(b) {
			break
		}
		// Anything else up to the next line feed is passed on as it is, and
		// leaves the cursor somewhere unknown.
		next := bytes.IndexByte(b[pos:], '\n')
		if next < 0 {
			next = len(b) - pos
		}
		st.filter(b[pos : pos+next])
		out = append(out, b[pos:pos+next]...)
		pos += next
		r0 = 0
	}
	return out, changed
}

// plainPrefix is the length of the longest prefix of b holding nothing but
// printable text, complete SGR sequences, CR and LF.
func plainPrefix(b []byte) int {
	i := 0
	for i < len(b) {
		x := b[i]
		switch {
		case x == '\n', x == '\r', x >= 0x20 && x < 0x7f:
			i++
		case x == 0x1b:
			j := i + 2
			if j > len(b) || b[i+1] != '[' {
				return i
			}
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';' || b[j] == ':') {
				j++
			}
			if j >= len(b) || b[j] != 'm' || j+1-i > maxSeq {
				return i
			}
			i = j + 1
		case x >= 0x80:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError || unsafeRune(r) {
				return i
			}
			i += size
		default:
			return i
		}
	}
	return i
}

// coalesceLines skips the lines of a plain stretch b that cannot be seen
// when it has been drawn. The emulator is in its ground state with no
// scroll margins, and its cursor is on row r0 or below. Line k is skipped
// when: the cursor is on the bottom row by then (r0+k ≥ h-1); the line
// cannot wrap (narrower than the screen, counting every non-ASCII
// character as two columns); it and the line before end with CR LF, so it
// starts and ends in the first column; and at least h more lines follow,
// scrolling whatever the skipping left out of sight.
func coalesceLines(b []byte, r0, w, h int) ([]byte, bool) {
	segs := plainLines(b, w)
	lines := len(segs)
	if lines > 0 && b[len(b)-1] != '\n' {
		lines-- // the unterminated tail is never skipped
	}
	skip := func(k int) bool {
		return k >= 1 && k <= lines-1-h && r0+k >= h-1 && segs[k].short && segs[k].crlf && segs[k-1].crlf
	}
	var out []byte
	changed := false
	for k := 0; k < len(segs); {
		if !skip(k) {
			out = append(out, b[segs[k].start:segs[k].end]...)
			k++
			continue
		}
		n := 0
		for ; k < len(segs) && skip(k); k++ {
			for _, r := range segs[k].sgr {
				out = append(out, b[r[0]:r[1]]...)
			}
			n++
		}
		out = fmt.Appendf(out, "\x1b[%dS", min(n, h))
		changed = true
	}
	return out, changed
}

// plainLine is one line of a plain stretch: its bytes (with the LF), the
// SGR sequences in it, whether it surely stays narrower than the screen,
// and whether it ends with CR LF.
type plainLine struct {
	start, end int
	sgr        [][2]int
	short      bool
	crlf       bool
}

// plainLines splits a plain stretch (see plainPrefix) into lines.
func plainLines(b []byte, w int) []plainLine {
	var lines []plainLine
	cur := plainLine{short: true}
	col := 0
	for i := 0; i < len(b); {
		x := b[i]
		switch {
		case x == '\n':
			cur.end = i + 1
			cur.crlf = i > 0 && b[i-1] == '\r'
			lines = append(lines, cur)
			cur = plainLine{start: i + 1, short: true}
			col = 0
			i++
		case x == '\r':
			col = 0
			i++
		case x == 0x1b:
			j := i + 2
			for j < len(b) && b[j] != 'm' {
				j++
			}
			cur.sgr = append(cur.sgr, [2]int{i, j + 1})
			i = j + 1
		case x < 0x80:
			col++
			i++
		default:
			_, size := utf8.DecodeRune(b[i:])
			col += 2 // at most a wide character
			i += size
		}
		if col >= w {
			cur.short = false
		}
	}
	if cur.start < len(b) {
		cur.end = len(b)
		lines = append(lines, cur)
	}
	return lines
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
	out := p.clamp.filter(c)
	if len(out) > 0 {
		_, _ = p.emu.Write(out)
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
		p.emu.Resize(width, height)
	}()
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

// clamper rewrites control sequences before they reach the emulator:
// numeric parameters are capped, repeat counts bounded by the screen,
// scroll margins kept inside it, and over-long sequences dropped. It keeps
// its state across writes, so a sequence split between reads is handled.
type clamper struct {
	w, h  int
	state uint8
	seq   []byte // the CSI sequence being collected, from ESC on
	over  bool   // the sequence grew past maxSeq: drop it
	// margins is set once the agent set scroll margins (until a reset):
	// line feeds then no longer simply scroll the whole screen.
	margins bool
}

const (
	stGround uint8 = iota
	stEsc
	stCSI
	stString    // inside an OSC, DCS, APC, PM or SOS string
	stStringEsc // an ESC inside a string: maybe the ST that ends it
)

// filter returns the bytes to feed the emulator for chunk b.
func (c *clamper) filter(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, x := range b {
		switch c.state {
		case stGround:
			switch x {
			case 0x1b:
				c.state = stEsc
			default:
				out = append(out, x)
			}
		case stEsc:
			if x == '[' {
				c.state, c.seq, c.over = stCSI, append(c.seq[:0], 0x1b, '['), false
				continue
			}
			c.state = stGround
			out = append(out, 0x1b)
			switch x {
			case 0x1b:
				c.state = stEsc
				continue
			case ']', 'P', '_', '^', 'X':
				c.state = stString
			case 'c': // RIS: the emulator resets its margins too
				c.margins = false
			}
			out = append(out, x)
		case stString:
			out = append(out, x)
			switch x {
			case 0x07, 0x18, 0x1a:
				c.state = stGround
			case 0x1b:
				c.state = stStringEsc
			}
		case stStringEsc:
			// ST ends the string; any other ESC sequence aborts it and
			// starts anew, which is handled as in the ground state.
			if x == '\\' {
				out = append(out, x)
				c.state = stGround
				continue
			}
			c.state = stGround
			out = out[:len(out)-1]
			out = append(out, c.filter([]byte{0x1b, x})...)
		case stCSI:
			switch {
			case x == 0x18 || x == 0x1a: // CAN, SUB abort the sequence
				c.state = stGround
				c.seq = c.seq[:0]
			case x == 0x1b:
				c.seq = c.seq[:0]
				c.state = stEsc
			case x >= 0x40 && x <= 0x7e:
				if !c.over {
					out = append(out, c.rewrite(c.seq, x)...)
				}
				c.state = stGround
				c.seq = c.seq[:0]
			case x < 0x20:
				out = append(out, x) // C0 controls act inside a sequence
			default:
				if len(c.seq) >= maxSeq {
					c.over = true
					continue
				}
				c.seq = append(c.seq, x)
			}
		}
	}
	return out
}

// rewrite returns the CSI sequence seq (ESC [ params...) ending in final,
// with its numbers clamped.
func (c *clamper) rewrite(seq []byte, final byte) []byte {
	if len(seq) < 2 {
		return nil
	}
	if final != 'b' && final != 'r' && final != 's' && final != 't' && shortNumbers(seq[2:]) {
		return append(seq, final) // nothing to clamp: the common case, without allocating
	}
	body := seq[2:]
	prefix := ""
	if len(body) > 0 && body[0] >= 0x3c && body[0] <= 0x3f {
		prefix, body = string(body[0]), body[1:]
	}
	// Intermediate bytes (0x20-0x2f) end the parameters.
	end := len(body)
	for i, x := range body {
		if x >= 0x20 && x <= 0x2f {
			end = i
			break
		}
	}
	params, inter := string(body[:end]), string(body[end:])
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
		case 'b': // REP: never more than a screenful
			if len(parts) > 0 && nums[0] > c.w*c.h {
				parts[0] = fmt.Sprint(c.w * c.h)
			}
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
