package keymap

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
