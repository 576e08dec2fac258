package sandbox

import (
	"os"
	"path/filepath"
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
// and hold, for a normal user as well as for root.
func TestUnprivileged(t *testing.T) {
	a := testuser.Get(t)
	uid, gid := a.UID, a.GID
	// A world-readable copy of the test binary, and a TMPDIR of the user's
	// own where its tests create their projects and staging layers.
	dir, bin := testuser.BinaryDir(t, "shadow-unpriv-", "sandbox.test")
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
	t.Logf("%d jail tests passed as %s (uid %d)", passed, unprivUser, uid)
}
