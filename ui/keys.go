package ui

// The keys: what a key press does on each screen of the app.

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// key handles a key press for the phase showing.
func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case m.reviewing:
		if m.readOnly && (key.Matches(msg, m.rkeys.Quit) || msg.String() == "esc") {
			m.reviewing, m.readOnly = false, false
			return m, nil
		}
		return m.updateReview(msg)
	case m.phase == phasePreflight:
		return m.preflightKey(msg)
	case m.phase == phaseAgent && m.asking() && !m.menu:
		return m.askKey(msg)
	case m.phase == phaseAgent:
		return m.agentKey(msg)
	}
	return m, nil
}

// preflightKey handles keys on the preflight screen.
func (m Model) preflightKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	p := &m.pre
	p.seconds = 0 // any key stops the countdown
	switch {
	case p.details:
		if msg.String() == "esc" || key.Matches(msg, m.keys.Quit) || msg.String() == "enter" {
			p.details = false
		}
		return m, nil
	case key.Matches(msg, m.keys.Quit):
		if p.verdict != nil && p.verdict.Blocked {
			m.exit = ExitBlocked
		}
		if p.err != nil {
			m.exit, m.err = ExitError, p.err
			if sandbox.IsJailError(p.err) {
				m.exit = sandbox.ExitNoJail
			}
		}
		return m, tea.Quit
	case key.Matches(msg, m.keys.Down):
		p.move(1)
	case key.Matches(msg, m.keys.Up):
		p.move(-1)
	case key.Matches(msg, m.keys.Passes):
		p.passes = !p.passes
		p.cursor = -1
	case key.Matches(msg, m.keys.HostInfo):
		p.hostInfo = !p.hostInfo
		p.cursor = -1
	case msg.String() == "esc":
		p.cursor = -1
	case p.cursor >= 0 && (msg.String() == "enter" || key.Matches(msg, m.keys.Details)):
		p.details = p.selected() != nil
	case key.Matches(msg, m.keys.Start):
		if p.allowed() {
			return m.startAgent()
		}
	}
	return m, nil
}

// startAgent leaves the preflight for the agent's pane.
func (m Model) startAgent() (tea.Model, tea.Cmd) {
	m.phase = phaseAgent
	w, h := m.paneSize()
	m.pane.SetSize(w, h)
	return m, startAgent(m.ctx, m.opts, m.pane, w, h)
}

// agentKey handles keys while the agent's pane is showing.
func (m Model) agentKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.result != nil {
		switch {
		case key.Matches(msg, m.keys.Continue):
			return m.openReview(false)
		case key.Matches(msg, m.keys.Quit):
			return m, tea.Quit
		}
		return m, nil
	}
	if m.helpOpen {
		m.helpOpen = false
		return m, nil
	}
	if m.menu {
		m.menu = false
		if !m.fits(m.menuBox()) && !key.Matches(msg, m.keys.Prefix) {
			// The menu is not on screen: no key of it stops or detaches.
			return m, nil
		}
		switch {
		case key.Matches(msg, m.keys.Prefix):
			m = m.forward(msg)
		case key.Matches(msg, m.keys.Review):
			return m.openReview(true)
		case key.Matches(msg, m.keys.Checkpoint):
			m.note = m.manualCheckpoint()
		case key.Matches(msg, m.keys.Stop):
			m.note = "stopping the agent…"
			return m, stopAgent(m.run)
		case key.Matches(msg, m.keys.Detach):
			if m.opts.Detach == nil {
				m.note = "detach is not available: this jail ends with shadow"
				return m, nil
			}
			detach := m.opts.Detach
			m.detaching = true
			return m, func() tea.Msg {
				if err := detach(); err != nil {
					return detachFailedMsg{err: err}
				}
				return tea.Quit()
			}
		case key.Matches(msg, m.keys.Help):
			m.helpOpen = true
		}
		return m, nil
	}
	if key.Matches(msg, m.keys.Prefix) {
		m.menu = true
		m.note = ""
		return m, nil
	}
	if m.pane.ScrollKey(msg) {
		return m, nil // the pane's scrollback
	}
	if msg.String() == "enter" && !m.holding && m.canCheckpoint() {
		// The user submits input to the agent: the checkpoint is taken before the key leaves.
		return m.promptCheckpoint(msg)
	}
	return m.forward(msg), nil
}
