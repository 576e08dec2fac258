package ui

// Drawing the app: each screen, the boxes over the agent's pane (menu, help, the end box) and
// the status bar, fitted to the terminal.

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/internal/english"
)

// View draws the phase showing.
func (m Model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "shadow"
	switch {
	case m.reviewing:
		content := m.review.View()
		if m.readOnly {
			content = m.readOnlyBanner(content)
		}
		v.Content = content
		v.MouseMode = tea.MouseModeCellMotion
	case m.phase == phasePreflight:
		v.Content = fit(m.pre.view(m.styles, m.keys, &m.opts, m.width, m.height), m.width, m.height)
	default:
		v.Content = fit(m.agentView(), m.width, m.height)
		v.MouseMode = tea.MouseModeCellMotion
		if t := m.pane.Title(); t != "" {
			v.WindowTitle = "shadow: " + t // bubbletea clears it at exit
		}
		if m.result == nil && !m.menu && !m.helpOpen && !m.asking() {
			if x, y, ok := m.pane.Cursor(); ok {
				v.Cursor = tea.NewCursor(x, y)
			}
		}
	}
	return v
}

// reviewSize is the review browser's area: the screen, less a banner line
// when it is read-only.
func (m Model) reviewSize() (int, int) {
	if m.readOnly {
		return m.width, max(1, m.height-1)
	}
	return m.width, m.height
}

// readOnlyBanner puts a note above the browser that it is read-only.
func (m Model) readOnlyBanner(content string) string {
	text := " read-only: the agent is still running · q or esc returns to it "
	if m.asking() {
		text = " read-only · a network request waits for your answer: q or esc returns to the agent "
	}
	banner := m.styles.Warned.Render(text)
	return fit(ansi.Truncate(banner, m.width, "…")+"\n"+content, m.width, m.height)
}

// agentView is the pane with the status bar, and the menu or help over it.
func (m Model) agentView() string {
	w, h := m.paneSize()
	body := m.pane.View()
	switch {
	case m.asking() && !m.menu:
		box := m.askBox()
		if m.fits(box) {
			m.askShown.Store(m.asks[0].ID)
		}
		body = overlay(body, m.shown(box), w, h)
	case m.helpOpen:
		body = overlay(body, m.shown(m.helpBox()), w, h)
	case m.menu:
		body = overlay(body, m.shown(m.menuBox()), w, h)
	case m.result != nil:
		body = overlay(body, m.shown(m.endBox()), w, h)
	}
	return body + "\n" + m.statusBar()
}

// menuBox is the prefix key's command menu.
func (m Model) menuBox() string {
	var b strings.Builder
	b.WriteString(m.styles.Title.Render("shadow") + m.styles.Subtle.Render(" · "+m.keys.Close.Help().Key+" back to the agent") + "\n")
	for _, k := range m.keys.MenuHelp() {
		fmt.Fprintf(&b, "%s  %s\n", m.styles.Key.Render(fmt.Sprintf("%-5s", k.Help().Key)), k.Help().Desc)
	}
	fmt.Fprintf(&b, "%s  %s", m.styles.Key.Render(fmt.Sprintf("%-5s", m.keys.Prefix.Help().Key)), "send "+m.keys.Prefix.Help().Key+" to the agent")
	return m.dialogBox(b.String())
}

// helpBox lists the keys of the agent phase.
func (m Model) helpBox() string {
	k := m.keys
	agentKeys := [][]key.Binding{{k.Prefix, k.Review, k.Checkpoint, k.Stop, k.Detach, k.Help, k.Close, k.Continue}}
	return m.dialogBox(m.styles.Title.Render("keys while the agent runs") + "\n" + m.help.FullHelpView(agentKeys) +
		"\n" + m.styles.Subtle.Render("every other key goes to the agent") +
		"\n\n" + m.styles.Title.Render("scrolling back") + "\n" + m.help.FullHelpView(m.pane.KeyMap().FullHelp()) +
		"\n" + m.styles.Subtle.Render("while scrolled back every other key returns to the live view"))
}

// endBox says how the agent ended and what comes next.
func (m Model) endBox() string {
	var s string
	switch {
	case m.agentErr != nil:
		s = m.styles.Error.Render("the agent could not run: ") + m.agentErr.Error()
	case m.result.Reason != "":
		s = fmt.Sprintf("the agent was stopped: %s (status %d)", m.result.Reason, m.result.ExitCode)
	default:
		s = fmt.Sprintf("the agent exited with status %d", m.result.ExitCode)
	}
	for _, n := range m.result.Notes {
		s += "\n" + m.styles.Error.Render("! ") + n
	}
	if m.resume != "" {
		s += "\nto resume the agent's conversation, where shadow keeps its state:\n  " + m.styles.Key.Render(m.resume)
	}
	s += fmt.Sprintf("\n%s staged · %s\n", english.Count(m.stats.Files, "file"), english.Count(m.stats.Requests, "network request"))
	if len(m.others) > 0 {
		labels := make([]string, len(m.others))
		for i, o := range m.others {
			labels[i] = o.Label
		}
		s += "also open: " + strings.Join(labels, ", ") + "\n"
		for _, o := range m.others {
			s += "compare: " + m.styles.Key.Render(o.Compare) + "\n"
		}
	}
	s += m.styles.Key.Render(m.keys.Continue.Help().Key) + " review the changes   " + m.styles.Key.Render(m.keys.Quit.Help().Key) + " quit (the session stays open)"
	return m.dialogBox(s)
}

