package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Two apps on one project: while the first runs its agent attached, a second `shadow tui` and a
// `shadow tui --attach` each say that another app holds the agent, by its process and terminal,
// and what can be done, and end without showing a run of their own; the first app's agent runs
// on, its work staged.
func TestTUIHeldElsewhereInTmux(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "alpha\n"})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	agent := `echo staged > b.txt; printf 'agent-%s\n' ready; read x; printf 'agent-got-%s\n' "$x"`
	first := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui -- sh -c "+shellQuote(agent)+"; echo FIRST-EXIT=$?")
	statePath := func() string {
		left, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "agent", "state.json"))
		if len(left) == 1 {
			return left[0]
		}
		return ""
	}
	t.Cleanup(func() {
		var st struct {
			PID int `json:"pid"`
		}
		if data, err := os.ReadFile(statePath()); err == nil && json.Unmarshal(data, &st) == nil && st.PID > 0 {
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
		}
	})
	first.waitFor("allowed")
	first.keys("Enter", "agent-ready")

	// The agent's state names the app attached to it.
	var st struct {
		Attached *struct {
			PID int    `json:"pid"`
			TTY string `json:"tty"`
		} `json:"attached"`
	}
	for deadline := time.Now().Add(screenDeadline); ; time.Sleep(50 * time.Millisecond) {
		if data, err := os.ReadFile(statePath()); err == nil && json.Unmarshal(data, &st) == nil && st.Attached != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's state never named the attached app")
		}
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.Attached.PID)); !strings.Contains(string(cmdline), "tui") ||
		!strings.HasPrefix(st.Attached.TTY, "/dev/pts/") {
		t.Fatalf("the attached app is pid %d (%q) on %q, not the first shadow tui on its terminal", st.Attached.PID, cmdline, st.Attached.TTY)
	}

	second := newTmuxOn(t, fmt.Sprintf("shadow-test-%d-second", os.Getpid()), p, env, "sh", "-c",
		shellQuote(c.bin)+" tui -- true; echo NEW-EXIT=$?; "+shellQuote(c.bin)+" tui --attach; echo ATTACH-EXIT=$?")
	scr := second.waitFor("ATTACH-EXIT=")
	flat := strings.Join(strings.Fields(scr), "")
	holder := strings.Join(strings.Fields(fmt.Sprintf("runs in another shadow tui (pid %d, terminal %s): wait for it to end there, "+
		"or detach it there (ctrl+] then D) and run shadow tui --attach here, or stop it there (ctrl+] then s)", st.Attached.PID, st.Attached.TTY)), "")
	if strings.Count(flat, holder) != 2 || !strings.Contains(flat, "NEW-EXIT=1") || !strings.Contains(flat, "ATTACH-EXIT=1") {
		t.Errorf("the second app and --attach do not say who holds the agent (want %q twice):\n%s", holder, scr)
	}
	for _, fake := range []string{"could not run", "agent ended", "files staged", "no staged changes", "detached"} {
		if strings.Contains(scr, fake) {
			t.Errorf("the second terminal shows %q:\n%s", fake, scr)
		}
	}

	// The first app's agent ran on, and staged its work.
	if out, _ := exec.Command("tmux", "-L", first.socket, "send-keys", "-l", "hello").CombinedOutput(); len(out) > 0 {
		t.Fatalf("tmux send-keys: %s", out)
	}
	first.keys("Enter", "agent-got-hello")
	first.waitFor("exited with status 0")
	first.keys("q", "FIRST-EXIT=0")
	if out := c.must(p, "diff", "--stat"); !strings.Contains(out, "b.txt") {
		t.Errorf("the first app's agent staged no b.txt:\n%s", out)
	}
}
