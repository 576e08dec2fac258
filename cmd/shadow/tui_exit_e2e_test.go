package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `shadow tui` exits with what `shadow run` exits with for the same flags and command: the
// command's own status, 124 when --timeout stopped it, 128+N when signal N killed it, 3 when the
// preflight blocked it, 125 when the jail could not be built. Each way a run ends is run both
// ways, `run`'s status taken as the expectation.
func TestTUIExitsLikeRunInTmux(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(project string) []string
		args []string
		// how the app ends: "agent" (the end box, then q), "blocked" (q on the preflight),
		// "none" (refused before the app starts)
		ends string
		want int
	}{
		{"status", nil, []string{"--", "sh", "-c", "exit 7"}, "agent", 7},
		{"timeout", nil, []string{"--timeout", "1s", "--", "sleep", "60"}, "agent", 124},
		{"signal", nil, []string{"--", "sh", "-c", "kill -TERM $$"}, "agent", 143},
		{"blocked", func(string) []string { return []string{"AWS_SECRET_ACCESS_KEY=abc123abc123"} },
			[]string{"--trust", "untrusted", "--env", "AWS_SECRET_ACCESS_KEY", "--", "true"}, "blocked", 3},
		{"no jail", func(p string) []string { return []string{"HOME=" + p} }, []string{"--project", "", "--", "true"}, "none", 125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			p := fixture(t, map[string]string{"a.txt": "1\n"})
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				if a == "--project" {
					args[i+1] = p
				}
			}
			var extra []string
			if tc.env != nil {
				extra = tc.env(p)
			}
			c.env = append(c.env, extra...)
			_, errs, code := c.run(p, append([]string{"run"}, args...)...)
			if code != tc.want {
				t.Fatalf("shadow run %v: exit %d, want %d\n%s", args, code, tc.want, errs)
			}
			env := append([]string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}, extra...)
			for _, e := range c.env {
				if strings.HasPrefix(e, "XDG_") {
					env = append(env, e)
				}
			}
			script := shellQuote(c.bin) + " tui"
			for _, a := range args {
				script += " " + shellQuote(a)
			}
			scr := newTmux(t, p, env, "sh", "-c", script+"; echo TUI-EXIT=$?")
			switch tc.ends {
			case "agent":
				scr.waitFor("allowed")
				scr.keys("Enter", "quit (the session stays open)", "q", "TUI-EXIT=")
			case "blocked":
				scr.waitFor("BLOCKED under untrusted")
				scr.keys("q", "TUI-EXIT=")
				os.Remove(filepath.Join(p, "SECURITY_REPORT.md"))
			default:
				scr.waitFor("TUI-EXIT=")
			}
			if out := scr.screen(); !strings.Contains(out, fmt.Sprintf("TUI-EXIT=%d\n", tc.want)) {
				t.Errorf("shadow tui %v does not exit %d like shadow run:\n%s", args, tc.want, out)
			}
		})
	}
}
