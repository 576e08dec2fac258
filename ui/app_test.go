package ui

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// fixedNow is the clock of every golden view.
var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var testLayers = []Layer{{"userns", true}, {"netns", true}, {"overlay", true}, {"landlock7", true}, {"seccomp", true}}

// sampleEvents is a preflight with something in every stage: a degraded
// host check, a host finding shown for information, a failing DEP rule
// and a clean jail.
func sampleEvents(blockDep bool) []Event {
	f := func(st Stage, id, title string, r audit.Result, sev audit.Severity, blocks, info bool, ev ...string) Event {
		return Event{Stage: st, Finding: &Finding{Stage: st, ID: id, Title: title, Result: r, Severity: sev, Blocks: blocks, Info: info, Evidence: ev, Remedy: "Remove the install script or allow-list it with lavamoat.allowScripts."}}
	}
	return []Event{
		f(StageHost, "user namespaces", "unprivileged user namespaces work", audit.Pass, 0, false, false),
		f(StageHost, "overlay in user namespace", "mounted and written", audit.Pass, 0, false, false),
		f(StageHost, "landlock", "ABI 7", audit.Pass, 0, false, false),
		f(StageHost, "pasta / slirp4netns", "slirp4netns only", audit.Skipped, 0, false, false),
		{Stage: StageHost, Done: true},
		f(StageHostEnv, "ENV001", "running as uid 0", audit.Fail, audit.High, false, true, "uid 0 with full capabilities"),
		f(StageHostEnv, "FS001", "credential files readable", audit.Pass, audit.Critical, false, true),
		{Stage: StageHostEnv, Done: true},
		f(StageProject, "DEP000", "manifest inventory", audit.Pass, audit.Low, false, false),
		f(StageProject, "DEP003", "lifecycle scripts in dependencies", audit.Fail, audit.High, blockDep, false, "package-lock.json:12: left-pad has hasInstallScript"),
		{Stage: StageProject, Done: true},
		f(StageJail, "ENV003", "seccomp mode 0", audit.Pass, audit.High, false, false),
		f(StageJail, "NET002", "host network namespace shared", audit.Pass, audit.Critical, false, false),
	}
}

func sampleVerdict(blocked bool) Verdict {
	v := Verdict{Profile: "dependency", Warned: true}
	if blocked {
		v.Blocked, v.Blocking = true, []string{"DEP003"}
		v.Remedy = "Fix what blocks (select a finding for its remedy), or rerun with a --trust profile that accepts it."
	}
	return v
}

// fakePreflight replays events, then returns the verdict.
func fakePreflight(events []Event, v Verdict) PreflightFunc {
	return func(ctx context.Context, emit func(Event)) (Verdict, error) {
		for _, ev := range events {
			emit(ev)
		}
		for st := Stage(0); st < numStages; st++ {
			emit(Event{Stage: st, Done: true})
		}
		return v, nil
	}
}

func testOptions(src diffview.Source, agent AgentFunc) Options {
	return Options{
		Argv:      []string{"aider", "--model", "sonnet"},
		Profile:   "dependency",
		SessionID: "20261130-ab12cd",
		Preflight: fakePreflight(sampleEvents(false), sampleVerdict(false)),
		Agent:     agent,
		Review:    src,
		Layers:    testLayers,
		Now:       func() time.Time { return fixedNow },
		Dark:      true,
	}
}

// idleAgent waits until it is stopped.
func idleAgent(ctx context.Context, tty *os.File) (AgentResult, error) {
	<-ctx.Done()
	return AgentResult{ExitCode: 143, Reason: "stopped"}, nil
}

func newModel(t testing.TB, opts Options) Model {
	t.Helper()
	m, err := NewModel(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// step applies one message to the model.
func step(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	next, _ := m.Update(msg)
	return next.(Model)
}

// screenText is the view as plain text.
func screenText(m Model) string { return ansi.Strip(m.View().Content) }

var sizes = []struct{ w, h int }{{80, 24}, {160, 48}}

// checkScreen asserts the view fills exactly w×h cells.
func checkScreen(t *testing.T, s string, w, h int) {
	t.Helper()
	lines := strings.Split(s, "\n")
	if len(lines) != h {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, ansi.StringWidth(l), w, l)
		}
	}
}

