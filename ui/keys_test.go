package ui

import (
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview"
)

func TestApplyKeys(t *testing.T) {
	k, r := DefaultKeyMap(), diffview.DefaultKeyMap()
	if err := ApplyKeys(&k, &r, map[string][]string{"accept": {"y", "+"}, "stop": {"x"}, "down": {"n"}}); err != nil {
		t.Fatal(err)
	}
	if !key.Matches(tea.KeyPressMsg{Code: '+', Text: "+"}, r.Accept) || key.Matches(tea.KeyPressMsg{Code: 'a', Text: "a"}, r.Accept) {
		t.Error("accept was not rebound to y and +")
	}
	if !key.Matches(tea.KeyPressMsg{Code: 'x', Text: "x"}, k.Stop) {
		t.Error("stop was not rebound")
	}
	if !key.Matches(tea.KeyPressMsg{Code: 'n', Text: "n"}, k.Down) {
		t.Error("the preflight does not move with the review's down key")
	}
	if err := ApplyKeys(&k, &r, map[string][]string{"acept": {"y"}}); err == nil || !strings.Contains(err.Error(), "acept") {
		t.Errorf("an unknown action is not reported: %v", err)
	}
}

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
	if !m.menu || !strings.Contains(screen(m), "send ctrl+b to the agent") {
		t.Fatalf("ctrl+b does not open the menu:\n%s", screen(m))
	}
}

// TestHelpListsScrollbackKeys: the help box lists every key of the pane's
// scrollback with what it does, at every size the golden tests draw.
func TestHelpListsScrollbackKeys(t *testing.T) {
	for _, sz := range sizes {
		m := newModel(t, testOptions(nil, idleAgent).withReview(t))
		m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		m.phase = phaseAgent
		s := screen(step(t, step(t, m, press("ctrl+]")), press("?")))
		for _, col := range m.pane.KeyMap().FullHelp() {
			for _, b := range col {
				if h := b.Help(); !strings.Contains(s, h.Key+" ") || !strings.Contains(s, h.Desc) {
					t.Errorf("%dx%d: help lacks %q %q:\n%s", sz.w, sz.h, h.Key, h.Desc, s)
				}
			}
		}
	}
}
