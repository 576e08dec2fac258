package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/agenttest"
)

// The real Codex and Claude Code CLIs, each in `shadow tui --session NAME` in a terminal of its
// own on one project (SPEC §15), against scripted model servers: both agents run at once (Codex
// waits at its prompt while Claude Code starts, then each makes its edit with the other still
// running), each status bar and end box names its session and the other, and each reviews and
// applies its own session, Claude Code's apply merging over the file Codex's changed: the
// project holds both edits.
func TestAgentTUISessionsCodexClaudeInTmux(t *testing.T) {
	prefix := agenttest.Prefix(t)
	c := newCLI(t)
	const middle = "one\ntwo\nthree\nfour\nfive\n"
	p := fixture(t, map[string]string{"notes.txt": "codex: old line\n" + middle + "claude: old line\n"})
	notes := filepath.Join(p, "notes.txt")
	calls := map[string][]agenttest.Call{
		"codex": {{Tool: "exec_command", Args: map[string]any{"cmd": "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: notes.txt\n@@\n-codex: old line\n+codex: new line\n*** End Patch\nPATCH\n"}}},
		"claude": {
			{Tool: "Read", Args: map[string]any{"file_path": notes}},
			{Tool: "Edit", Args: map[string]any{"file_path": notes, "old_string": "claude: old line", "new_string": "claude: new line"}},
		},
	}
	rigs := map[string]*agentRig{}
	screens := map[string]*tmuxScreen{}
	for _, name := range []string{"codex", "claude"} {
		r := &agentRig{c: c, ac: agentCases[name], prefix: prefix, bin: filepath.Join(prefix, "node_modules", ".bin", name),
			home: filepath.Join(t.TempDir(), "home"), project: p}
		r.model = agenttest.NewModelServer(t, "DONE-"+name+"-FINAL", calls[name]...)
		extra := r.ac.setup(t, r.home, r.model)
		r.env = []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color", "HOME=" + r.home, "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin"}
		for _, e := range c.env {
			if strings.HasPrefix(e, "XDG_") {
				r.env = append(r.env, e)
			}
		}
		r.env = append(r.env, extra...)
		rigs[name] = r

		argv := append(append([]string{c.bin, "tui", "--session", name}, r.shadowArgs()...), "--", r.bin)
		script := ""
		for _, a := range argv {
			script += shellQuote(a) + " "
		}
		scr := newTmuxOn(t, fmt.Sprintf("shadow-test-%d-%s", os.Getpid(), name), p, r.env, "sh", "-c", script+"; echo SHADOW-EXIT=$?")
		screens[name] = scr
		waitScreen(t, scr, time.Minute, "allowed")
		scr.keys("Enter", "")
		r.awaitReady(t, scr, interactives[name])
		if bar := regexp.MustCompile(`(?m)^ ` + name + ` │ .*│`); !bar.MatchString(scr.screen()) {
			t.Errorf("the status bar of session %s does not name it:\n%s", name, scr.screen())
		}
	}

	// Both agents are running: each edits in turn, the other waiting at its prompt.
	for _, name := range []string{"codex", "claude"} {
		rigs[name].prompt(t, screens[name], interactives[name], editPrompt)
	}
	for _, x := range []struct{ name, other string }{{"codex", "claude"}, {"claude", "codex"}} {
		scr := screens[x.name]
		rigs[x.name].quitAgent(scr, interactives[x.name])
		waitScreen(t, scr, time.Minute, "exited with status")
		flat := strings.Join(strings.Fields(strings.ReplaceAll(scr.waitFor("also open"), "│", "")), "")
		if !regexp.MustCompile(`alsoopen:`+x.other+`\(\d{8}-\d{6}-[0-9a-f]+\)`).MatchString(flat) || !strings.Contains(flat, "compare"+x.name+x.other+"enterreview") {
			t.Errorf("the end box of session %s does not name session %s and how to compare them:\n%s", x.name, x.other, scr.screen())
		}
		// The command that resumes the agent's conversation continues its session.
		if strings.Contains(flat, "toresume") && !strings.Contains(flat, "tui--session"+x.name+"--") {
			t.Errorf("the resume command of session %s does not continue it:\n%s", x.name, scr.screen())
		}
	}
	if got := readFile(t, notes); !strings.HasPrefix(got, "codex: old line\n") {
		t.Fatalf("an agent wrote the host project during its run: %q", got)
	}

	// Each applies its own session: Codex's, then Claude Code's over it.
	for _, name := range []string{"codex", "claude"} {
		screens[name].keys("Enter", "file 1/", "C-a", "accepted", "w", "Apply to the project?", "y", "apply done",
			"Escape", "no staged changes", "q", "SHADOW-EXIT=")
		if out := screens[name].screen(); !strings.Contains(out, "SHADOW-EXIT=0") {
			t.Errorf("shadow tui --session %s did not exit 0:\n%s", name, out)
		}
		rigs[name].checkModel(t)
	}
	if got, want := readFile(t, notes), "codex: new line\n"+middle+"claude: new line\n"; got != want {
		t.Errorf("notes.txt after both applies = %q, want both edits %q", got, want)
	}
}
