package ui

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unprivTests are the app's tests that build jails, re-run as an ordinary user.
const unprivTests = "^Test(AgentHostDetachAndAttach|HostCheckpoints|JailCheckpoints)$"

// TestUnprivileged re-runs the app's jail tests as the user shadowtest (created with useradd if
// missing), as sandbox's TestUnprivileged does for the jail's own: the agent host, its socket
// and the checkpoints must work for a normal user as well as for root.
func TestUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: the unprivileged half is started by a root test run (it creates user shadowtest)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	u, err := user.Lookup("shadowtest")
	if err != nil {
		if out, err := exec.Command("useradd", "-m", "shadowtest").CombinedOutput(); err != nil {
			t.Fatalf("useradd -m shadowtest: %v: %s", err, out)
		}
		if u, err = user.Lookup("shadowtest"); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The user's TMPDIR, where the tests make their sessions: a short path, as the agent
	// host's socket is in the session's directory and a unix socket's path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "su")
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
	bin := filepath.Join(dir, "ui.test")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=shadowtest", "--regid=shadowtest", "--init-groups",
		bin, "-test.run", unprivTests, "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.HomeDir, "USER=shadowtest",
		"LOGNAME=shadowtest", "TMPDIR=" + dir, "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the app's jail tests as shadowtest failed: %v\n%s", err, out)
	}
	if passed := strings.Count(string(out), "--- PASS: Test"); passed != 3 {
		t.Fatalf("the app's jail tests as shadowtest: %d passed, want 3\n%s", passed, out)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
