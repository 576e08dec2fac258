package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session"
)

// Two apps on one project, in two terminals, each in a session of its own (SPEC §15): `shadow
// tui --session a` and `shadow tui --session b`, their agents running at once (a's waits for a
// line while b's starts and stages), each status bar naming its session and each end box the
// other; then each reviews and applies its own session, b's apply merging three-way over the
// file a's apply changed (SPEC §13), and the project holds both edits.
func TestTUISessionsSideBySideInTmux(t *testing.T) {
	c := newCLI(t)
	var base strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&base, "%d\n", i)
	}
	p := fixture(t, map[string]string{"f.txt": base.String()})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	// An agent host left running by a failed step is stopped with the test.
	t.Cleanup(func() {
		left, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "agent", "state.json"))
		for _, f := range left {
			var st struct {
				PID int `json:"pid"`
			}
			if data, err := os.ReadFile(f); err == nil && json.Unmarshal(data, &st) == nil && st.PID > 0 {
				_ = syscall.Kill(st.PID, syscall.SIGKILL)
			}
		}
	})
	// Each agent edits its own line of f.txt and writes a file of its own, then waits for a line.
	// Its words are printed with printf so that its command line, shown by the preflight, never
	// matches them.
	app := func(name, line, edit string) *tmuxScreen {
		agent := fmt.Sprintf(`sed -i 's/^%s$/%s/' f.txt && echo %s > %s.txt; printf 'agent-%%s\n' %s-ready; read x; printf 'agent-%%s\n' %s-done`,
			line, edit, name, name, name, name)
		bin := shellQuote(c.bin)
		// Detached, the app comes back with tui --attach, which asks which session (exit 2)
		// without --session and takes the one named with it.
		script := bin + " tui --session " + name + " -- sh -c " + shellQuote(agent) + "; echo DETACHED=$?; " +
			bin + " tui --attach; echo UNNAMED=$?; read y; " + bin + " tui --attach --session " + name + "; echo " + strings.ToUpper(name) + "-EXIT=$?"
		return newTmuxOn(t, fmt.Sprintf("shadow-test-%d-%s", os.Getpid(), name), p, env, "sh", "-c", script)
	}
	// Both start at the same moment, each choosing its session while the other does.
	a, b := app("a", "1", "ONE"), app("b", "9", "NINE")
	for name, scr := range map[string]*tmuxScreen{"a": a, "b": b} {
		scr.waitFor("allowed")
		scr.keys("Enter", "agent-"+name+"-ready")
	}

	// Each agent still waits for its line: both run at once.
	for name, scr := range map[string]*tmuxScreen{"a": a, "b": b} {
		if out := scr.screen(); strings.Contains(out, "agent-"+name+"-done") || strings.Contains(out, "agent ended") {
			t.Fatalf("%s's agent ended before the other's started:\n%s", name, out)
		}
	}
	for name, scr := range map[string]*tmuxScreen{"a": a, "b": b} {
		if bar := regexp.MustCompile(`(?m)^ ` + name + ` │ .*│`); !bar.MatchString(scr.screen()) {
			t.Errorf("the status bar of session %s does not name it:\n%s", name, scr.screen())
		}
	}

	// Each detaches, and comes back to its own agent by its session's name.
	for name, scr := range map[string]*tmuxScreen{"a": a, "b": b} {
		scr.keys("C-]", "detach (the agent keeps running)", "D", "UNNAMED=")
		flat := strings.Join(strings.Fields(scr.screen()), "")
		if !strings.Contains(flat, "DETACHED=0") || !strings.Contains(flat, "tui--attach--session"+name) {
			t.Errorf("detaching session %s does not say how to come back to it:\n%s", name, scr.screen())
		}
		if !strings.Contains(flat, "UNNAMED=2") || !strings.Contains(flat, "chooseonewith--session") {
			t.Errorf("tui --attach without --session, two sessions open, does not ask which (exit 2):\n%s", scr.screen())
		}
		// The app is back on the agent's pane, its status bar naming the session.
		scr.send("Enter")
		waitMatch(scr, regexp.MustCompile(`agent-`+name+`-ready[\s\S]*\n `+name+` │ `))
	}

	// Each end box names the other session and how to compare the two.
	for _, x := range []struct {
		name, other string
		scr         *tmuxScreen
	}{{"a", "b", a}, {"b", "a", b}} {
		x.scr.keys("Enter", "exited with status 0")
		// The box's lines joined, without its frame and spaces: its long lines wrap anywhere.
		flat := strings.Join(strings.Fields(strings.ReplaceAll(x.scr.waitFor("also open"), "│", "")), "")
		other := regexp.MustCompile(`alsoopen:` + x.other + `\(\d{8}-\d{6}-[0-9a-f]+\)`)
		compare := "compare" + x.name + x.other + "enterreview"
		if !other.MatchString(flat) || !strings.Contains(flat, compare) {
			t.Errorf("the end box of session %s does not name session %s and `shadow compare %s %s`:\n%s", x.name, x.other, x.name, x.other, x.scr.screen())
		}
	}

	// Each reviews and applies its own session: a first, then b over what a's apply left.
	for _, scr := range []*tmuxScreen{a, b} {
		scr.keys(
			"Enter", "f.txt",
			"C-a", "accepted 2 undecided hunks",
			"w", "Apply to the project?",
			"y", "apply done",
		)
	}
	want := strings.Replace(strings.Replace(base.String(), "1\n", "ONE\n", 1), "\n9\n", "\nNINE\n", 1)
	if got, _ := os.ReadFile(filepath.Join(p, "f.txt")); string(got) != want {
		t.Errorf("f.txt after both applies:\n%s\nwant both edits:\n%s", got, want)
	}
	for _, name := range []string{"a", "b"} {
		if got, _ := os.ReadFile(filepath.Join(p, name+".txt")); string(got) != name+"\n" {
			t.Errorf("%s.txt after both applies: %q", name, got)
		}
	}

	// Each app ends naming its session.
	for name, scr := range map[string]*tmuxScreen{"a": a, "b": b} {
		exit := strings.ToUpper(name) + "-EXIT="
		scr.keys("Escape", "no staged changes", "q", exit)
		flat := strings.Join(strings.Fields(scr.screen()), "")
		if !regexp.MustCompile(`session`+name+`\(\d{8}-\d{6}-[0-9a-f]+\)isapplied`).MatchString(flat) || !strings.Contains(flat, exit+"0") {
			t.Errorf("app %s does not end naming its applied session, with status 0:\n%s", name, scr.screen())
		}
	}
	if out, err := exec.Command("git", "-C", p, "status", "--porcelain").CombinedOutput(); err != nil || !strings.Contains(string(out), "a.txt") || !strings.Contains(string(out), "b.txt") {
		t.Errorf("git status after both applies: %v\n%s", err, out)
	}
}

