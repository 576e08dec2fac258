package session

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"golang.org/x/sys/unix"
)

// The manifest lists every entry but directories, sorted by path, with the stat lstat gives: a
// symlink to a directory is recorded and not followed, a FIFO is recorded, and the skipped
// directory (the store inside the project) is left out with everything in it.
func TestManifestListsEveryEntry(t *testing.T) {
	project := t.TempDir()
	writeTree(t, project, map[string]file{
		"a.txt": {Data: "a"}, "a-b.txt": {Data: "ab"}, "a/b.txt": {Data: "b"}, "a/c/d.txt": {Data: "d", Mode: 0o755},
		"z/deep/er/e.txt": {Data: "e"}, "link": {Link: "a"}, "dangling": {Link: "nowhere"},
		"store/sessions/x": {Data: "not the project's"},
	})
	if err := os.Mkdir(filepath.Join(project, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(project, "a", "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "manifest")
	if err := changeset.WriteManifest(project, out, filepath.Join(project, "store")); err != nil {
		t.Fatal(err)
	}
	m, err := changeset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	// What a sequential walk with lstat finds.
	var want changeset.Manifest
	err = filepath.WalkDir(project, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == filepath.Join(project, "store") {
				return filepath.SkipDir
			}
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(project, p)
		want.Paths = append(want.Paths, filepath.ToSlash(rel))
		want.Stats = append(want.Stats, projectfs.StatFromUnix(&st))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(m.Paths) {
		t.Errorf("manifest not sorted: %q", m.Paths)
	}
	if len(m.Paths) != len(want.Paths) {
		t.Fatalf("manifest lists %q, want %q", m.Paths, want.Paths)
	}
	for i, p := range want.Paths {
		got, ok := m.Lookup(p)
		if !ok || got != want.Stats[i] {
			t.Errorf("%s: manifest has %+v (%v), lstat gives %+v", p, got, ok, want.Stats[i])
		}
	}
	if st, _ := m.Lookup("link"); st.Type != 'l' {
		t.Errorf("link recorded as %q, want a symlink", st.Type)
	}
	if st, _ := m.Lookup("a/fifo"); st.Type != 'o' {
		t.Errorf("a/fifo recorded as %q, want other", st.Type)
	}
	if _, ok := m.Lookup("a/c/d.txt"); !ok {
		t.Error("a/c/d.txt is missing")
	}
}

// Reading a manifest costs a few allocations, however many paths it lists (every command that
// reads the bases reads the whole manifest of the project), and listing the project one per file.
func TestManifestAllocations(t *testing.T) {
	project := t.TempDir()
	const n = 1000
	for i := range n {
		if err := os.Symlink("t", filepath.Join(project, fmt.Sprintf("l%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "manifest")
	if err := changeset.WriteManifest(project, out, ""); err != nil {
		t.Fatal(err)
	}
	var m *changeset.Manifest
	allocs := testing.AllocsPerRun(5, func() {
		var err error
		if m, err = changeset.ReadManifest(out); err != nil {
			t.Fatal(err)
		}
	})
	if len(m.Paths) != n || m.Paths[n-1] != fmt.Sprintf("l%04d", n-1) {
		t.Fatalf("manifest lists %d paths, the last %q", len(m.Paths), m.Paths[len(m.Paths)-1])
	}
	if st, ok := m.Lookup("l0500"); !ok || st.Type != 'l' {
		t.Errorf("l0500: %+v, %v", st, ok)
	}
	if allocs > 10 {
		t.Errorf("reading a manifest of %d paths allocated %.0f times, want at most 10", n, allocs)
	}
	// Listing the project costs each file its path (and the slices grow): its entries are
	// stated as they were read.
	allocs = testing.AllocsPerRun(3, func() {
		if _, err := changeset.ListProject(project, ""); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1.5*n {
		t.Errorf("listing a project of %d files allocated %.0f times, want at most %d", n, allocs, n*3/2)
	}
}

// A manifest cut short anywhere is corrupt, never read in part.
func TestReadManifestRefusesTruncated(t *testing.T) {
	project := t.TempDir()
	writeTree(t, project, map[string]file{"a.txt": {Data: "a"}, "b/c.txt": {Data: "bc"}})
	out := filepath.Join(t.TempDir(), "manifest")
	if err := changeset.WriteManifest(project, out, ""); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut")
	for n := len(changeset.ManifestMagic) + 1; n < len(data); n++ {
		if err := os.WriteFile(cut, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := changeset.ReadManifest(cut)
		if err == nil && len(m.Paths) == 2 {
			t.Errorf("manifest cut at %d of %d bytes read whole", n, len(data))
		}
	}
}
