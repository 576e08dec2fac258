package pane

// Scrollback: the lines that scrolled off the top of the main screen, kept
// by the emulator, scrolled with the keys of the KeyMap and the mouse wheel,
// as tmux's copy mode does. The alternate screen has none: a full-screen
// agent redraws its own.

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// maxScrollback is how many lines the pane keeps of what scrolled off its
// top. Of a flood that scrolls lines off unseen within one write, the lines
// coalescing skipped are not among them (see coalesceWrite).
const maxScrollback = 10000

// wheelLines is how many lines a turn of the mouse wheel scrolls.
const wheelLines = 3

// KeyMap is the pane's own keys: scrolling back. While scrolled back, any
// other key returns to the live view and is not sent to the agent.
type KeyMap struct {
	ScrollBack key.Binding // from the live view: a page back
	PageUp     key.Binding
	PageDown   key.Binding
	LineUp     key.Binding
	LineDown   key.Binding
	Top        key.Binding
	Bottom     key.Binding // back to the live view
}

// DefaultKeyMap is the pane's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		ScrollBack: key.NewBinding(key.WithKeys("shift+pgup"), key.WithHelp("shift+pgup", "scroll back (the wheel too)")),
		PageUp:     key.NewBinding(key.WithKeys("pgup", "shift+pgup"), key.WithHelp("pgup", "page back")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown", "shift+pgdown"), key.WithHelp("pgdown", "page forward")),
		LineUp:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "line back")),
		LineDown:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "line forward")),
		Top:        key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "oldest line")),
		Bottom:     key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "live view")),
	}
}

// ShortHelp is the key that starts scrolling back.
func (k KeyMap) ShortHelp() []key.Binding { return []key.Binding{k.ScrollBack} }

// FullHelp is every key of the scrollback.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.ScrollBack, k.PageUp, k.PageDown}, {k.LineUp, k.LineDown, k.Top, k.Bottom}}
}

// WithKeyMap sets the pane's keys.
func WithKeyMap(k KeyMap) Option { return func(o *options) { o.keys = k } }

// Scrollback is how many lines back from the live view the pane shows (0:
// the live view) and how many lines it keeps.
func (p *term) Scrollback() (offset, lines int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offset, p.scrollbackLen()
}

// scrollbackLen is how many lines can be scrolled back to. The caller holds mu.
func (p *term) scrollbackLen() int {
	if p.emu.IsAltScreen() {
		return 0
	}
	return p.emu.ScrollbackLen()
}

// scroll moves the view n lines back (forward when negative), within the
// scrollback; it reports whether there is any.
func (p *term) scroll(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := p.scrollbackLen()
	p.offset = min(max(p.offset+n, 0), total)
	return total > 0
}

// ScrollKey acts on a key of the scrollback and reports whether it was
// one: shift+pgup from the live view, and any key while scrolled back (a
// key not of the KeyMap returns to the live view). Other keys are the
// agent's.
func (m Model) ScrollKey(k tea.KeyPressMsg) bool {
	off, _ := m.Scrollback()
	_, page := m.Size()
	keys := m.keys
	if off == 0 {
		return key.Matches(k, keys.ScrollBack) && m.scroll(page)
	}
	switch {
	case key.Matches(k, keys.PageUp):
		m.scroll(page)
	case key.Matches(k, keys.PageDown):
		m.scroll(-page)
	case key.Matches(k, keys.LineUp):
		m.scroll(1)
	case key.Matches(k, keys.LineDown):
		m.scroll(-1)
	case key.Matches(k, keys.Top):
		m.scroll(maxScrollback)
	default: // Bottom, and any other key
		m.scroll(-maxScrollback)
	}
	return true
}

// Wheel scrolls back or forward for a turn of the mouse wheel, unless the
// agent takes the mouse (it asked for mouse reports, or is on the alternate
// screen): it reports whether the turn was the pane's.
func (m Model) Wheel(w tea.MouseWheelMsg) bool {
	m.mu.Lock()
	agents := m.clamp.mouse || m.emu.IsAltScreen()
	m.mu.Unlock()
	if agents {
		return false
	}
	switch w.Mouse().Button {
	case tea.MouseWheelUp:
		m.scroll(wheelLines)
	case tea.MouseWheelDown:
		m.scroll(-wheelLines)
	}
	return true
}

// Update handles the messages the pane takes: keys, pastes and mouse events
// at pane coordinates, for the scrollback or the agent.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !m.ScrollKey(msg) {
			m.SendKey(msg)
		}
	case tea.PasteMsg:
		m.scroll(-maxScrollback)
		m.Paste(msg.Content)
	case tea.MouseWheelMsg:
		if !m.Wheel(msg) {
			mm := msg.Mouse()
			m.SendMouse(msg, mm.X, mm.Y)
		}
	case tea.MouseMsg:
		mm := msg.Mouse()
		m.SendMouse(msg, mm.X, mm.Y)
	}
	return m, nil
}
