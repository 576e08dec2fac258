package diffview

import (
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// unsaved handles a decision the source did not save. What the screen shows
// must be what is saved, so the decisions still queued (made on top of it)
// are dropped, an apply waiting for the save is called off, a quit waits for
// the developer to read why, and the files are loaded again from the source.
func (m Model) unsaved(err error) (Model, tea.Cmd) {
	m.saves = nil
	if m.pendingApply {
		m.pendingApply, m.busy = false, false
	}
	m.quitting = false
	m.setError(fmt.Sprintf("not saved: %v", err))
	return m, m.load()
}
