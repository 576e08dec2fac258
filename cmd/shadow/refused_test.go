package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stateEntries lists what is under the state directory, "" when it does not exist.
func stateEntries(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != root {
			out = append(out, strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
	return out
}

// A run refused for its project (the home directory, /, one that holds the state directory) or by
// a blocking preflight creates nothing: no session, no state directory.
func TestRefusedRunsCreateNothing(t *testing.T) {
	p := fixture(t, map[string]string{"a.txt": "1\n", "package.json": `{"name":"x","version":"1.0.0"}` + "\n",
		"package-lock.json": `{"name":"x","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"x","version":"1.0.0"}}}` + "\n"})
	for _, tc := range []struct {
		name string
		// env and args of the refused run, in p
		env  func(c *cli) []string
		args []string
		code int
	}{
		{"home directory", func(*cli) []string { return []string{"HOME=" + p} }, []string{"run", "--", "true"}, 125},
		{"home directory below", func(*cli) []string { return []string{"HOME=" + filepath.Join(p, "me")} }, []string{"run", "--", "true"}, 125},
		{"root", nil, []string{"run", "--project", "/", "--", "true"}, 125},
		{"state inside", func(c *cli) []string { return []string{"XDG_STATE_HOME=" + filepath.Join(p, "state")} }, []string{"run", "--", "true"}, 125},
		{"blocking preflight", func(*cli) []string { return []string{"AWS_SECRET_ACCESS_KEY=abc123abc123"} },
			[]string{"run", "--trust", "untrusted", "--env", "AWS_SECRET_ACCESS_KEY", "--", "true"}, 3},
		// A command with a preset: its state directory is made for the audit, then taken away.
		{"blocking preflight, agent preset", func(*cli) []string { return []string{"AWS_SECRET_ACCESS_KEY=abc123abc123"} },
			[]string{"run", "--trust", "untrusted", "--env", "AWS_SECRET_ACCESS_KEY", "--", "aider"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			if tc.env != nil {
				c.env = append(c.env, tc.env(c)...)
			}
			_, errs, code := c.run(p, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, errs)
			}
			for _, d := range []string{"sessions", "locks", "agents"} {
				if got := stateEntries(t, filepath.Join(c.state, "shadow", d)); len(got) > 0 {
					t.Errorf("the refused run left %s behind: %v\n%s", d, got, errs)
				}
			}
			if got := stateEntries(t, filepath.Join(p, "state")); len(got) > 0 {
				t.Errorf("the refused run left state in the project: %v", got)
			}
		})
	}
	os.Remove(filepath.Join(p, "SECURITY_REPORT.md"))
}

// --timeout takes a duration longer than 0; a negative one or 0 is a usage error in one line.
func TestTimeoutMustBePositive(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	for _, v := range []string{"-5s", "0", "0s"} {
		out, errs, code := c.run(p, "run", "--timeout", v, "--", "sh", "-c", "echo started")
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--timeout") || strings.Contains(out, "started") {
			t.Errorf("--timeout %s: exit %d, stdout %q, stderr %q; want one usage line and exit 2", v, code, out, errs)
		}
	}
	if got := stateEntries(t, c.state); len(got) > 0 {
		t.Errorf("a refused --timeout left state behind: %v", got)
	}
}

// A run that shadow stops says why: a timeout, a signal to shadow, a full layer.
func TestStoppedRunSaysWhy(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})

	_, errs, code := c.run(p, "run", "--max-upper-bytes", "1M", "--", "sh", "-c", "head -c 5000000 /dev/zero > f")
	if code == 0 || !strings.Contains(errs, "staging layer is full") {
		t.Errorf("a 5 MB write past --max-upper-bytes 1M: exit %d\n%s", code, errs)
	}
	_, errs, code = c.run(p, "run", "--timeout", "300ms", "--", "sleep", "30")
	if code != 124 || !strings.Contains(errs, "stopped: timed out after 300ms") {
		t.Errorf("timeout: exit %d\n%s", code, errs)
	}

	cmd := exec.Command(c.bin, "run", "--", "sh", "-c", "echo started; sleep 30")
	cmd.Dir, cmd.Env = p, c.env
	outFile := filepath.Join(t.TempDir(), "out")
	out, err := os.Create(outFile)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(outFile); strings.Contains(string(b), "started") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 143 || !strings.Contains(errb.String(), "stopped: shadow received SIGTERM") {
		t.Errorf("SIGTERM to shadow run: exit %d, want 143 and the reason:\n%s", code, errb.String())
	}
}

// The app whose preflight blocks the agent leaves no session: quitting on the block removes the
// session it had opened.
func TestBlockedTUICreatesNoSession(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color", "AWS_SECRET_ACCESS_KEY=abc123abc123"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	scr := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui --trust untrusted --env AWS_SECRET_ACCESS_KEY -- true; echo EXIT=$?")
	scr.waitFor("BLOCKED under untrusted")
	scr.keys("q", "EXIT=3")
	if got := stateEntries(t, filepath.Join(c.state, "shadow", "sessions")); len(got) > 0 {
		t.Errorf("the blocked app left a session behind: %v", got)
	}
	if out := c.must(p, "sessions"); !strings.Contains(out, "no sessions") {
		t.Errorf("sessions after a blocked app:\n%s", out)
	}
	os.Remove(filepath.Join(p, "SECURITY_REPORT.md"))
}
