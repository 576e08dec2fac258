package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// `shadow doctor` checks the state directory like every other prerequisite of a run, and a run
// that cannot make it names the variable that moves it: with HOME unset, with the state
// directory's place a file, and (as an ordinary user) with a HOME that user may not write.
func TestDoctorChecksTheStateDirectory(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=" + os.Getenv("PATH"), "SHADOW_TEST_CLI=1", "XDG_CONFIG_HOME=" + t.TempDir()}
	cases := []struct {
		name string
		env  []string
	}{
		{"HOME unset", base},
		{"state directory under a file", append([]string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + notDir}, base...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.env = tc.env
			out, errs, code := c.run(p, "doctor")
			if code != 1 || !strings.Contains(out, "state directory") || !strings.Contains(out, "XDG_STATE_HOME") || !strings.Contains(out, "will not work") {
				t.Errorf("doctor: exit %d, want 1 with the state directory missing and XDG_STATE_HOME named:\n%s%s", code, out, errs)
			}
			_, errs, code = c.run(p, "run", "--", "true")
			if code == 0 || !strings.Contains(errs, "XDG_STATE_HOME") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("run: exit %d, want one line naming XDG_STATE_HOME:\n%s", code, errs)
			}
		})
	}

	t.Run("read-only HOME as an ordinary user", func(t *testing.T) {
		a := testuser.Get(t)
		dir, bin := testuser.BinaryDir(t, "shadow-statedir-", "shadow")
		home, project := filepath.Join(dir, "home"), filepath.Join(dir, "project")
		for _, d := range []string{home, project} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.Chown(project, a.UID, a.GID)
		os.Chmod(home, 0o555)
		os.Chown(home, a.UID, a.GID)
		sh := func(args ...string) (string, int) {
			cmd := a.Command(bin, args...)
			cmd.Dir = project
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "USER=" + a.Name, "SHADOW_TEST_CLI=1"}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return string(out), code
		}
		if out, code := sh("doctor"); code != 1 || !strings.Contains(out, "XDG_STATE_HOME") {
			t.Errorf("doctor with a read-only HOME: exit %d, want 1 naming XDG_STATE_HOME:\n%s", code, out)
		}
		if out, code := sh("run", "--", "true"); code == 0 || !strings.Contains(out, "XDG_STATE_HOME") {
			t.Errorf("run with a read-only HOME: exit %d, want a line naming XDG_STATE_HOME:\n%s", code, out)
		}
	})
}
