package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// TestReviewDuringRunInTmux opens `shadow review` while `shadow run -- sleep 5` holds the project:
// the screen says it is read-only and which run holds the project, refuses to decide or apply
// with that reason, shows no ✓, and saves nothing. As root, and as the ordinary user shadowtest.
func TestReviewDuringRunInTmux(t *testing.T) {
	files := map[string]string{"a.txt": "alpha\nbeta\n"}
	t.Run("root", func(t *testing.T) {
		c := newCLI(t)
		reviewDuringRun(t, c, fixture(t, files))
	})
	t.Run("unprivileged", func(t *testing.T) {
		c, p := unprivilegedCLI(t, files)
		reviewDuringRun(t, c, p)
	})
}

func reviewDuringRun(t *testing.T, c *cli, p string) {
	c.must(p, "run", "--", "sh", "-c", "echo gamma >> a.txt")
	// The run lasts until the test is done with it, however slowly the review starts on a busy
	// machine: SIGTERM then stops it (a checkpoint, then the command) and the test waits for that.
	run := exec.Command(c.bin, "run", "--", "sleep", "600")
	run.Dir, run.Env = p, c.env
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = run.Process.Signal(syscall.SIGTERM)
		_ = run.Wait()
	})
	for deadline := time.Now().Add(60 * time.Second); ; {
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
		if strings.HasPrefix(e, "XDG_") || strings.HasPrefix(e, "HOME=") {
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

// unprivilegedCLI is a cli whose commands run as the ordinary user shadowtest (through setpriv),
// over a project of files that user owns; it skips unless the test runs as root with setpriv.
func unprivilegedCLI(t *testing.T, files map[string]string) (*cli, string) {
	t.Helper()
	a := testuser.Get(t)
	uid, gid := a.UID, a.GID
	dir, real := testuser.BinaryDir(t, "shadow-review-unpriv-", "shadow.real")
	bin := filepath.Join(dir, "shadow")
	wrapper := "#!/bin/sh\nexec " + strings.Join(a.Setpriv(), " ") + " " + real + ` "$@"` + "\n"
	if err := os.WriteFile(bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "project")
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(p, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, p, "init", "-q")
	git(t, p, "add", "-A")
	git(t, p, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
	for _, d := range []string{"state", "config"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	filepath.Walk(dir, func(path string, _ os.FileInfo, _ error) error {
		if path != dir && path != bin && path != real {
			os.Lchown(path, uid, gid)
		}
		return nil
	})
	c := &cli{t: t, bin: bin, state: filepath.Join(dir, "state")}
	c.env = []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home, "USER=" + a.Name, "SHADOW_TEST_CLI=1",
		"XDG_STATE_HOME=" + c.state, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
	return c, p
}
