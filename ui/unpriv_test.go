package ui

import (
	"os"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// unprivTests are the app's tests that build jails, re-run as an ordinary user.
const unprivTests = "^Test(AgentHostDetachAndAttach|HostCheckpoints|JailCheckpoints)$"

// TestUnprivileged re-runs the app's jail tests as the user shadowtest (created with useradd if
// missing), as sandbox's TestUnprivileged does for the jail's own: the agent host, its socket
// and the checkpoints must work for a normal user as well as for root.
func TestUnprivileged(t *testing.T) {
	a := testuser.Get(t)
	// The user's TMPDIR, where the tests make their sessions: a short path, as the agent
	// host's socket is in the session's directory and a unix socket's path is at most 107 bytes.
	dir, bin := testuser.BinaryDir(t, "su", "ui.test")
	if err := os.Chown(dir, a.UID, a.GID); err != nil {
		t.Fatal(err)
	}
	cmd := a.Command(bin, "-test.run", unprivTests, "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + a.Home, "USER=" + a.Name,
		"LOGNAME=" + a.Name, "TMPDIR=" + dir, "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the app's jail tests as %s failed: %v\n%s", a.Name, err, out)
	}
	if passed := strings.Count(string(out), "--- PASS: Test"); passed != 3 {
		t.Fatalf("the app's jail tests as %s: %d passed, want 3\n%s", a.Name, passed, out)
	}
}
