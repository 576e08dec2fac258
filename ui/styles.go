package ui

import (
	"charm.land/lipgloss/v2"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/diffview"
)

// Styles is the app's theme: every colour the preflight, the status bar and
// the dialogs draw with. The review phase uses the diffview theme made for
// the same background.
type Styles struct {
	Title     lipgloss.Style
	Subtle    lipgloss.Style
	Stage     lipgloss.Style
	Pass      lipgloss.Style
	Fail      lipgloss.Style
	Skip      lipgloss.Style
	Info      lipgloss.Style
	Severity  map[audit.Severity]lipgloss.Style
	Cursor    lipgloss.Style
	Allowed   lipgloss.Style
	Blocked   lipgloss.Style
	Warned    lipgloss.Style
	Key       lipgloss.Style
	StatusBar lipgloss.Style
	LayerOn   lipgloss.Style
	LayerOff  lipgloss.Style
	Dialog    lipgloss.Style
	Error     lipgloss.Style

	// Review is the review browser's theme for the same background.
	Review diffview.Styles
}

// DefaultStyles is the theme for a dark or light terminal background; each
// colour is picked to stay readable on both.
func DefaultStyles(dark bool) Styles {
	c := lipgloss.LightDark(dark)
	fg := func(light, dark string) lipgloss.Style {
		return lipgloss.NewStyle().Foreground(c(lipgloss.Color(light), lipgloss.Color(dark)))
	}
	red, green, yellow := fg("#b00020", "#ff6b6b"), fg("#1a7f37", "#5fd787"), fg("#9a6700", "#e5c07b")
	return Styles{
		Title:  fg("#3b3b98", "#afafff").Bold(true),
		Subtle: fg("#6e6e6e", "#8a8a8a"),
		Stage:  fg("#1f1f1f", "#e4e4e4").Bold(true),
		Pass:   green,
		Fail:   red.Bold(true),
		Skip:   yellow,
		Info:   fg("#0b5cad", "#79c0ff"),
		Severity: map[audit.Severity]lipgloss.Style{
			audit.Critical: red.Bold(true),
			audit.High:     red,
			audit.Medium:   yellow,
			audit.Low:      fg("#6e6e6e", "#8a8a8a"),
		},
		Cursor:  lipgloss.NewStyle().Reverse(true),
		Allowed: green.Bold(true),
		Blocked: red.Bold(true).Reverse(true),
		Warned:  yellow.Bold(true),
		Key:     fg("#3b3b98", "#afafff").Bold(true),
		StatusBar: lipgloss.NewStyle().
			Foreground(c(lipgloss.Color("#1f1f1f"), lipgloss.Color("#e4e4e4"))).
			Background(c(lipgloss.Color("#dcdcf0"), lipgloss.Color("#303046"))),
		LayerOn:  green,
		LayerOff: red.Bold(true),
		Dialog: lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).
			BorderForeground(c(lipgloss.Color("#3b3b98"), lipgloss.Color("#afafff"))).Padding(0, 1),
		Error:  red.Bold(true),
		Review: diffview.DefaultStyles(dark),
	}
}
