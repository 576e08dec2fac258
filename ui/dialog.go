package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// dialogBox draws s in the app's dialog frame, its lines wrapped to the
// screen's width rather than cut.
func (m Model) dialogBox(s string) string {
	// The frame takes a border and a padding cell on each side.
	return m.styles.Dialog.Render(ansi.Wrap(s, max(1, m.width-4), ""))
}

// fits reports whether a box fits whole over the agent's pane.
func (m Model) fits(box string) bool {
	w, h := m.paneSize()
	return lipgloss.Width(box) <= w && lipgloss.Height(box) <= h
}

// shown is box when it fits over the agent's pane, else a note that the
// screen is too small for it (its keys are then refused).
func (m Model) shown(box string) string {
	if m.fits(box) {
		return box
	}
	w, _ := m.paneSize()
	note := fmt.Sprintf("too small to show this: %d×%d needed · any key closes",
		lipgloss.Width(box), lipgloss.Height(box)+1)
	return strings.Join(strings.Split(ansi.Wrap(note, max(1, w), ""), "\n"), "\n")
}
