package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// unprivUser is the account the suite re-runs itself as when run by root.
const unprivUser = testuser.Name

// unprivTests are the tests re-run as the unprivileged user: every test
// that builds a jail.
const unprivTests = "^Test(RunTrue|Escape|Overlay|Directory|Project|Git|Cache|Install|ExitStatus|IDIsHostUID|JailError|Timeout|MaxUpper|Publish|Terminal|Stdio|AllowDomain|StateBind|BindReadOnly|RelayedSignals)"

// TestUnprivileged re-runs the jail tests as an ordinary user (created with
// useradd if missing), with projects owned by that user: shadow must work,
// and hold, for a normal user as well as for root. The copy of the tests has
// shadow-init beside it, built as make builds it, so that the jail tests run
// again with it as PID 1 (root's run has the test binary as PID 1).
func TestUnprivileged(t *testing.T) {
	a := testuser.Get(t)
	uid, gid := a.UID, a.GID
	// A world-readable copy of the test binary, and a TMPDIR of the user's
	// own where its tests create their projects and staging layers.
	dir, bin := testuser.BinaryDir(t, "shadow-unpriv-", "sandbox.test")
	buildInitProgram(t, filepath.Join(dir, InitProgram))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		t.Fatal(err)
	}

	cmd := a.Command(bin, "-test.run", unprivTests, "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + a.Home, "USER=" + unprivUser,
		"LOGNAME=" + unprivUser, "TMPDIR=" + tmp, "LANG=C.UTF-8",
	}
	for _, plant := range unprivFixtures {
		cmd.Env = append(cmd.Env, plant(t, uid, gid)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jail tests as %s failed: %v\n%s", unprivUser, err, out)
	}
	passed := strings.Count(string(out), "--- PASS: Test")
	if passed < 15 || strings.Contains(string(out), "--- FAIL") {
		t.Fatalf("jail tests as %s: only %d passed\n%s", unprivUser, passed, out)
	}
	wantInit := "PID 1 of the jail: " + InitProgram
	if appArmorRestrictsUserns() {
		wantInit = "PID 1 of the jail: exe"
	}
	if !strings.Contains(string(out), wantInit) {
		t.Fatalf("jail tests as %s: no %q\n%s", unprivUser, wantInit, out)
	}
	t.Logf("%d jail tests passed as %s (uid %d), %s", passed, unprivUser, uid, wantInit)
}

// buildInitProgram builds cmd/shadow-init at path with the Makefile's INIT_TAGS.
func buildInitProgram(t *testing.T, path string) {
	t.Helper()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Skipf("no Makefile: %v", err)
	}
	m := regexp.MustCompile(`(?m)^INIT_TAGS := (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile sets no INIT_TAGS")
	}
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-tags", string(m[1]), "-o", path, "../cmd/shadow-init")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", InitProgram, err, out)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
}
