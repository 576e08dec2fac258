package diffview

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// lockedSource is a source another process holds for as long as why is
// set: it says so, and refuses every change as a real one would.
type lockedSource struct {
	*memSource
	mu  sync.Mutex
	why string
}

func (s *lockedSource) ReadOnly() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

func (s *lockedSource) Decide(path, id string, d diff.Decision) error {
	if why := s.ReadOnly(); why != "" {
		return errors.New(why)
	}
	return s.memSource.Decide(path, id, d)
}

func (s *lockedSource) Apply(p Plan) (Outcome, error) {
	if why := s.ReadOnly(); why != "" {
		return Outcome{}, errors.New(why)
	}
	return s.memSource.Apply(p)
}

// A review whose source is held elsewhere says so, refuses every key that
// would change something with the source's reason, never shows a ✓ it did
// not save, and becomes writable when a reload finds the project free.
func TestReadOnlySourceRefusesWithReason(t *testing.T) {
	const why = "shadow run (pid 42) holds the project: decide once it ends"
	src := &lockedSource{memSource: fixture(), why: why}
	m := open(t, src, 80, 24)
	m = selectPath(t, m, mainGo)
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "READ-ONLY") || !strings.Contains(v, why) {
		t.Fatalf("a read-only review opens without its label and reason:\n%s", v)
	}
	for _, k := range []string{"a", "r", "A", "R", "ctrl+a", "s", "space", "e", "u", "w", "b"} {
		m = press(t, m, "j") // clears the status
		m = press(t, m, k)
		if m.mode != modeNormal {
			t.Fatalf("%s opened mode %d in a read-only review", k, m.mode)
		}
		if !m.statusErr || m.status != why {
			t.Errorf("%s: status %q, want the reason %q", k, m.status, why)
		}
	}
	if len(src.saved) != 0 {
		t.Errorf("a read-only review saved %v", src.saved)
	}
	v = ansi.Strip(m.View())
	if strings.Contains(v, "✓ accepted") || strings.Contains(v, "✗ rejected") || len(m.file().hunks) != 2 {
		t.Errorf("a refused key changed the screen:\n%s", v)
	}
	m = press(t, m, "?")
	if v := ansi.Strip(m.View()); strings.Contains(v, "accept hunk") || strings.Contains(v, "apply (asks y)") {
		t.Errorf("the help of a read-only review lists keys it refuses:\n%s", v)
	}
	m = press(t, m, "x")

	// The run ends: the next load finds the project free.
	src.mu.Lock()
	src.why = ""
	src.mu.Unlock()
	m, _ = m.Update(m.Init()())
	m = selectPath(t, m, mainGo)
	m = press(t, m, "a")
	if len(src.saved) != 1 || strings.Contains(ansi.Strip(m.View()), "READ-ONLY") {
		t.Errorf("after the project was freed: saved %v, view:\n%s", src.saved, ansi.Strip(m.View()))
	}
}

// failingSource saves nothing: every Decide fails.
type failingSource struct{ *memSource }

func (failingSource) Decide(string, string, diff.Decision) error {
	return errors.New("session was opened read-only")
}

// A decision the source did not save never stays on screen as made: the
// screen goes back to what is saved and says why.
func TestUnsavedDecisionIsNotShown(t *testing.T) {
	src := failingSource{fixture()}
	m := open(t, src, 80, 24)
	m = selectPath(t, m, mainGo)
	m = press(t, m, "a")
	v := ansi.Strip(m.View())
	if strings.Contains(v, "✓ accepted") || m.file().Decisions[m.file().hunks[0].ID].Verdict != diff.Undecided {
		t.Errorf("an unsaved decision is shown as made:\n%s", v)
	}
	if !strings.Contains(v, "not saved: ") || !strings.Contains(v, "opened read-only") {
		t.Errorf("the status does not say the decision was not saved:\n%s", v)
	}
	// An apply waiting for a save that fails is called off.
	m, saveCmd := m.Update(keyMsg("A"))
	m, _ = m.Update(keyMsg("w"))
	m, cmd := m.Update(keyMsg("y"))
	if cmd != nil || saveCmd == nil {
		t.Fatalf("the apply did not wait for the save")
	}
	m = drain(t, m, saveCmd)
	if m.busy || m.pendingApply || m.mode == modeResult || strings.Contains(m.status, "apply done") {
		t.Errorf("an apply went ahead on a decision not saved: busy %v, mode %d, status %q", m.busy, m.mode, m.status)
	}
	if v := ansi.Strip(m.View()); strings.Contains(v, "✓ accepted") {
		t.Errorf("the unsaved whole-file decision is on screen:\n%s", v)
	}
}
