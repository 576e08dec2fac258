package diffview

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// key handles a key press according to the mode.
func (m Model) key(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	if m.tooSmall() {
		return m.keyTooSmall(msg)
	}
	switch m.mode {
	case modeHelp, modeResult:
		return m.keyDismiss(msg)
	case modeSearch:
		m.keySearch(msg)
		return m, nil
	case modeConfirmApply, modeConfirmRollback:
		return m.keyConfirm(msg)
	}
	return m.keyBrowse(msg)
}

// keyTooSmall handles a key while the screen is too small to draw on.
func (m Model) keyTooSmall(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	// Nothing on screen says what a key would do: only quitting is taken,
	// and a confirmation waits unanswered until the screen grows.
	if !key.Matches(msg, m.keys.Quit) {
		return m, nil
	}
	m.mode = modeNormal
	if m.busy {
		m.quitting = true
		return m, nil
	}
	return m.quit()
}

// keyDismiss handles a key over the help or an apply's result: any key
// closes it.
func (m Model) keyDismiss(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	k := m.keys
	wasResult := m.mode == modeResult
	m.mode = modeNormal
	rollback := key.Matches(msg, k.Rollback) && m.lastOutcome != nil && m.lastOutcome.CanRollback()
	if wasResult && (key.Matches(msg, k.Quit) || rollback) {
		// Quit and rollback stay one key away from the result.
		return m.key(msg)
	}
	return m, nil
}

// keySearch edits the search being typed.
func (m *Model) keySearch(msg tea.KeyPressMsg) {
	switch msg.String() {
	case "enter":
		m.mode = modeNormal
		m.search = m.searchInput
		m.renderGen++
		m.find(1, false)
	case "esc":
		m.mode = modeNormal
	case "backspace":
		r := []rune(m.searchInput)
		if len(r) > 0 {
			m.searchInput = string(r[:len(r)-1])
		}
	default:
		if msg.Text != "" {
			m.searchInput += msg.Text
		}
	}
}

// keyConfirm answers the question before an apply or a rollback.
func (m Model) keyConfirm(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Confirm) && m.mode == modeConfirmApply && len(m.plan.Write) == 0:
		m.mode = modeNormal
		m.setStatus("nothing applied: nothing is accepted")
	case key.Matches(msg, k.Confirm):
		rollback := m.mode == modeConfirmRollback
		m.mode = modeNormal
		m.busy = true
		m.setStatus("working…")
		if m.saving {
			// Wait for the running save so the apply sees every decision.
			m.pendingApply, m.pendingRollback = true, rollback
			return m, nil
		}
		return m, m.applyCmd(rollback)
	case key.Matches(msg, k.Cancel), key.Matches(msg, k.Quit):
		m.mode = modeNormal
		m.setStatus("cancelled")
	}
	return m, nil
}

// keyBrowse handles a key while moving around and deciding: the normal mode.
func (m Model) keyBrowse(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	if m.busy {
		// Apply or rollback running: only quitting is taken, after it ends.
		if key.Matches(msg, m.keys.Quit) {
			m.quitting = true
		}
		return m, nil
	}
	if !m.loaded {
		if key.Matches(msg, m.keys.Quit) {
			m.quitting = true
			return m, tea.Quit
		}
		return m, nil
	}
	if m.refused(msg) {
		return m, nil
	}
	m.status = ""
	cmd, hint := m.browseAction(msg)
	if !hint {
		return m, cmd
	}
	if f, hi, ok := m.lineMode(); ok && m.status == "" && m.mode == modeNormal {
		m.setStatus(m.lineHint(f, hi))
	}
	return m, nil
}

