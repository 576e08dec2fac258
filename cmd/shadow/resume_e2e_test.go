package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// An agent that says at its end how to resume its conversation (Claude Code's `claude --resume
// ID`) names a command that, run outside shadow, finds nothing: the conversation is in the
// preset's per-project state. The end box says how to resume it inside shadow, and so does the
// line shadow tui prints last; the command given runs the agent in the jail again with the
// arguments the hint named, on the same state.
func TestResumeHintInTmux(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	bin := t.TempDir()
	const id = "0b7c4f2e-1c0a-4a57-9d0e-2f6a8c1b3d45"
	script := "#!/bin/sh\necho \"started with: $*\" >> ~/.claude/runs\n" +
		"printf '\\nResume this session with:\\nclaude --resume " + id + "\\n'\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color", "PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	scr := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui --ro "+shellQuote(bin)+" -- claude; echo SHADOW-EXIT=$?")
	scr.waitFor("allowed")
	scr.keys("Enter", "exited with status 0")
	box := scr.waitFor("to resume the agent's conversation")
	// The box wraps its lines: read them as one, without the frame.
	flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "╭", " ", "╰", " ", "─", " ").Replace(box)), " ")
	if !strings.Contains(flat, "tui -- claude --resume "+id) {
		t.Fatalf("the end box does not say how to resume inside shadow:\n%s", box)
	}
	scr.keys("q", "SHADOW-EXIT=")
	end := scr.screen()
	line := regexp.MustCompile("resumes inside shadow, where its state is: `([^`]*)`").FindStringSubmatch(strings.ReplaceAll(end, "\n", ""))
	if line == nil || !strings.HasSuffix(line[1], " tui -- claude --resume "+id) {
		t.Fatalf("shadow tui's last lines do not say how to resume inside shadow:\n%s", end)
	}
	if !strings.Contains(end, "SHADOW-EXIT=0") {
		t.Fatalf("shadow tui did not exit 0:\n%s", end)
	}

	// The command, as printed, runs the agent again with the hint's arguments, in its state.
	scr2 := newTmuxOn(t, "shadow-test-resume-"+filepath.Base(bin), p, env, "sh", "-c", strings.Replace(line[1], " tui ", " tui --ro "+shellQuote(bin)+" ", 1)+"; echo SHADOW-EXIT=$?")
	scr2.waitFor("allowed")
	scr2.keys("Enter", "exited with status 0")
	scr2.keys("q", "SHADOW-EXIT=")
	states, _ := filepath.Glob(filepath.Join(c.state, "shadow", "agents", "claude", "*", "home", ".claude", "runs"))
	if len(states) != 1 {
		t.Fatalf("the agent's per-project state holds no record of its runs (%v)", states)
	}
	if runs := readFile(t, states[0]); runs != "started with: \nstarted with: --resume "+id+"\n" {
		t.Errorf("the agent's runs, in its state: %q", runs)
	}
}
