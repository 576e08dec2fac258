package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// TestTunUnusable: with /dev/net/tun at mode 0600, an ordinary user's `shadow doctor` reports it
// missing with the fix, and `shadow run --allow-network` fails with one line that names it and
// the fix, rather than the network helper's own lines. The device is made 0600 for the test only:
// a copy bound over it in a private mount namespace; the host's is not touched.
func TestTunUnusable(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: the test binds a 0600 tun device in a private mount namespace, then runs shadow as user shadowtest")
	}
	for _, tool := range []string{"setpriv", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s (util-linux) is not installed", tool)
		}
	}
	_, errPasta := exec.LookPath("pasta")
	_, errSlirp := exec.LookPath("slirp4netns")
	if errPasta != nil && errSlirp != nil {
		t.Skip("neither pasta nor slirp4netns is installed (apt-get install passt): --allow-network would share the host network")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("this host has no /dev/net/tun to stand in for: %v", err)
	}
	a := testuser.Get(t)
	uid, gid := a.UID, a.GID
	dir, bin := testuser.BinaryDir(t, "shadow-tun-", "shadow")
	project, state, dev := filepath.Join(dir, "project"), filepath.Join(dir, "state"), filepath.Join(dir, "dev")
	for _, d := range []string{project, state, dev} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{project, state} {
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}

	// shadow, as shadowtest, in a mount namespace where /dev/net/tun is a 0600 node owned by root.
	const script = `set -e
mount -t tmpfs -o mode=0755 shadow-tun-test "$DEV"
mknod -m 0600 "$DEV/tun" c 10 200
mount --bind "$DEV/tun" /dev/net/tun
exec setpriv --reuid=shadowtest --regid=shadowtest --init-groups "$@"`
	shadow := func(args ...string) (string, string, int) {
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", bin}, args...)...)
		cmd.Dir = project
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + a.Home, "USER=" + a.Name,
			"SHADOW_TEST_CLI=1", "DEV=" + dev, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("shadow %v: %v", args, err)
		}
		return out.String(), errb.String(), code
	}

	cause := "/dev/net/tun is mode 0600 (owner root), so uid " + strconv.Itoa(uid) + " may not open it"
	out, errs, code := shadow("doctor")
	if code != 0 {
		t.Errorf("doctor: exit %d, want 0 (a plain run works without tun)\n%s%s", code, out, errs)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "/dev/net/tun  ") {
			line = l
		}
	}
	if !strings.Contains(line, "missing") || !strings.Contains(line, cause) ||
		!strings.Contains(out, "\n        sudo chmod 0666 /dev/net/tun\n") {
		t.Errorf("doctor does not report the 0600 tun with its fix:\n%s", out)
	}

	out, errs, code = shadow("run", "--allow-network", "--", "true")
	want := "shadow: cannot build the jail: network: " + cause + ", and --allow-network needs it: sudo chmod 0666 /dev/net/tun\n"
	if code != 125 || errs != want {
		t.Errorf("run --allow-network with a 0600 tun: exit %d, want 125 and one line\n got: %q\nwant: %q\nstdout: %s", code, errs, want, out)
	}

	// The host's device is as it was.
	if fi, err := os.Stat("/dev/net/tun"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("the host's /dev/net/tun changed: %v %v", fi, err)
	}
}
