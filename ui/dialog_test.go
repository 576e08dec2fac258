package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// At 40×12 the command menu and the end box are on screen whole, wrapped
// rather than cut; on a screen too small for the menu it says so, and its
// keys neither stop nor detach the agent.
func TestAgentBoxesAtSmallSizes(t *testing.T) {
	m := newModel(t, testOptions(nil, idleAgent).withReview(t))
	m = step(t, m, tea.WindowSizeMsg{Width: 40, Height: 12})
	m.phase = phaseAgent
	m = step(t, m, press("ctrl+]"))
	for _, box := range []string{m.menuBox()} {
		scr := screenText(m)
		checkScreen(t, scr, 40, 12)
		for _, l := range strings.Split(ansi.Strip(box), "\n") {
			if !strings.Contains(scr, l) {
				t.Errorf("the menu's line %q is not on screen:\n%s", l, scr)
			}
		}
	}
	m = step(t, m, press("esc"))
	m = step(t, m, agentExitMsg{res: AgentResult{ExitCode: 0}})
	scr := screenText(m)
	for _, l := range strings.Split(ansi.Strip(m.endBox()), "\n") {
		if !strings.Contains(scr, l) {
			t.Errorf("the end box's line %q is not on screen:\n%s", l, scr)
		}
	}
	if !strings.Contains(scr, "q quit") {
		t.Errorf("the end box does not say how to quit:\n%s", scr)
	}

	m = newModel(t, testOptions(nil, idleAgent).withReview(t))
	m = step(t, m, tea.WindowSizeMsg{Width: 30, Height: 8})
	m.phase = phaseAgent
	m = step(t, m, press("ctrl+]"))
	if scr := screenText(m); !strings.Contains(strings.ReplaceAll(scr, "\n", " "), "too small") {
		t.Errorf("a menu too large for the screen does not say so:\n%s", scr)
	}
	next, cmd := m.Update(press("s"))
	m = next.(Model)
	if cmd != nil || m.note != "" || m.menu {
		t.Errorf("s stopped the agent from a menu that was not on screen (note %q)", m.note)
	}
}
