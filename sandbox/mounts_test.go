package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestBindReadOnly binds a tree with a submount read-only both ways
// bindReadOnly can, in a user and mount namespace of its own: every mount
// of the bind is read-only, nosuid and nodev, and the source stays
// writable.
func TestBindReadOnly(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, way := range []string{"setattr", "remount"} {
		t.Run(way, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), "SHADOW_TRY=bind-ro", "DIR="+dir, "WAY="+way)
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			}
			out, err := cmd.Output()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("probe: %v\n%s%s", err, out, ee.Stderr)
			} else if err != nil {
				t.Skipf("no user namespace for the probe: %v", err)
			}
			var got []string
			for _, l := range strings.Split(string(out), "\n") {
				if r, ok := strings.CutPrefix(l, "RESULT "); ok {
					got = append(got, r)
				}
			}
			setattr := "unused"
			if way == "setattr" {
				setattr = "ok"
				if slices.Contains(got, "setattr=ENOSYS") {
					t.Skip("the kernel has no mount_setattr (Linux 5.12)")
				}
			}
			// The tmpfs is mounted without nosuid and nodev, so the flags
			// of dst/sub come from the bind.
			want := []string{
				"setattr=" + setattr,
				"dst write=EROFS flags=ro,nosuid,nodev",
				"dst/sub write=EROFS flags=ro,nosuid,nodev",
				"src write=ok",
				"src/sub write=ok",
			}
			if !slices.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
