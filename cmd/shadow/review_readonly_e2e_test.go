package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReviewDuringRunInTmux opens `shadow review` while `shadow run -- sleep 5` holds the project:
// the screen says it is read-only and which run holds the project, refuses to decide or apply
// with that reason, shows no ✓, and saves nothing.
func TestReviewDuringRunInTmux(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "alpha\nbeta\n"})
	c.must(p, "run", "--", "sh", "-c", "echo gamma >> a.txt")

	run := exec.Command(c.bin, "run", "--", "sleep", "5")
	run.Dir, run.Env = p, c.env
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if out, _, _ := c.run(p, "sessions"); strings.Contains(out, "(running)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(50 * time.Millisecond)
	}

	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	scr := newTmux(t, p, env, c.bin, "review")
	first := scr.waitFor("READ-ONLY")
	if !strings.Contains(first, "shadow run (pid ") || !strings.Contains(first, "holds the project") {
		t.Errorf("the read-only review does not say who holds the project:\n%s", first)
	}
	for _, k := range []string{"a", "w", "ctrl+a"} {
		scr.keys("j", "file 1/1") // clears the status line
		key := k
		if k == "ctrl+a" {
			key = "C-a"
		}
		scr.keys(key, "holds the project")
		out := scr.screen()
		if strings.Contains(out, "✓ accepted") || strings.Contains(out, "not saved") || strings.Contains(out, "Apply to the project?") ||
			!strings.Contains(out, "· undecided") {
			t.Errorf("%s was taken by a read-only review:\n%s", k, out)
		}
	}
	if out := c.must(p, "diff", "--json"); strings.Contains(out, `"decision"`) {
		t.Errorf("a read-only review saved a decision:\n%s", out)
	}
	scr.keys("q", "")
}
