package pane

// Feeding the emulator: agent output a bounded chunk at a time, through
// the clamp, under the lock; resizes and resets.

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/vt"
)

// Write feeds agent output to the emulator, a bounded chunk at a time with
// its parameters clamped. A panic in the emulator is recovered and the
// emulator reset, so the app survives any output. It never fails.
func (p *term) Write(b []byte) (int, error) {
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
func (p *term) coalesced(b []byte) ([]byte, bool) {
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
func (p *term) feed(c []byte) {
	defer func() {
		if recover() != nil {
			p.resetLocked()
		}
	}()
	p.gen++
	p.filtered = p.clamp.filterInto(p.filtered[:0], c)
	if len(p.filtered) > 0 {
		before := p.scrollbackLen()
		_, _ = p.emu.Write(p.filtered)
		if p.offset > 0 {
			// The view stays on the lines it shows while more scroll off.
			total := p.scrollbackLen()
			p.offset = min(p.offset+max(total-before, 0), total)
		}
	}
}

// resetLocked replaces a failed emulator with a fresh one that says so.
func (p *term) resetLocked() {
	p.gen++
	p.resets.Add(1)
	p.offset = 0
	retire(p.emu)
	p.emu = p.newEmulator(p.width, p.height)
	p.clamp = clamper{w: p.width, h: p.height}
	func() {
		defer func() { _ = recover() }()
		_, _ = p.emu.WriteString("\x1b[7m[shadow: the terminal was reset after bad output]\x1b[m\r\n")
	}()
}

// resize changes the pane's size.
func (p *term) resize(width, height int) {
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