// statusBar is the agent phase's bottom line: session, layers, elapsed
// time, counts and the prefix key. On a narrow screen the layers are
// abbreviated, then the labels dropped.
func (m Model) statusBar() string {
	st := m.styles
	elapsed := time.Duration(0)
	if !m.started.IsZero() {
		elapsed = m.now.Sub(m.started)
	}
	right := st.Key.Render(m.keys.Prefix.Help().Key) + " menu"
	if m.note != "" {
		right = m.note
	}
	if off, total := m.pane.Scrollback(); off > 0 {
		right = fmt.Sprintf("scrollback %d/%d", off, total)
	}
	if m.result != nil {
		right = "agent ended"
	}
	var line string
	for compact := 0; compact < 3; compact++ {
		var parts []string
		name := barSession(m.opts.SessionName, m.opts.SessionID, compact)
		if compact == 0 {
			name = st.Title.Render("shadow") + " " + name
		}
		parts = append(parts, name)
		var layers []string
		for _, l := range m.opts.Layers {
			name := l.Name
			if compact > 0 {
				name = abbreviate(name)
			}
			if l.On {
				layers = append(layers, st.LayerOn.Render("✓"+name))
			} else {
				layers = append(layers, st.LayerOff.Render("✗"+name))
			}
		}
		if len(layers) > 0 {
			parts = append(parts, strings.Join(layers, " "))
		}
		parts = append(parts, fmtElapsed(elapsed))
		if t := m.pane.Title(); t != "" && compact < 2 {
			parts = append(parts, st.Subtle.Render(ansi.Truncate(t, 40/(compact+1), "…")))
		}
		switch compact {
		case 0:
			parts = append(parts, fmt.Sprintf("%d staged", m.stats.Files), fmt.Sprintf("%d net", m.stats.Requests)+m.deniedCount(), m.checkpointCount())
		case 1:
			parts = append(parts, fmt.Sprintf("%d staged %d net", m.stats.Files, m.stats.Requests)+m.deniedCount()+m.latestCheckpoint())
			if off, _ := m.pane.Scrollback(); m.note == "" && m.result == nil && off == 0 {
				right = st.Key.Render(m.keys.Prefix.Help().Key)
			}
		default:
			parts = append(parts, fmt.Sprintf("%d+%d", m.stats.Files, m.stats.Requests))
			if m.stats.Denied > 0 {
				parts[len(parts)-1] += fmt.Sprintf("!%d", m.stats.Denied)
			}
		}
		left := strings.Join(parts, " │ ")
		gap := m.width - lipgloss.Width(left) - lipgloss.Width(right) - 2
		if gap >= 1 {
			line = " " + left + strings.Repeat(" ", gap) + right + " "
			break
		}
		line = ansi.Truncate(" "+left+" │ "+right, m.width, "…")
	}
	return st.StatusBar.Width(m.width).MaxWidth(m.width).Render(line)
}

// abbreviate shortens a layer's name for a narrow status bar.
func abbreviate(name string) string {
	switch {
	case name == "userns":
		return "user"
	case strings.HasPrefix(name, "netns"):
		return "net" + strings.TrimPrefix(name, "netns")
	case name == "overlay":
		return "ovl"
	case strings.HasPrefix(name, "landlock"):
		return "ll" + strings.TrimPrefix(name, "landlock")
	case name == "seccomp":
		return "scmp"
	}
	return name
}

// fmtElapsed is a duration as mm:ss, or h:mm:ss past an hour.
func fmtElapsed(d time.Duration) string {
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// fit clips content to width×height cells, so that a screen too small for
// a layout degrades instead of scrolling the terminal.
func fit(content string, width, height int) string {
	lines := strings.Split(content, "\n")
	if len(lines) > height {
		lines = lines[:max(height, 1)]
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > width {
			lines[i] = ansi.Truncate(l, width, "")
		}
	}
	return strings.Join(lines, "\n")
}

// overlay draws box centred over the width×height background.
func overlay(bg, box string, width, height int) string {
	lines := strings.Split(bg, "\n")
	for len(lines) < height {
		lines = append(lines, strings.Repeat(" ", width))
	}
	bl := strings.Split(box, "\n")
	bw := lipgloss.Width(box)
	x := max(0, (width-bw)/2)
	y := max(0, (height-len(bl))/2)
	for i, l := range bl {
		if y+i >= len(lines) {
			break
		}
		row := lines[y+i]
		l = ansi.Truncate(l, width-x, "")
		left := ansi.Truncate(row, x, "")
		if pad := x - ansi.StringWidth(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ansi.TruncateLeft(row, x+ansi.StringWidth(l), "")
		lines[y+i] = left + "\x1b[m" + l + "\x1b[m" + right
	}
	return strings.Join(lines[:height], "\n")
}

// deniedCount is what the status bar adds to the network count when the
// proxy refused requests: " (N DENIED)", else nothing.
func (m Model) deniedCount() string {
	if m.stats.Denied == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d DENIED)", m.stats.Denied)
}
