package session

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/apply"
	"golang.org/x/sys/unix"
)

// TestRealOverlay stages changes through a real overlay mount (userxattr, as the jail mounts it),
// then checks the change set and that apply-all gives exactly the tree seen through the mount.
// It needs the right to mount (root); elsewhere it is skipped.
func TestRealOverlay(t *testing.T) {
	f := newFixture(t, map[string]file{
		"edit.txt":      {Data: "one\ntwo\n"},
		"gone.txt":      {Data: "bye\n"},
		"touched.txt":   {Data: "same\n"},
		"chmod.sh":      {Data: "#!/bin/sh\n"},
		"move/me.txt":   {Data: "moving\n"},
		"tree/a/b.txt":  {Data: "b\n"},
		"tree/c.txt":    {Data: "c\n"},
		"unchanged.txt": {Data: "u\n"},
	})
	merged := filepath.Join(t.TempDir(), "merged")
	os.Mkdir(merged, 0o755)
	opts := "lowerdir=" + f.project + ",upperdir=" + f.s.UpperDir() + ",workdir=" + f.s.WorkDir() + ",userxattr"
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("cannot mount overlay here: %v", err)
	}
	mounted := true
	defer func() {
		if mounted {
			unix.Unmount(merged, unix.MNT_DETACH)
		}
	}()
	if err := f.s.BeginRun([]string{"sh", "-c", "edits"}); err != nil {
		t.Fatal(err)
	}
	m := func(p string) string { return filepath.Join(merged, p) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(m("edit.txt"), []byte("one\nTWO\n"), 0o644))
	must(os.Remove(m("gone.txt")))
	now := time.Now().Add(time.Hour)
	must(os.Chtimes(m("touched.txt"), now, now)) // a copy-up that changes nothing that is applied
	must(os.Chmod(m("touched.txt"), 0o600))
	must(os.Chmod(m("touched.txt"), 0o644))
	must(os.Chmod(m("chmod.sh"), 0o755))
	must(os.MkdirAll(m("moved"), 0o755))
	must(os.Rename(m("move/me.txt"), m("moved/me.txt")))
	must(os.RemoveAll(m("tree")))
	must(os.MkdirAll(m("tree/a"), 0o755))
	must(os.WriteFile(m("tree/a/new.txt"), []byte("new\n"), 0o644))
	must(os.Symlink("edit.txt", m("link")))
	must(syscall.Mkfifo(m("fifo"), 0o644))
	want := snapshot(t, merged)
	delete(want, "fifo")
	must(unix.Unmount(merged, 0))
	mounted = false
	must(f.s.EndRun(0))

	got := statuses(f.changes(t))
	wantChanges := []string{
		"M chmod.sh [mode]", "M edit.txt", "A fifo [special]", "D gone.txt", "A link",
		"R moved/me.txt <- move/me.txt", "D tree/a/b.txt", "A tree/a/new.txt", "D tree/c.txt",
	}
	if len(got) != len(wantChanges) {
		t.Fatalf("changes through overlay:\n%v\nwant\n%v", got, wantChanges)
	}
	for i := range got {
		if got[i] != wantChanges[i] {
			t.Errorf("change %d = %q, want %q", i, got[i], wantChanges[i])
		}
	}
	if _, err := f.s.Apply(apply.ApplyOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(snapshot(t, f.project), want); d != "" {
		t.Fatalf("apply --all != the tree seen through the overlay:\n%s", d)
	}
}
