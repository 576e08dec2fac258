package ui

import "github.com/shadow-sandbox/shadow/ui/pane"

// Pane is the agent's pane, the terminal component of ui/pane.
type Pane = pane.Model

// NewPane is a pane of the given size.
func NewPane(width, height int) *Pane {
	p := pane.New(pane.WithSize(width, height))
	return &p
}
