package ui

// The project's other open sessions (SPEC §15), as the app names them: its own session in the
// status bar, and, in the end box, the others beside it with how to compare them.

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/session"
)

// OtherSession is another open session of the app's project.
type OtherSession struct {
	// Label is its name and ID, or its ID alone (session.Session.Label).
	Label string
	// Compare is the command that compares the app's session with it.
	Compare string
}

// othersMsg delivers the project's other open sessions, read once the agent has ended.
type othersMsg []OtherSession

// listOthers reads the project's other open sessions (nil: none are read).
func listOthers(others func() []OtherSession) tea.Cmd {
	if others == nil {
		return nil
	}
	return func() tea.Msg { return othersMsg(others()) }
}

// OtherSessions lists the open sessions of s's project other than s, each with the command
// that compares s with it: compare(A, B) for the two sessions' names (IDs for unnamed ones).
func OtherSessions(st *session.Store, s *session.Session, compare func(a, b string) string) func() []OtherSession {
	id, project, me := s.ID(), s.Project(), Selector(s)
	return func() []OtherSession {
		open, err := st.OpenSessions(project)
		if err != nil {
			return nil
		}
		var out []OtherSession
		for _, o := range open {
			if o.ID() != id {
				out = append(out, OtherSession{Label: o.Label(), Compare: compare(me, Selector(o))})
			}
		}
		return out
	}
}

// Selector is what names s on a command line: its name, or its ID when it has none.
func Selector(s *session.Session) string {
	if s.Name() != "" {
		return s.Name()
	}
	return s.ID()
}

// maxBarName is the most cells a session's name takes in a narrow status bar.
const maxBarName = 16

// barSession is the session as the status bar names it at a level of compactness: its name and
// ID at first, then its name alone (shortened when long), or the end of its ID when unnamed.
func barSession(name, id string, compact int) string {
	switch {
	case name != "" && compact == 0:
		return name + " (" + id + ")"
	case name != "":
		return ansi.Truncate(name, maxBarName, "…")
	case compact == 0:
		return id
	case len(id) > 8 && strings.Contains(id, "-"):
		return "…" + id[strings.LastIndex(id, "-")+1:]
	}
	return id
}
