package diffview

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// ReadOnlyReporter is a Source that can be read-only: another process holds
// the project, so a decision, an apply or a rollback would not be saved.
// ReadOnly says why, in a line ("" while the source takes changes). The
// browser asks at every load: a read-only review is labelled as such and
// refuses the keys that change anything, with that reason.
type ReadOnlyReporter interface {
	ReadOnly() string
}

// defaultReadOnly is the reason of a review made read-only by WithReadOnly
// over a source that gives none.
const defaultReadOnly = "this review only shows the changes"

// readOnlyOf asks a source whether it is read-only, and why.
func readOnlyOf(src Source) string {
	if r, ok := src.(ReadOnlyReporter); ok {
		return r.ReadOnly()
	}
	return ""
}

// setReadOnly makes the review read-only for the reason why, or writable
// again when why is "" and WithReadOnly did not ask for read-only.
func (m *Model) setReadOnly(why string) {
	if why == "" && m.forceReadOnly {
		why = defaultReadOnly
	}
	old := m.readOnlyWhy
	m.readOnly, m.readOnlyWhy = why != "", diff.EscapeLine(why)
	// The reason shows until a key or a message takes the status line.
	switch {
	case m.statusErr:
	case m.readOnly && (m.status == "" || m.status == old):
		m.setStatus(m.readOnlyWhy)
	case !m.readOnly && old != "" && m.status == old:
		m.status = ""
	}
}

// refused reports whether msg is a key a read-only review refuses, and says
// why in the status line.
func (m *Model) refused(msg tea.KeyPressMsg) bool {
	if !m.readOnly || !m.keys.changes(msg) {
		return false
	}
	m.setError(m.readOnlyWhy)
	return true
}

// changes reports whether msg is a key that decides, applies or rolls back.
func (k KeyMap) changes(msg tea.KeyPressMsg) bool {
	for _, b := range k.changing() {
		if key.Matches(msg, *b) {
			return true
		}
	}
	return false
}

// changing is the bindings that decide, apply or roll back.
func (k *KeyMap) changing() []*key.Binding {
	return []*key.Binding{&k.Accept, &k.Reject, &k.AcceptFile, &k.RejectFile, &k.AcceptAll,
		&k.Split, &k.SelectLine, &k.Edit, &k.Undo, &k.Apply, &k.Rollback, &k.Take}
}

// helpKeys is the key map the help shows: a read-only review leaves out the
// keys it refuses.
func (m *Model) helpKeys() KeyMap {
	k := m.keys
	if _, ok := m.src.(Taker); !ok {
		k.Take.SetEnabled(false) // only a review beside another session takes from it
	}
	if m.readOnly {
		for _, b := range k.changing() {
			b.SetEnabled(false)
		}
	}
	return k
}