// With several sessions open on the project (SPEC §15), the line an app ends with names its
// session and puts --session in the command it gives, which works as printed: the name of a
// named session, the ID of an unnamed one beside others; the project's only session needs none.
// chosenSession (tui --attach, a busy tui) finds each by its name or ID, and asks for --session
// without one.
func TestComeBackHintOfSeveralSessions(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n", "b.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 >> a.txt")
	t.Setenv("XDG_STATE_HOME", c.state)
	st, err := session.Open(filepath.Join(c.state, "shadow"))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := st.Current(p)
	if err != nil {
		t.Fatal(err)
	}
	in := currentInvocation(p)
	if line := comeBackLine(st, alone, in); strings.Contains(line, "--session") {
		t.Errorf("the project's only session is named on the command line: %s", line)
	}
	c.must(p, "run", "--session", "codex", "--", "sh", "-c", "echo 2 >> b.txt")
	codex, err := st.Find(p, "codex")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s     *session.Session
		label string
		sel   string
		shows string
	}{{alone, alone.ID(), alone.ID(), "a.txt"}, {codex, "codex (" + codex.ID() + ")", "codex", "b.txt"}} {
		line := comeBackLine(st, tc.s, in)
		prefix := "session " + tc.label + ": `"
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, " review --session "+tc.sel+" ") {
			t.Errorf("come-back line of %s: %s", tc.label, line)
			continue
		}
		cmdline := strings.Replace(strings.TrimSuffix(strings.TrimPrefix(line, prefix), "` to come back to it"), " review ", " diff --stat ", 1)
		sh := exec.Command("sh", "-c", cmdline)
		sh.Env = append(os.Environ(), "SHADOW_TEST_CLI=1")
		if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), tc.shows) {
			t.Errorf("the command of %s's line (%s) does not reach it: %v\n%s", tc.label, cmdline, err, out)
		}
		for _, arg := range []string{tc.s.ID(), tc.sel} {
			if got, err := chosenSession(st, p, arg); err != nil || got.ID() != tc.s.ID() {
				t.Errorf("chosenSession(%q) = %v, %v; want %s", arg, got, err, tc.s.ID())
			}
		}
	}
	// The command that resumes an agent's conversation continues the session it ran in.
	screen := "Resume this session with:\nclaude --resume 0af91b17-ff13-4f87-8e86-1e62469a60c0\n"
	for _, tc := range []struct {
		s   *session.Session
		sel string
	}{{alone, alone.ID()}, {codex, "codex"}} {
		got := resumeInSession(in, st, tc.s, "", []string{"claude"}, screen)
		if want := " tui --session " + tc.sel + " --project " + p + " -- claude --resume 0af91b17-ff13-4f87-8e86-1e62469a60c0"; !strings.HasSuffix(got, want) {
			t.Errorf("resume command of %s:\n got %s\nwant …%s", tc.sel, got, want)
		}
	}
	var several *session.SeveralOpenError
	if _, err := chosenSession(st, p, ""); !errors.As(err, &several) {
		t.Errorf("chosenSession without a name, two open: %v, want a SeveralOpenError", err)
	}
	other := fixture(t, map[string]string{"c.txt": "1\n"})
	if _, err := chosenSession(st, other, alone.ID()); err == nil {
		t.Errorf("chosenSession takes the ID of another project's session")
	}
}

// waitMatch polls the screen until re matches it.
func waitMatch(s *tmuxScreen, re *regexp.Regexp) string {
	s.t.Helper()
	deadline := time.Now().Add(screenDeadline)
	for {
		scr := s.screen()
		if re.MatchString(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("screen never matched %s; it shows:\n%s", re, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
