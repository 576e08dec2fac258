package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/store"

	"golang.org/x/sys/unix"
)

// fixture is a store, a project and its open session, writable.
type fixture struct {
	t       *testing.T
	store   *Store
	project string
	lock    *ProjectLock
	s       *Session
}

// file is a test file: content and mode (0o644 when zero); a symlink when Link is set.
type file struct {
	Data string
	Mode os.FileMode
	Link string
}

func writeTree(t testing.TB, root string, files map[string]file) {
	t.Helper()
	for p, f := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(full)
		if f.Link != "" {
			if err := os.Symlink(f.Link, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(full, []byte(f.Data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func newFixture(t testing.TB, files map[string]file) *fixture {
	t.Helper()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, project, files)
	return sessionOver(t, filepath.Join(dir, "state"), project)
}

// sessionOver opens a store at state, takes project's writer lock (let go when t ends) and
// creates a session: the fixture of an existing project.
func sessionOver(t testing.TB, state, project string) *fixture {
	t.Helper()
	st, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := st.LockProject(project, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Release() })
	s, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	tt, _ := t.(*testing.T)
	return &fixture{t: tt, store: st, project: project, lock: lk, s: s}
}

// stage writes files into the upper layer as a run would have.
func (f *fixture) stage(t testing.TB, files map[string]file) {
	t.Helper()
	writeTree(t, f.s.UpperDir(), files)
}

// whiteout stages the deletion of p (a 0/0 character device, as overlay writes it).
func (f *fixture) whiteout(t testing.TB, p string) {
	t.Helper()
	full := filepath.Join(f.s.UpperDir(), filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(full, unix.S_IFCHR|0o600, 0); err != nil {
		t.Skipf("cannot make a whiteout (0/0 character device) here, needs root: %v", err)
	}
}

// opaque stages dir as a directory replacing the project's (user.overlay.opaque=y).
func (f *fixture) opaque(t testing.TB, dir string) {
	t.Helper()
	full := filepath.Join(f.s.UpperDir(), filepath.FromSlash(dir))
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	// user.* as overlay writes it with userxattr; trusted.* where the filesystem lacks user xattrs.
	if err := unix.Setxattr(full, "user.overlay.opaque", []byte("y"), 0); err != nil {
		if err2 := unix.Setxattr(full, "trusted.overlay.opaque", []byte("y"), 0); err2 != nil {
			t.Skipf("cannot set the overlay opaque xattr here: %v, %v", err, err2)
		}
	}
}

// run records a run over what was staged: BeginRun, EndRun (pre-images taken).
func (f *fixture) run(t testing.TB) {
	t.Helper()
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) changes(t testing.TB) *changeset.ChangeSet {
	t.Helper()
	cs, err := f.s.Changes()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// snapshot describes every non-directory entry under root: "mode:content" or "-> target".
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("%04o:%s", fi.Mode().Perm()|setidBits(fi), data)
		default:
			out[rel] = "special " + fi.Mode().String()
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

func setidBits(fi fs.FileInfo) fs.FileMode {
	var m fs.FileMode
	if fi.Mode()&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

func diffSnapshots(a, b map[string]string) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%q: %q != %q", k, a[k], b[k]))
		}
	}
	return strings.Join(out, "\n")
}

// statuses renders a change set as "STATUS path" lines with flags, for table tests.
func statuses(cs *changeset.ChangeSet) []string {
	var out []string
	for _, c := range cs.Changes {
		s := string(c.Status) + " " + c.Path
		if c.From != "" {
			s += " <- " + c.From
		}
		for _, fl := range []struct {
			on   bool
			name string
		}{{c.Binary, "binary"}, {c.ModeOnly, "mode"}, {c.Ignored, "ignored"}, {c.Protected, "protected"},
			{c.Conflict, "conflict"}, {c.OutsideLink, "outside"}, {c.Special, "special"}, {c.SetID, "setid"}} {
			if fl.on {
				s += " [" + fl.name + "]"
			}
		}
		out = append(out, s)
	}
	return out
}

// dirModes lists every directory under root (root itself left out) with its permission bits.
func dirModes(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fmt.Sprintf("%04o", fi.Mode().Perm()|setidBits(fi))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hunksOf is the hunks of change c of s, failing t on error.
func hunksOf(t testing.TB, s *Session, c *changeset.Change) []diff.Hunk {
	t.Helper()
	d, err := s.Diff(c)
	if err != nil {
		t.Fatal(err)
	}
	return d.Hunks
}

// runsOf is s's finished runs.
func runsOf(t testing.TB, s *Session) []store.Run {
	t.Helper()
	runs, err := s.Runs()
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
