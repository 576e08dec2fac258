package diffview

import tea "charm.land/bubbletea/v2"

// App runs the review browser as a whole program (`shadow review`): full
// screen, mouse wheel on, the background colour queried for the theme.
type App struct{ Model Model }

// NewApp wraps a review browser as a tea.Model.
func NewApp(m Model) App { return App{Model: m} }

// Init loads the changes and asks the terminal for its background colour.
func (a App) Init() tea.Cmd { return tea.Batch(a.Model.Init(), tea.RequestBackgroundColor) }

// Update passes every message to the browser.
func (a App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	a.Model, cmd = a.Model.Update(msg)
	return a, cmd
}

// View draws the browser on the alternate screen with mouse reporting.
func (a App) View() tea.View {
	v := tea.NewView(a.Model.View())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	return v
}
