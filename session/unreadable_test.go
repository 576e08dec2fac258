package session

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/testuser"
	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/store"
)

// rerun runs the test named name again in a copy of the test binary through setpriv with args
// (--reuid=..., --bounding-set=...), with TMPDIR a directory owned by uid and gid, and fails t
// with its output unless it passed.
func rerun(t *testing.T, name string, uid, gid int, env []string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	dir, bin := testuser.BinaryDir(t, "shadow-session-test-", "session.test")
	// What the test made as another user: store.RemoveAllWritable opens it up before the directory goes.
	t.Cleanup(func() { store.RemoveAllWritable(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", append(args, bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")...)
	cmd.Dir = tmp
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=" + tmp, "LANG=C.UTF-8"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s again through setpriv %v: %v\n%s", name, args, err, out)
	}
	t.Logf("through setpriv %v:\n%s", args, out)
}

// closeUp sets the modes of staged entries, and puts back owners and modes that let the test's
// directories be removed afterwards.
func closeUp(t *testing.T, upper string, modes map[string]os.FileMode) {
	t.Helper()
	for p, m := range modes {
		if err := os.Chmod(filepath.Join(upper, p), m); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		filepath.WalkDir(upper, func(p string, d os.DirEntry, err error) error {
			os.Lchown(p, os.Getuid(), os.Getgid())
			if d != nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// readClosed reads a file of the test's own that its mode closes, and puts the mode back.
func readClosed(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o400); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(p, fi.Mode().Perm())
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The agent may close what it staged to its owner: a directory it cannot list (0300) or enter
// (0600), the project's root among them, a file it cannot read (0000). Shadow, that owner, reads them all the same, as root and as
// an ordinary user: the run's end, the change set, the diff, apply and rollback all work, and the
// modes shown and applied are the agent's.
func TestUnreadableStagedEntries(t *testing.T) {
	if os.Getuid() == 0 {
		a := testuser.Get(t)
		t.Run("root", testUnreadableStagedEntries)
		rerun(t, "TestUnreadableStagedEntries", a.UID, a.GID, []string{"USER=" + a.Name}, a.Setpriv()[1:]...)
		return
	}
	testUnreadableStagedEntries(t)
}

func testUnreadableStagedEntries(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "d/x.txt": {Data: "x\n"}, "keep.txt": {Data: "k\n"}})
	before := snapshot(t, f.project)
	upper := f.s.UpperDir()
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}, "d/x.txt": {Data: "X\n"}, "d/y.txt": {Data: "new\n"},
		"d/e/w.txt": {Data: "w\n"}, "z.txt": {Data: "z\n"}})
	// "": the agent closed the project's root too.
	closeUp(t, upper, map[string]os.FileMode{"a.txt": 0, "z.txt": 0, "d/e": 0o600, "d": 0o300, "": 0o300})

	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	cs, err := f.s.EndRunChanges(0)
	if err != nil {
		t.Fatalf("the run's end with closed staged entries: %v", err)
	}
	want := []string{"A d/e/w.txt", "A d/y.txt", "A z.txt", "M a.txt", "M d/x.txt"}
	got := statuses(cs)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("change set = %q, want %q", got, want)
	}
	if cs, err = f.s.Changes(); err != nil {
		t.Fatalf("Changes: %v", err)
	}
	for _, c := range cs.Changes {
		if c.Unreadable != "" || c.New.Hash == "" {
			t.Errorf("%s not read: %q", c.Path, c.Unreadable)
		}
	}
	for p, mode := range map[string]uint32{"a.txt": 0, "z.txt": 0, "d/y.txt": 0o644} {
		if c, ok := cs.Find(p); !ok || c.New.Mode != mode {
			t.Errorf("%s staged mode = %04o, want the agent's %04o", p, c.New.Mode, mode)
		}
		// The mode opened for the read is put back.
		if fi, err := os.Lstat(filepath.Join(upper, p)); err != nil || uint32(fi.Mode().Perm()) != mode {
			t.Errorf("%s in the upper layer: %v, %v; want mode %04o kept", p, fi.Mode(), err, mode)
		}
	}

	patches, err := f.s.Patches(cs.Select(nil))
	if err != nil {
		t.Fatalf("Patches: %v", err)
	}
	var text bytes.Buffer
	if err := diff.WritePatch(&text, patches, diff.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"+A\n", "+X\n", "+new\n", "+w\n", "+z\n"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("the diff lacks %q:\n%s", w, text.String())
		}
	}

	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatalf("apply --all: %v", err)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("apply skipped %v", res.Skipped)
	}
	for p, w := range map[string]string{"a.txt": "A\n", "z.txt": "z\n", "d/x.txt": "X\n", "d/y.txt": "new\n", "d/e/w.txt": "w\n"} {
		full := filepath.Join(f.project, p)
		fi, err := os.Lstat(full)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := cs.Find(p)
		if uint32(fi.Mode().Perm()) != c.New.Mode {
			t.Errorf("%s applied with mode %v, want %04o", p, fi.Mode(), c.New.Mode)
		}
		if got := readClosed(t, full); got != w {
			t.Errorf("%s applied as %q, want %q", p, got, w)
		}
	}
	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if d := diffSnapshots(before, snapshot(t, f.project)); d != "" {
		t.Errorf("rollback did not restore the project:\n%s", d)
	}
}

