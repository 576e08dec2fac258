package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"
)

// A named session (SPEC §15) is named in the status bar at every width, with its ID while it
// fits; the end box lists the project's other open sessions, read when the agent ends, with
// the command that compares each with this one, and says nothing of them when there are none.
func TestGoldenSessions(t *testing.T) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			others := []OtherSession{
				{Label: "codex (20261130-cd34ef)", Compare: "shadow compare claude codex"},
				{Label: "20261130-ef56ab", Compare: "shadow compare claude 20261130-ef56ab"},
			}
			opts := testOptions(nil, idleAgent).withReview(t)
			opts.SessionName = "claude"
			var asked int
			opts.Others = func() []OtherSession { asked++; return others }
			m := newModel(t, opts)
			m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			m.phase = phaseAgent
			m.started, m.now = fixedNow, fixedNow.Add(83*time.Second)
			m.opts.Now = func() time.Time { return fixedNow.Add(83 * time.Second) }
			m.stats = Stats{Files: 3, Requests: 2, Checkpoints: 2, LastCheckpoint: "c2"}
			m.pane.Write([]byte("> fix the cart total\r\nEditing src/cart.js\r\n"))

			t.Run("pane", func(t *testing.T) {
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				want := " claude │ "
				if sz.w >= 120 {
					want = "shadow claude (20261130-ab12cd) │ "
				}
				if bar := lastLine(s); !strings.Contains(bar, want) {
					t.Errorf("the status bar does not name the session (%q):\n%s", want, bar)
				}
				if asked != 0 {
					t.Errorf("the other sessions were read %d times while the agent runs", asked)
				}
				golden.RequireEqual(t, s)
			})
			t.Run("ended-others", func(t *testing.T) {
				mm := ended(t, m)
				if asked != 1 {
					t.Errorf("the other sessions were read %d times when the agent ended, want once", asked)
				}
				s := screenText(mm)
				checkScreen(t, s, sz.w, sz.h)
				flat := strings.Join(strings.Fields(s), " ")
				for _, want := range []string{"also open: codex (20261130-cd34ef), 20261130-ef56ab",
					"compare: shadow compare claude codex", "compare: shadow compare claude 20261130-ef56ab"} {
					if !strings.Contains(flat, want) {
						t.Errorf("the end box lacks %q:\n%s", want, s)
					}
				}
				golden.RequireEqual(t, s)
			})
			t.Run("ended-alone", func(t *testing.T) {
				others, asked = nil, 0
				s := screenText(ended(t, m))
				if asked != 1 {
					t.Errorf("the other sessions were read %d times when the agent ended, want once", asked)
				}
				if strings.Contains(s, "also open") || strings.Contains(s, "compare") {
					t.Errorf("the end box of the project's only open session names others:\n%s", s)
				}
				if !strings.Contains(s, "exited with status 0") {
					t.Errorf("no end box:\n%s", s)
				}
			})
		})
	}
}

// ended is m once the agent has exited with status 0 and the commands that follow have
// delivered what they read.
func ended(t *testing.T, m Model) Model {
	t.Helper()
	next, cmd := m.Update(agentExitMsg{res: AgentResult{ExitCode: 0}})
	m = next.(Model)
	for _, msg := range runCmds(cmd) {
		if _, ok := msg.(othersMsg); ok {
			m = step(t, m, msg)
		}
	}
	return m
}

// runCmds runs cmd and the commands of the batches it returns, and gives back their messages.
func runCmds(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	batch, ok := msg.(tea.BatchMsg)
	if !ok {
		return []tea.Msg{msg}
	}
	var out []tea.Msg
	for _, c := range batch {
		out = append(out, runCmds(c)...)
	}
	return out
}

// lastLine is the last line of s.
func lastLine(s string) string { return s[strings.LastIndex(s, "\n")+1:] }

// The end box's other sessions are the project's open ones but the app's own, each named by
// its label and compared by name (by ID when it has none); applied and discarded sessions are
// not among them.
func TestOtherSessionsAreTheProjectsOpenOnes(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText})
	codex, err := ts.lock.CreateNamed("codex")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := ts.lock.CreateNamed("gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.Discard(); err != nil {
		t.Fatal(err)
	}
	cmp := func(a, b string) string { return "compare " + a + " " + b }
	got := OtherSessions(ts.store, ts.s, cmp)()
	want := []OtherSession{{Label: "codex (" + codex.ID() + ")", Compare: "compare " + ts.s.ID() + " codex"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("others of the unnamed session: %v, want %v", got, want)
	}
	got = OtherSessions(ts.store, codex, cmp)()
	want = []OtherSession{{Label: ts.s.ID(), Compare: "compare codex " + ts.s.ID()}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("others of codex: %v, want %v", got, want)
	}
}
