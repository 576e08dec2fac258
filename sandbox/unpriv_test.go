package sandbox

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unprivUser is the account the suite re-runs itself as when run by root.
const unprivUser = "shadowtest"

// unprivTests are the tests re-run as the unprivileged user: every test
// that builds a jail.
const unprivTests = "^Test(RunTrue|Escape|Overlay|Directory|Project|Git|Cache|Install|ExitStatus|IDIsHostUID|JailError|Timeout|MaxUpper|Publish|Terminal|Stdio|AllowDomain|StateBind|BindReadOnly)"

// TestUnprivileged re-runs the jail tests as an ordinary user (created with
// useradd if missing), with projects owned by that user: shadow must work,
// and hold, for a normal user as well as for root.
func TestUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: the unprivileged half is started by a root test run (it creates user " + unprivUser + ")")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	u, err := user.Lookup(unprivUser)
	if err != nil {
		if out, err := exec.Command("useradd", "-m", unprivUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd -m %s: %v: %s", unprivUser, err, out)
		}
		if u, err = user.Lookup(unprivUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)

	// A world-readable copy of the test binary, and a TMPDIR of the user's
	// own where its tests create their projects and staging layers.
	dir, err := os.MkdirTemp("", "shadow-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("setpriv", "--reuid="+unprivUser, "--regid="+unprivUser, "--init-groups",
		bin, "-test.run", unprivTests, "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.HomeDir, "USER=" + unprivUser,
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