func TestGoldenPreflight(t *testing.T) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			base := newModel(t, testOptions(nil, idleAgent).withReview(t))
			base = step(t, base, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			events := sampleEvents(false)

			t.Run("running", func(t *testing.T) {
				m := base
				for _, ev := range events[:9] {
					m = step(t, m, preflightEventMsg{ev: ev})
				}
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "running…") {
					t.Error("a running stage does not say so")
				}
				golden.RequireEqual(t, s)
			})
			t.Run("allowed", func(t *testing.T) {
				m := base
				for _, ev := range events {
					m = step(t, m, preflightEventMsg{ev: ev})
				}
				m = step(t, m, preflightDoneMsg{verdict: sampleVerdict(false)})
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				golden.RequireEqual(t, s)
			})
			t.Run("host-info", func(t *testing.T) {
				m := base
				for _, ev := range events {
					m = step(t, m, preflightEventMsg{ev: ev})
				}
				m = step(t, m, preflightDoneMsg{verdict: sampleVerdict(false)})
				if strings.Contains(screenText(m), "running as uid 0") {
					t.Error("host findings are listed before i")
				}
				m = step(t, m, press("i"))
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "ENV001") || !strings.Contains(s, "(information)") {
					t.Error("i does not list the host's findings as information")
				}
				golden.RequireEqual(t, s)
			})
			t.Run("blocked", func(t *testing.T) {
				m := base
				for _, ev := range sampleEvents(true) {
					m = step(t, m, preflightEventMsg{ev: ev})
				}
				m = step(t, m, preflightDoneMsg{verdict: sampleVerdict(true)})
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "BLOCKED") || !strings.Contains(s, "DEP003") {
					t.Error("a blocked verdict does not name the rule")
				}
				golden.RequireEqual(t, s)
			})
			t.Run("details", func(t *testing.T) {
				m := base
				for _, ev := range sampleEvents(true) {
					m = step(t, m, preflightEventMsg{ev: ev})
				}
				m = step(t, m, preflightDoneMsg{verdict: sampleVerdict(true)})
				m = step(t, m, press("j"))
				m = step(t, m, press("j"))
				m = step(t, m, press("enter"))
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "What to do") {
					t.Error("details do not show the remedy")
				}
				golden.RequireEqual(t, s)
			})
		})
	}
}

func TestGoldenAgent(t *testing.T) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := newModel(t, testOptions(nil, idleAgent).withReview(t))
			m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			m.phase = phaseAgent
			m.started, m.now = fixedNow, fixedNow.Add(83*time.Second)
			m.opts.Now = func() time.Time { return fixedNow.Add(83 * time.Second) }
			m.stats = Stats{Files: 3, Requests: 2, Checkpoints: 2, LastCheckpoint: "c2"}
			m.pane.Write([]byte("\x1b[1;34maider\x1b[0m v0.0 stand-in · model sonnet\r\n\r\n\x1b[32m>\x1b[0m fix the cart total\r\nEditing src/cart.js\r\n\x1b[32m> \x1b[0m"))

			t.Run("pane", func(t *testing.T) {
				s := screenText(m)
				checkScreen(t, s, sz.w, sz.h)
				wants := []string{"…ab12cd", "✓ll7", "01:23", "3 staged 2 net c2", "ctrl+]"}
				if sz.w >= 120 {
					wants = []string{"shadow 20261130-ab12cd", "✓userns ✓netns ✓overlay ✓landlock7 ✓seccomp", "01:23", "3 staged", "2 net", "2 checkpoints (c2)", "ctrl+] menu"}
				}
				for _, want := range wants {
					if !strings.Contains(s, want) {
						t.Errorf("status bar lacks %q", want)
					}
				}
				golden.RequireEqual(t, s)
			})
			t.Run("menu", func(t *testing.T) {
				mm := step(t, m, press("ctrl+]"))
				s := screenText(mm)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "stop the agent") {
					t.Error("the prefix key does not open the menu")
				}
				golden.RequireEqual(t, s)
			})
			t.Run("help", func(t *testing.T) {
				mm := step(t, step(t, m, press("ctrl+]")), press("?"))
				s := screenText(mm)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "stop the agent") || !strings.Contains(s, "shadow's commands") {
					t.Error("help does not list the app's keys")
				}
				golden.RequireEqual(t, s)
			})
			t.Run("read-only-review", func(t *testing.T) {
				next, cmd := step(t, m, press("ctrl+]")).Update(press("r"))
				mm := step(t, next.(Model), cmd())
				s := screenText(mm)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "read-only") || !strings.Contains(s, "a.txt") {
					t.Error("the review over a running agent is not marked read-only")
				}
				golden.RequireEqual(t, s)
			})
			t.Run("ended", func(t *testing.T) {
				mm := step(t, m, agentExitMsg{res: AgentResult{ExitCode: 0}})
				s := screenText(mm)
				checkScreen(t, s, sz.w, sz.h)
				if !strings.Contains(s, "exited with status 0") {
					t.Error("the end of the agent is not shown")
				}
				golden.RequireEqual(t, s)
			})
		})
	}
}

func TestGoldenReview(t *testing.T) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			opts := testOptions(nil, idleAgent).withReview(t)
			m := newModel(t, opts)
			m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			m.phase = phaseAgent
			m.result = &AgentResult{}
			next, cmd := m.Update(press("enter"))
			m = next.(Model)
			if m.phase != phaseReview {
				t.Fatal("enter after the agent ended does not open the review")
			}
			m = step(t, m, cmd())
			s := screenText(m)
			checkScreen(t, s, sz.w, sz.h)
			if !strings.Contains(s, "a.txt") {
				t.Error("the review does not list the staged file")
			}
			golden.RequireEqual(t, s)
		})
	}
}

