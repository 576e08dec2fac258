package pane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// lines writes n numbered lines to p, a write each, as an agent prints its
// transcript.
func lines(p Model, from, n int) {
	for i := from; i < from+n; i++ {
		p.Write([]byte(fmt.Sprintf("line %d\r\n", i)))
	}
}

func rowsOf(p Model) []string {
	var rows []string
	for _, r := range strings.Split(ansi.Strip(p.View()), "\n") {
		rows = append(rows, strings.TrimRight(r, " "))
	}
	return rows
}

func noInput(t *testing.T, p Model) {
	t.Helper()
	select {
	case b := <-p.Input():
		t.Errorf("the agent got %q", b)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestPaneScrollback(t *testing.T) {
	p := newPane(20, 5)
	defer p.Close()
	lines(p, 0, 100)
	if off, total := p.Scrollback(); off != 0 || total != 96 {
		t.Fatalf("scrollback %d/%d, want 0/96", off, total)
	}
	press := func(k tea.KeyPressMsg) {
		t.Helper()
		if !p.ScrollKey(k) {
			t.Fatalf("%v is not the scrollback's", k)
		}
	}
	press(tea.KeyPressMsg{Code: tea.KeyPgUp, Mod: tea.ModShift})
	if got := rowsOf(p); got[0] != "line 91" || got[4] != "line 95" {
		t.Errorf("a page back: %q", got)
	}
	if _, _, visible := p.Cursor(); visible {
		t.Error("the cursor shows in the scrollback")
	}
	press(tea.KeyPressMsg{Code: tea.KeyUp})
	press(tea.KeyPressMsg{Code: tea.KeyPgUp})
	if off, total := p.Scrollback(); off != 11 || total != 96 {
		t.Errorf("scrollback %d/%d, want 11/96", off, total)
	}
	press(tea.KeyPressMsg{Code: tea.KeyHome})
	if got := rowsOf(p); got[0] != "line 0" {
		t.Errorf("the oldest line: %q", got)
	}
	// Output while scrolled back leaves the view where it is.
	lines(p, 100, 3)
	if got := rowsOf(p); got[0] != "line 0" {
		t.Errorf("after more output: %q", got)
	}
	// Any other key returns to the live view, and is not the agent's.
	press(tea.KeyPressMsg{Code: 'x', Text: "x"})
	if off, _ := p.Scrollback(); off != 0 {
		t.Errorf("offset %d after another key", off)
	}
	if got := rowsOf(p); got[3] != "line 102" {
		t.Errorf("the live view: %q", got)
	}
	noInput(t, p)
	// In the live view, keys are the agent's.
	if p.ScrollKey(tea.KeyPressMsg{Code: tea.KeyPgUp}) || p.ScrollKey(tea.KeyPressMsg{Code: 'x', Text: "x"}) {
		t.Error("a live key was taken by the scrollback")
	}
}

func TestPaneScrollbackWheel(t *testing.T) {
	p := newPane(20, 5)
	defer p.Close()
	lines(p, 0, 30)
	up := tea.MouseWheelMsg(tea.Mouse{Button: tea.MouseWheelUp})
	down := tea.MouseWheelMsg(tea.Mouse{Button: tea.MouseWheelDown})
	if !p.Wheel(up) || !p.Wheel(up) {
		t.Fatal("the wheel is not the pane's")
	}
	if off, _ := p.Scrollback(); off != 2*wheelLines {
		t.Errorf("offset %d after two turns", off)
	}
	p.Wheel(down)
	p.Wheel(down)
	if off, _ := p.Scrollback(); off != 0 {
		t.Errorf("offset %d after turning back", off)
	}
	// An agent that asked for mouse reports takes the wheel.
	p.Write([]byte("\x9b?1000h"))
	if p.Wheel(up) {
		t.Error("the wheel scrolled while the agent takes the mouse")
	}
	p.Write([]byte("\x1b[?1000l"))
	if !p.Wheel(up) {
		t.Error("the wheel stays the agent's after it stopped the reports")
	}
}

func TestPaneAltScreenHasNoScrollback(t *testing.T) {
	p := newPane(20, 5)
	defer p.Close()
	lines(p, 0, 30)
	p.Write([]byte("\x1b[?1049h"))
	if p.ScrollKey(tea.KeyPressMsg{Code: tea.KeyPgUp, Mod: tea.ModShift}) {
		t.Error("the alternate screen scrolled back")
	}
	if p.Wheel(tea.MouseWheelMsg(tea.Mouse{Button: tea.MouseWheelUp})) {
		t.Error("the wheel is not the full-screen agent's")
	}
	if _, total := p.Scrollback(); total != 0 {
		t.Errorf("%d lines of scrollback on the alternate screen", total)
	}
}

func TestPaneScrollbackIsBounded(t *testing.T) {
	p := newPane(10, 2)
	defer p.Close()
	lines(p, 0, maxScrollback+500)
	if _, total := p.Scrollback(); total != maxScrollback {
		t.Errorf("%d lines kept, want %d", total, maxScrollback)
	}
	p.ScrollKey(tea.KeyPressMsg{Code: tea.KeyPgUp, Mod: tea.ModShift})
	p.ScrollKey(tea.KeyPressMsg{Code: tea.KeyHome})
	if got := rowsOf(p); got[0] != "line 499" {
		t.Errorf("the oldest line kept: %q", got)
	}
}
