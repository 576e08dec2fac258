package diffview

import (
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// Saving: decisions reach the Source in the order they were made, one batch
// at a time; an apply or a rollback waits for the batch running, and what the
// screen shows is always what was saved.

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

// flush starts saving queued decisions unless a save is running; saves run
// one at a time so they reach the source in the order they were made.
func (m *Model) flush() tea.Cmd {
	if m.saving || m.busy {
		return nil
	}
	if len(m.saves) == 0 {
		if m.quitting {
			return tea.Quit
		}
		return nil
	}
	batch := m.saves
	m.saves = nil
	m.saving = true
	src := m.src
	return func() tea.Msg {
		if src == nil {
			return savedMsg{}
		}
		for _, s := range batch {
			if err := src.Decide(s.path, s.id, s.d); err != nil {
				return savedMsg{err: fmt.Errorf("%s: %w", diff.Escape(s.path), err)}
			}
		}
		return savedMsg{}
	}
}

// applyCmd applies the confirmed plan, or rolls back, once pending
// decisions are saved (the source runs commands in order only if we wait,
// so the decisions travel with the plan's files).
func (m *Model) applyCmd(rollback bool) tea.Cmd {
	src, plan := m.src, m.plan
	batch := m.saves
	m.saves = nil
	return func() tea.Msg {
		if src == nil {
			return appliedMsg{err: errors.New("no source"), rollback: rollback}
		}
		for _, s := range batch {
			if err := src.Decide(s.path, s.id, s.d); err != nil {
				return appliedMsg{err: fmt.Errorf("%s: %w", diff.Escape(s.path), err), rollback: rollback, unsaved: true}
			}
		}
		var out Outcome
		var err error
		if rollback {
			out, err = src.Rollback()
		} else {
			out, err = src.Apply(plan)
		}
		return appliedMsg{out: out, err: err, rollback: rollback}
	}
}

// applied shows the result of an apply or rollback and reloads the files.
func (m Model) applied(msg appliedMsg) (Model, tea.Cmd) {
	m.busy = false
	what := "apply"
	if msg.rollback {
		what = "rollback"
	}
	if msg.unsaved {
		return m.unsaved(msg.err)
	}
	if msg.err != nil {
		m.setError(fmt.Sprintf("%s: %v", what, msg.err))
		return m, m.flush()
	}
	out := msg.out
	out.Rollback = msg.rollback
	m.lastOutcome = &out
	var s string
	if msg.rollback {
		s = fmt.Sprintf("rollback done: %s (%d put back, %d removed)",
			english.Count(len(out.Restored)+len(out.Removed), "path")+" restored", len(out.Restored), len(out.Removed))
	} else {
		s = fmt.Sprintf("apply done: %d written", len(out.Written))
		if len(out.Deleted) > 0 {
			s += fmt.Sprintf(", %d deleted", len(out.Deleted))
		}
	}
	if len(out.LeftOut) > 0 {
		s += fmt.Sprintf(", %d left out", len(out.LeftOut))
	}
	if out.ApplyID != "" {
		s += " (" + diff.EscapeLine(out.ApplyID) + ")"
	}
	if out.Message != "" {
		s += ": " + diff.EscapeLine(out.Message)
	}
	if out.CanRollback() {
		s += " — " + m.keys.Rollback.Help().Key + " rolls back"
	}
	m.setStatus(s)
	m.resultTitle = what + " done"
	m.mode = modeResult
	if m.quitting {
		return m, tea.Quit
	}
	return m, m.load()
}
