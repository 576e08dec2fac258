package pane

// Input: keys, pastes and mouse events encoded for the agent as a terminal
// would.

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// SendKey encodes a key press for the agent, honouring the modes the agent
// set (application cursor keys, keypad).
func (p *term) SendKey(k tea.KeyPressMsg) {
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
func (p *term) Paste(text string) {
	text = strings.ReplaceAll(text, "\x1b[201~", "")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.guard(func() { p.emu.Paste(text) })
}

// SendMouse forwards a mouse event at pane coordinates when the agent asked
// for mouse reporting; events outside the pane are ignored.
func (p *term) SendMouse(m tea.MouseMsg, x, y int) {
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
func (p *term) queue(b []byte) {
	select {
	case p.in <- b:
	default:
		p.dropped.Add(int64(len(b)))
	}
}

// guard runs f on the emulator, resetting it if f panics. The caller holds mu.
func (p *term) guard(f func()) {
	defer func() {
		if recover() != nil {
			p.resetLocked()
		}
	}()
	f()
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