// browseAction does what a key of the normal mode asks. hint reports
// whether the status line may then show the hint of the line selection;
// the keys that start a command or save a decision leave it as it is.
func (m *Model) browseAction(msg tea.KeyPressMsg) (cmd tea.Cmd, hint bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		*m, cmd = m.quit()
		return cmd, false
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
	case m.navigateKey(msg):
	case key.Matches(msg, k.PrevStep):
		return m.stepCmd(-1), false
	case key.Matches(msg, k.NextStep):
		return m.stepCmd(1), false
	case key.Matches(msg, k.AllSteps):
		if m.narrow != nil {
			m.stepGen++
			m.narrowTo(nil)
			m.setStatus("every step: the whole change set")
		}
	case m.decideKey(msg):
		return m.flush(), false
	case key.Matches(msg, k.SelectLine):
		m.toggleLine()
	case key.Matches(msg, k.Edit):
		return m.editCmd(), false
	case m.viewKey(msg):
	case key.Matches(msg, k.Apply):
		m.plan = MakePlan(m.Files())
		m.mode = modeConfirmApply
	case key.Matches(msg, k.Rollback):
		m.mode = modeConfirmRollback
	case key.Matches(msg, k.Take):
		return m.takeCmd(), false
	}
	return nil, true
}

// navigateKey moves the focus or the selection if the key is one that
// does, and reports whether it was.
func (m *Model) navigateKey(msg tea.KeyPressMsg) bool {
	k := m.keys
	switch {
	case key.Matches(msg, k.Focus):
		if m.focus == treePane {
			m.focus = diffPane
		} else {
			m.focus = treePane
		}
	case key.Matches(msg, k.Down), key.Matches(msg, k.Up):
		dir := 1
		if key.Matches(msg, k.Up) {
			dir = -1
		}
		if f, hi, ok := m.lineMode(); ok {
			m.moveLine(f, hi, dir)
		} else {
			m.move(dir)
		}
	case key.Matches(msg, k.PageDown):
		m.move(max(1, m.diffHeight()-2))
	case key.Matches(msg, k.PageUp):
		m.move(-max(1, m.diffHeight()-2))
	case key.Matches(msg, k.Top):
		m.move(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.move(1 << 30)
	case key.Matches(msg, k.NextHunk):
		m.jumpHunk(1)
	case key.Matches(msg, k.PrevHunk):
		m.jumpHunk(-1)
	case key.Matches(msg, k.NextFile):
		m.selectFile(m.cur + 1)
	case key.Matches(msg, k.PrevFile):
		m.selectFile(m.cur - 1)
	case key.Matches(msg, k.NextUndecided):
		m.nextUndecided()
	default:
		return false
	}
	return true
}

// decideKey changes decisions if the key is one that does, and reports
// whether it was; the caller saves them.
func (m *Model) decideKey(msg tea.KeyPressMsg) bool {
	k := m.keys
	switch {
	case key.Matches(msg, k.Accept), key.Matches(msg, k.Reject):
		v := diff.Accepted
		if key.Matches(msg, k.Reject) {
			v = diff.Rejected
		}
		if m.focus == treePane {
			m.decideFile(v)
		} else {
			m.decideHunk(v)
		}
	case key.Matches(msg, k.AcceptFile):
		m.decideFile(diff.Accepted)
	case key.Matches(msg, k.RejectFile):
		m.decideFile(diff.Rejected)
	case key.Matches(msg, k.AcceptAll):
		m.acceptAll()
	case key.Matches(msg, k.Undo):
		m.undoLast()
	case key.Matches(msg, k.Split):
		m.split()
	default:
		return false
	}
	return true
}

// viewKey changes how the diff is shown or searched if the key is one
// that does, and reports whether it was.
func (m *Model) viewKey(msg tea.KeyPressMsg) bool {
	k := m.keys
	switch {
	case key.Matches(msg, k.ToggleView):
		m.toggleView()
	case key.Matches(msg, k.ScrollRight):
		if m.focus == diffPane {
			m.scrollX(1)
		}
	case key.Matches(msg, k.ScrollLeft):
		if m.focus == diffPane {
			m.scrollX(-1)
		}
	case key.Matches(msg, k.Expand):
		if f := m.file(); f != nil && f.Ignored {
			f.expanded = !f.expanded
			f.invalidate()
			m.clampAll()
		}
	case msg.String() == "esc" && m.inLineMode():
		f, hi, _ := m.lineMode()
		m.clearLines(f, hi)
	case msg.String() == "esc" && m.search != "":
		m.search = ""
		m.renderGen++
	case key.Matches(msg, k.Search):
		m.mode = modeSearch
		m.searchInput = ""
	case key.Matches(msg, k.NextMatch):
		m.find(1, true)
	case key.Matches(msg, k.PrevMatch):
		m.find(-1, true)
	default:
		return false
	}
	return true
}