// A staged entry that shadow cannot open up (another owner's, closed by its mode) does not break
// the change set: it is listed with the reason, never applied, and everything else is.
func TestUnreadableStagedEntriesOfAnotherOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make staged entries of another owner")
	}
	if os.Getenv("SHADOW_TEST_NO_DAC") == "" {
		// Root reads any file: run this test again without the capabilities that let it.
		rerun(t, "TestUnreadableStagedEntriesOfAnotherOwner", 0, 0, []string{"SHADOW_TEST_NO_DAC=1"},
			"--bounding-set=-dac_override,-dac_read_search")
		return
	}
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n"}})
	upper := f.s.UpperDir()
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}, "b.txt": {Data: "B\n"}, "d/c.txt": {Data: "c\n"}})
	for _, p := range []string{"a.txt", "d", "d/c.txt"} {
		if err := os.Lchown(filepath.Join(upper, p), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	closeUp(t, upper, map[string]os.FileMode{"a.txt": 0, "d": 0o300})

	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	cs, err := f.s.EndRunChanges(0)
	if err != nil {
		t.Fatalf("the run's end: %v", err)
	}
	if runs := runsOf(t, f.s); f.s.Meta.Active != nil || len(runs) != 1 {
		t.Fatalf("the run was not recorded: active %v, %d runs", f.s.Meta.Active, len(runs))
	}
	for _, p := range []string{"a.txt", "d"} {
		c, ok := cs.Find(p)
		if !ok || c.Unreadable == "" || !strings.Contains(c.Note(), "permission denied") {
			t.Errorf("%s: %+v; want it listed as unreadable", p, c)
		}
	}
	if c, ok := cs.Find("b.txt"); !ok || c.Unreadable != "" {
		t.Errorf("b.txt: %+v", c)
	}
	patches, err := f.s.Patches(cs.Select(nil))
	if err != nil {
		t.Fatalf("Patches: %v", err)
	}
	var stat bytes.Buffer
	entries := make([]diff.StatEntry, len(patches))
	for i, p := range patches {
		entries[i] = diff.StatOf(p, diff.Options{})
	}
	if err := diff.WriteStat(&stat, entries, 120); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stat.String(), "a.txt") || !strings.Contains(stat.String(), "cannot read the staged file") {
		t.Errorf("diff --stat lacks the note:\n%s", stat.String())
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatalf("apply --all: %v", err)
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Path)
		if !strings.Contains(s.Reason, "cannot read") {
			t.Errorf("%s skipped for %q", s.Path, s.Reason)
		}
	}
	if slices.Sort(skipped); !slices.Equal(skipped, []string{"a.txt", "d"}) {
		t.Errorf("skipped %q, want a.txt and d", skipped)
	}
	for p, w := range map[string]string{"a.txt": "a\n", "b.txt": "B\n"} {
		data, err := os.ReadFile(filepath.Join(f.project, p))
		if err != nil || string(data) != w {
			t.Errorf("%s after apply: %q, %v; want %q", p, data, err, w)
		}
	}
}
