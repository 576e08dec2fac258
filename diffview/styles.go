package diffview

import (
	"charm.land/lipgloss/v2"
)

// Styles is the review browser's theme: every colour it draws with.
type Styles struct {
	Separator    lipgloss.Style
	Dir          lipgloss.Style
	File         lipgloss.Style
	FileCursor   lipgloss.Style // the selected file when the tree has focus
	FileCurrent  lipgloss.Style // the selected file when the diff has focus
	FileDimmed   lipgloss.Style // ignored files
	StatusLetter map[Status]lipgloss.Style
	Badge        lipgloss.Style
	BadgeAlert   lipgloss.Style // protected, conflict, findings
	Count        lipgloss.Style

	FileHeader    lipgloss.Style
	Note          lipgloss.Style
	HunkHeader    lipgloss.Style
	HunkAccepted  lipgloss.Style
	HunkRejected  lipgloss.Style
	HunkUndecided lipgloss.Style
	LineNo        lipgloss.Style
	CursorLineNo  lipgloss.Style
	Selected      lipgloss.Style // the mark of a line selected with space
	Context       lipgloss.Style
	Added         lipgloss.Style
	Removed       lipgloss.Style
	AddedWord     lipgloss.Style
	RemovedWord   lipgloss.Style
	Escaped       lipgloss.Style // visibly escaped bytes: control, bidi, invalid UTF-8
	Match         lipgloss.Style
	More          lipgloss.Style // the ‹ and › of a line that goes on past the pane's edge

	Keyword, String, Comment, Number, Function, Type lipgloss.Style

	StatusBar   lipgloss.Style
	Step        lipgloss.Style // the status bar's label of a view narrowed to one step
	ReadOnly    lipgloss.Style // the status bar's label of a review that takes no change
	Error       lipgloss.Style
	Dialog      lipgloss.Style
	DialogTitle lipgloss.Style
}

// DefaultStyles is the theme for a dark or light terminal background; both
// keep added and removed lines distinguishable without relying on syntax
// colours.
func DefaultStyles(dark bool) Styles {
	c := lipgloss.LightDark(dark)
	fg := func(light, dark string) lipgloss.Style {
		return lipgloss.NewStyle().Foreground(c(lipgloss.Color(light), lipgloss.Color(dark)))
	}
	bg := func(s lipgloss.Style, light, dark string) lipgloss.Style {
		return s.Background(c(lipgloss.Color(light), lipgloss.Color(dark)))
	}
	plain := lipgloss.NewStyle()
	return Styles{
		Separator:   fg("#c0c0c0", "#444444"),
		Dir:         fg("#5f5f87", "#8787af").Bold(true),
		File:        plain,
		FileCursor:  bg(fg("#000000", "#ffffff").Bold(true), "#d0d0ff", "#3a3a6a"),
		FileCurrent: bg(plain.Bold(true), "#e8e8e8", "#303030"),
		FileDimmed:  fg("#8a8a8a", "#767676"),
		StatusLetter: map[Status]lipgloss.Style{
			StatusAdded:    fg("#007a00", "#5fd75f").Bold(true),
			StatusModified: fg("#875f00", "#d7af5f").Bold(true),
			StatusDeleted:  fg("#af0000", "#ff5f5f").Bold(true),
			StatusRenamed:  fg("#005faf", "#5fafff").Bold(true),
		},
		Badge:      fg("#5f5f5f", "#a8a8a8"),
		BadgeAlert: fg("#af0000", "#ff8787").Bold(true),
		Count:      fg("#5f5f5f", "#a8a8a8"),

		FileHeader:    fg("#000000", "#ffffff").Bold(true),
		Note:          fg("#5f5f5f", "#a8a8a8").Italic(true),
		HunkHeader:    fg("#005f87", "#5fafd7"),
		HunkAccepted:  fg("#007a00", "#5fd75f").Bold(true),
		HunkRejected:  fg("#af0000", "#ff5f5f").Bold(true),
		HunkUndecided: fg("#875f00", "#d7af5f"),
		LineNo:        fg("#8a8a8a", "#6c6c6c"),
		CursorLineNo:  bg(fg("#000000", "#ffffff").Bold(true), "#d0d0ff", "#3a3a6a"),
		Selected:      fg("#5f00af", "#d787ff").Bold(true),
		Context:       plain,
		Added:         bg(plain, "#e6ffec", "#12261e"),
		Removed:       bg(plain, "#ffebe9", "#3c1618"),
		AddedWord:     bg(plain, "#abf2bc", "#1f6f3b").Bold(true),
		RemovedWord:   bg(plain, "#ffc0c0", "#8e2a2f").Bold(true),
		Escaped:       bg(fg("#ffffff", "#000000"), "#af00af", "#ff87ff").Bold(true),
		Match:         plain.Underline(true).Bold(true),
		More:          fg("#875f00", "#d7af5f").Bold(true),

		Keyword:  fg("#8700af", "#d787ff"),
		String:   fg("#005f00", "#afd787"),
		Comment:  fg("#6c6c6c", "#8a8a8a").Italic(true),
		Number:   fg("#005f87", "#87d7ff"),
		Function: fg("#00005f", "#87afff"),
		Type:     fg("#5f5f00", "#d7d787"),

		StatusBar:   bg(fg("#000000", "#d0d0d0"), "#e4e4e4", "#262626"),
		Step:        bg(fg("#ffffff", "#000000"), "#005f87", "#5fafd7").Bold(true),
		ReadOnly:    bg(fg("#000000", "#000000"), "#ffd75f", "#d7af00").Bold(true),
		Error:       fg("#af0000", "#ff5f5f").Bold(true),
		Dialog:      lipgloss.NewStyle().Padding(0, 1),
		DialogTitle: fg("#000000", "#ffffff").Bold(true).Underline(true),
	}
}
