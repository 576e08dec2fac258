package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// `shadow diff` from a second terminal while a run goes shows what the run has checkpointed,
// under `shadow tui` (its agent in an agent host, checkpoints taken at its prompts) and under
// `shadow run` (a quiet checkpoint) alike, though none of it is in the staging layer until the
// run ends.
func TestDiffDuringRunShowsCheckpoints(t *testing.T) {
	t.Run("tui", func(t *testing.T) {
		c := newCLI(t)
		p := fixture(t, map[string]string{"a.txt": "alpha\n"})
		env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
		for _, e := range c.env {
			if strings.HasPrefix(e, "XDG_") {
				env = append(env, e)
			}
		}
		agent := `echo one > n1.txt; printf 'agent-%s\n' ready; read x; echo two > n2.txt; printf 'agent-%s\n' did; read y; read z`
		scr := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui -- sh -c "+shellQuote(agent))
		scr.waitFor("allowed")
		scr.keys("Enter", "agent-ready")
		scr.keys("Enter", "agent-did")
		scr.keys("Enter", "net c2 ")
		checkRunningDiff(t, c, p, []string{"n1.txt", "n2.txt"})
		scr.keys("Enter", "exited with status 0")
	})
	t.Run("run", func(t *testing.T) {
		c := newCLI(t)
		p := fixture(t, map[string]string{"a.txt": "alpha\n"})
		cmd := exec.Command(c.bin, "run", "--", "sh", "-c", "echo one > n1.txt; read go || true")
		cmd.Dir, cmd.Env = p, c.env
		feed, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			feed.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("shadow run: %v", err)
			}
		}()
		for deadline := time.Now().Add(screenDeadline); ; time.Sleep(100 * time.Millisecond) {
			if out, _, _ := c.run(p, "log"); strings.Contains(out, "c1 ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no quiet checkpoint within %s", screenDeadline)
			}
		}
		checkRunningDiff(t, c, p, []string{"n1.txt"})
	})
}

// checkRunningDiff checks that diff --name-only, --stat and a path's diff show the files want.
func checkRunningDiff(t *testing.T, c *cli, p string, want []string) {
	t.Helper()
	if names := c.must(p, "diff", "--name-only"); names != strings.Join(want, "\n")+"\n" {
		t.Errorf("diff --name-only during the run = %q, want %q", names, want)
	}
	stat := c.must(p, "diff", "--stat")
	if !strings.Contains(stat, fmt.Sprintf(" %d file", len(want))) {
		t.Errorf("diff --stat during the run shows:\n%s", stat)
	}
	if patch := c.must(p, "diff", want[0]); !strings.Contains(patch, "+one") {
		t.Errorf("diff %s during the run:\n%s", want[0], patch)
	}
}
