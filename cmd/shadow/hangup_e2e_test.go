package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Closing the terminal of `shadow tui` stops its agent, as it stops `shadow run`'s command: the
// agent, which runs in an agent host of its own, gets no hang-up from the terminal, so the app
// tells its host to stop it. The jail takes its last checkpoint first (`shadow log` shows it),
// no process of the agent or its host is left, and the next `shadow tui` on the project runs.
func TestTUIHangupStopsTheAgentInTmux(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "alpha\n"})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	// The agent writes every half second, so no quiet checkpoint is taken while it runs: the
	// one `shadow log` shows is the run's last.
	const marker = "hangup-agent-loop"
	agent := `printf 'agent-%s\n' ready; while :; do date > b.txt; sleep 0.5; done # ` + marker
	first := newTmuxOn(t, fmt.Sprintf("shadow-test-%d-hup", os.Getpid()), p, env, "sh", "-c", shellQuote(c.bin)+" tui -- sh -c "+shellQuote(agent))
	var host struct {
		PID int `json:"pid"`
	}
	t.Cleanup(func() {
		if host.PID > 0 {
			_ = syscall.Kill(host.PID, syscall.SIGKILL)
		}
	})
	first.waitFor("allowed")
	first.keys("Enter", "agent-ready")
	states, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "agent", "state.json"))
	if len(states) != 1 {
		t.Fatalf("agent host state files: %q", states)
	}
	if data, err := os.ReadFile(states[0]); err != nil || json.Unmarshal(data, &host) != nil || host.PID <= 0 {
		t.Fatalf("read the agent host's state: %v %s", err, data)
	}

	// The terminal goes away: tmux hangs up its pane.
	if out, err := execTmux(first.socket, "kill-server"); err != nil {
		t.Fatalf("tmux kill-server: %v: %s", err, out)
	}
	for deadline := time.Now().Add(screenDeadline); syscall.Kill(host.PID, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent host (pid %d) still runs %s after its app's terminal closed", host.PID, screenDeadline)
		}
	}
	// The app itself ends once its host said the run ended.
	for deadline := time.Now().Add(screenDeadline); len(processesWith(marker)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the agent or its app are left after the terminal closed: %v", processesWith(marker))
		}
	}
	if log := c.must(p, "log"); !strings.Contains(log, "c1 ") || !strings.Contains(log, "1 file") {
		t.Errorf("shadow log after the hang-up shows no checkpoint of the agent's work:\n%s", log)
	}

	second := newTmuxOn(t, fmt.Sprintf("shadow-test-%d-hup2", os.Getpid()), p, env, "sh", "-c",
		shellQuote(c.bin)+" tui -- sh -c "+shellQuote(`printf 'second-%s\n' ran`)+"; echo SECOND-EXIT=$?")
	scr := second.waitFor("allowed")
	if strings.Contains(scr, "still runs") {
		t.Fatalf("the next shadow tui refuses:\n%s", scr)
	}
	second.keys("Enter", "exited with status 0")
}

// execTmux runs a tmux command on the server of socket.
func execTmux(socket string, args ...string) ([]byte, error) {
	return exec.Command("tmux", append([]string{"-L", socket}, args...)...).CombinedOutput()
}

// processesWith lists the processes whose command line holds s.
func processesWith(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(cmdline), s) {
			out = append(out, pid)
		}
	}
	return out
}
