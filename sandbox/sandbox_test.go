package sandbox

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if IsReexec() {
		ReexecMain()
	}
	if name := os.Getenv("SHADOW_TRY"); name != "" {
		os.Exit(tryMain(name))
	}
	code := m.Run()
	if probeDir != "" {
		os.RemoveAll(probeDir)
	}
	os.Exit(code)
}

var (
	probeOnce sync.Once
	probeDir  string
	probeErr  error
)

// probeBinary copies the test binary into a directory of its own, shown in
// the jail read-only, so that the jail can run it as the probe program.
func probeBinary(t testing.TB) (dir, bin string) {
	t.Helper()
	probeOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			probeErr = err
			return
		}
		d, err := os.MkdirTemp("", "shadow-probe-")
		if err != nil {
			probeErr = err
			return
		}
		if err := copyFile(self, filepath.Join(d, "probe"), 0o755); err != nil {
			probeErr = err
			return
		}
		if err := os.Chmod(d, 0o755); err != nil {
			probeErr = err
			return
		}
		probeDir = d
	})
	if probeErr != nil {
		t.Fatalf("copy probe binary: %v", probeErr)
	}
	return probeDir, filepath.Join(probeDir, "probe")
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// testJail is one test's host side: a project, a staging layer, a fake
// host home, and the probe.
type testJail struct {
	base, project, upper, home, probeDir, probe string
}

// newTestJail makes a project with a few files under a fresh temp dir.
func newTestJail(t *testing.T) *testJail {
	t.Helper()
	base := t.TempDir()
	j := &testJail{
		base:    base,
		project: filepath.Join(base, "project"),
		upper:   filepath.Join(base, "state", "upper"),
		home:    filepath.Join(base, "home"),
	}
	j.probeDir, j.probe = probeBinary(t)
	writeFiles(t, j.project, map[string]string{
		"a.txt":      "a\n",
		"del.txt":    "delete me\n",
		"mode.txt":   "mode\n",
		"mv/src.txt": "moved\n",
		"repl/x":     "replaced dir\n",
		".git/HEAD":  "ref: refs/heads/main\n",
	})
	if err := os.MkdirAll(j.home, 0o755); err != nil {
		t.Fatal(err)
	}
	return j
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// setup is a test's run: its policy, and what the run is wired to.
type setup struct {
	Policy
	IO
}

// policy is the default policy of the test jail, wired to nothing yet.
func (j *testJail) policy() setup {
	return setup{Policy: Policy{
		Project:  j.project,
		Upper:    j.upper,
		Home:     j.home,
		ReadOnly: []string{j.probeDir},
		Env:      BuildEnv(os.Environ(), nil),
	}}
}

// run runs argv in the jail and returns the result and its output.
func (j *testJail) run(t *testing.T, p setup, argv ...string) (Result, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	p.Stdin = strings.NewReader("")
	p.Stdout, p.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, p.Policy, argv, p.IO)
	if err != nil {
		t.Fatalf("Run %q: %v\nstdout: %s\nstderr: %s", argv, err, stdout.String(), stderr.String())
	}
	return res, stdout.String(), stderr.String()
}

// try runs probe name in the jail with extra environment and returns its
// RESULT lines.
func (j *testJail) try(t *testing.T, p setup, name string, env ...string) []string {
	t.Helper()
	p.Env = append(append(append([]string{}, p.Env...), "SHADOW_TRY="+name), env...)
	res, out, errOut := j.run(t, p, j.probe)
	if res.ExitCode != 0 {
		t.Fatalf("probe %s exited %d\nstdout: %s\nstderr: %s", name, res.ExitCode, out, errOut)
	}
	var results []string
	for _, l := range strings.Split(out, "\n") {
		if r, ok := strings.CutPrefix(l, "RESULT "); ok {
			results = append(results, r)
		}
	}
	return results
}

func TestRunTrue(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c", "echo hello; exit 7")
	if res.ExitCode != 7 || out != "hello\n" {
		t.Fatalf("got exit %d, stdout %q, stderr %q", res.ExitCode, out, errOut)
	}
	if res.LandlockABI == 0 {
		t.Errorf("LandlockABI = 0, want the kernel's ABI")
	}
}

// runSetup runs argv in a jail of s.
func runSetup(ctx context.Context, s setup, argv []string) (Result, error) {
	return Run(ctx, s.Policy, argv, s.IO)
}
