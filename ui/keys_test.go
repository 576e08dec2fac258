package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestCustomPrefixKey(t *testing.T) {
	opts := testOptions(nil, idleAgent).withReview(t)
	opts.PrefixKey = "ctrl+b"
	m := newModel(t, opts)
	m.phase = phaseAgent
	m = step(t, m, press("ctrl+]"))
	if m.menu {
		t.Fatal("the default prefix still opens the menu")
	}
	m = step(t, m, tea.KeyPressMsg{Code: 'b', Mod: tea.ModCtrl})
	if !m.menu || !strings.Contains(screenText(m), "send ctrl+b to the agent") {
		t.Fatalf("ctrl+b does not open the menu:\n%s", screenText(m))
	}
}

// TestHelpListsScrollbackKeys: the help box lists every key of the pane's
// scrollback with what it does, at every size the golden tests draw.
func TestHelpListsScrollbackKeys(t *testing.T) {
	for _, sz := range sizes {
		m := newModel(t, testOptions(nil, idleAgent).withReview(t))
		m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		m.phase = phaseAgent
		s := screenText(step(t, step(t, m, press("ctrl+]")), press("?")))
		for _, col := range m.pane.KeyMap().FullHelp() {
			for _, b := range col {
				if h := b.Help(); !strings.Contains(s, h.Key+" ") || !strings.Contains(s, h.Desc) {
					t.Errorf("%dx%d: help lacks %q %q:\n%s", sz.w, sz.h, h.Key, h.Desc, s)
				}
			}
		}
	}
}