// withReview gives the options a review source over a real session with
// one staged file.
func (o Options) withReview(t testing.TB) Options {
	t.Helper()
	ts := newTestSession(t, map[string]string{"a.txt": baseText})
	ts.stage(t, map[string]string{"a.txt": stagedText})
	o.Review = reviewsrc.New(ts.lock, ts.s)
	return o
}

// press makes the key press a terminal would send for s.
func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "ctrl+]":
		return tea.KeyPressMsg{Code: ']', Mod: tea.ModCtrl}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// observer keeps the app's latest screen, taken on the program's own
// goroutine (a tea filter), so tests can wait on what is shown.
type observer struct {
	mu     sync.Mutex
	screen string
	model  Model
}

type probeMsg struct{}

func (o *observer) filter(m tea.Model, msg tea.Msg) tea.Msg {
	if mm, ok := m.(Model); ok {
		s := screenText(mm)
		o.mu.Lock()
		o.screen, o.model = s, mm
		o.mu.Unlock()
	}
	return msg
}

func (o *observer) current() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.screen
}

func TestViewsAtTinySizes(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{1, 1}, {10, 3}, {30, 8}, {50, 12}} {
		m := newModel(t, testOptions(nil, idleAgent).withReview(t))
		m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		for _, ev := range sampleEvents(true) {
			m = step(t, m, preflightEventMsg{ev: ev})
		}
		m = step(t, m, preflightDoneMsg{verdict: sampleVerdict(true)})
		views := []string{screenText(m)}
		m = step(t, m, press("j"))
		m = step(t, m, press("enter"))
		views = append(views, screenText(m))
		m.phase = phaseAgent
		m.pre.details = false
		views = append(views, screenText(m))
		m = step(t, m, press("ctrl+]"))
		views = append(views, screenText(m))
		m = step(t, m, agentExitMsg{})
		views = append(views, screenText(m))
		for i, v := range views {
			if n := len(strings.Split(v, "\n")); n > sz.h {
				t.Errorf("%dx%d view %d has %d lines", sz.w, sz.h, i, n)
			}
			for _, l := range strings.Split(v, "\n") {
				if ansi.StringWidth(l) > sz.w {
					t.Errorf("%dx%d view %d: line %q is wider than the screen", sz.w, sz.h, i, l)
					break
				}
			}
		}
	}
}

func TestAgentTitleInStatusBarAndWindow(t *testing.T) {
	m := newModel(t, testOptions(nil, idleAgent).withReview(t))
	m = step(t, m, tea.WindowSizeMsg{Width: 120, Height: 20})
	m.phase = phaseAgent
	m.pane.Write([]byte("\x1b]0;✋ waiting\x07ready"))
	s := screenText(m)
	if strings.Contains(s, "ready") == false || strings.Count(s, "waiting") != 1 {
		t.Errorf("the title is not in the status bar alone:\n%s", s)
	}
	if last := s[strings.LastIndex(s, "\n")+1:]; !strings.Contains(last, "✋ waiting") {
		t.Errorf("status bar %q lacks the title", last)
	}
	if got := m.View().WindowTitle; got != "shadow: ✋ waiting" {
		t.Errorf("window title %q", got)
	}
}

func TestPaneScrollbackInStatusBar(t *testing.T) {
	m := newModel(t, testOptions(nil, idleAgent).withReview(t))
	m = step(t, m, tea.WindowSizeMsg{Width: 120, Height: 20})
	m.phase = phaseAgent
	for i := range 50 {
		m.pane.Write([]byte(fmt.Sprintf("line %d\r\n", i)))
	}
	m = step(t, m, tea.KeyPressMsg{Code: tea.KeyPgUp, Mod: tea.ModShift})
	s := screenText(m)
	if last := s[strings.LastIndex(s, "\n")+1:]; !strings.Contains(last, "scrollback 19/32") {
		t.Errorf("status bar %q lacks the scrollback", last)
	}
	if !strings.HasPrefix(s, "line 13") {
		t.Errorf("the pane does not show a page back:\n%s", s)
	}
	m = step(t, m, tea.MouseWheelMsg(tea.Mouse{Button: tea.MouseWheelDown}))
	if off, _ := m.pane.Scrollback(); off != 16 {
		t.Errorf("the wheel left the scrollback at %d", off)
	}
	m = step(t, m, press("q"))
	if s := screenText(m); strings.Contains(s, "scrollback") || !strings.Contains(s, "line 49") {
		t.Errorf("another key did not return to the live view:\n%s", s)
	}
}
