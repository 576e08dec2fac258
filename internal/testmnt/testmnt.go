// Package testmnt runs a test where it may mount a small filesystem without touching the
// machine's mounts: in a private mount namespace of its own, with a tmpfs of a given size.
package testmnt

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// envInside marks the test binary started inside the private namespace.
const envInside = "SHADOW_TEST_PRIVATE_MOUNTS"

// Private reports whether the calling test runs inside a private mount namespace. When it
// does not, Private runs the test (by name, the whole of it) again in one, as root with
// unshare(1), fails t if that run does not pass, and returns false: the caller returns.
// Without root or unshare the test is skipped.
func Private(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envInside) == t.Name() {
		return true
	}
	if os.Getuid() != 0 {
		t.Skip("not root: mounting a small tmpfs needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "-m", "--propagation", "private", self,
		"-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envInside+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("in a private mount namespace:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a private mount namespace: %v", err)
	}
	return false
}

// Tmpfs mounts a tmpfs of size (as mount(8) reads it, "3m") on dir, made if missing, for the
// rest of the test. Only inside Private: elsewhere it would change the machine's mounts.
func Tmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Getenv(envInside) == "" {
		t.Fatal("testmnt.Tmpfs outside a private mount namespace")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}
