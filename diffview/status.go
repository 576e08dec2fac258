package diffview

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// statusMessageRows is the status message wrapped to the screen's width, when the status line
// cannot show it whole beside the badges and the key help: an error must be read to the end, not
// cut with "…". Such a message takes the rows above the status line, at most half the screen.
// Nil when the status line shows the message whole, or shows none.
func (m *Model) statusMessageRows() []string {
	if m.status == "" || m.mode == modeSearch || m.width <= 0 || m.height < 4 {
		return nil
	}
	if strings.Contains(ansi.Strip(m.viewStatus()), m.status) {
		return nil
	}
	lines := strings.Split(ansi.Wrap(m.status, m.width, " "), "\n")
	if n := max(1, m.height/2); len(lines) > n {
		lines = lines[:n]
		lines[n-1] = ansi.Truncate(lines[n-1], m.width-1, "") + "…"
	}
	return lines
}

// statusBar draws the bottom of the screen: the status line, with a message too long for it on
// the rows above it (statusMessageRows) and the status line showing the counts.
func (m *Model) statusBar() string {
	rows := m.statusMessageRows()
	if rows == nil {
		return m.viewStatus()
	}
	var b strings.Builder
	for _, r := range rows {
		if m.statusErr {
			r = m.styles.Error.Render(r)
		}
		b.WriteString(fit(r, m.width))
		b.WriteByte('\n')
	}
	line := *m
	line.status = ""
	b.WriteString(line.viewStatus())
	return b.String()
}
