package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestProjectDirsCache: a plan after every kind of change projectDirs cares about (a nested
// repository added at each depth it goes to, every credential entry added at each depth it
// lists, a directory renamed, removed, replaced by a symlink or by another directory, an entry
// added to a directory whose modification time is then set back to what the cache holds) finds
// what the uncached scan finds; a plan after none lists no directory; a directory changed within
// the racy window is not kept; a corrupt or writable cache file reads as empty.
func TestProjectDirsCache(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	project, cacheDir := filepath.Join(base, "project"), filepath.Join(base, "cache")
	writeFiles(t, project, map[string]string{
		"a.txt": "a\n", ".git/HEAD": "ref: refs/heads/main\n", "node_modules/m/x.js": "x\n",
		"a/b/c/d/deep.txt": "deep\n", "a/b/f.txt": "f\n", "x/y/z.txt": "z\n", "keep/k/k.txt": "k\n",
	})
	mkdir := func(rel string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(project, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(step string, racy time.Duration) *dirsCache {
		t.Helper()
		c := loadDirsCache(cacheDir, project)
		c.racy = racy
		dirs, creds := projectDirs(project, c)
		c.save()
		wantDirs, wantCreds := projectDirs(project, nil)
		if !slices.Equal(dirs, wantDirs) || !slices.Equal(creds, wantCreds) {
			t.Errorf("%s: the cached scan found\n%v\n%v\nthe scan finds\n%v\n%v", step, dirs, creds, wantDirs, wantCreds)
		}
		// The next change must not fall in the tick of the file times of what was kept: the
		// racy window, which the plans here set aside, is what guards that.
		var last int64
		for _, e := range c.dirs {
			last = max(last, e.Dir.Ctime)
		}
		probe := filepath.Join(base, "tick")
		for deadline := time.Now().Add(time.Minute); ; {
			var st unix.Stat_t
			if err := os.WriteFile(probe, nil, 0o644); err != nil || unix.Stat(probe, &st) != nil {
				t.Fatal("probe file", err)
			}
			if st.Ctim.Nano() > last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the file clock did not move past the cached change times in a minute")
			}
			time.Sleep(time.Millisecond)
		}
		return c
	}
	trusted := -time.Hour // the fixtures are made just before they are read
	if c := plan("first plan", trusted); c.reads == 0 {
		t.Fatalf("first plan: no directory read")
	}
	if c := plan("unchanged", trusted); c.reads != 0 {
		t.Errorf("unchanged: %d directories read again", c.reads)
	}

	var credNames []string
	for n := range credentialNames {
		credNames = append(credNames, n)
	}
	slices.Sort(credNames)
	changes := []struct {
		name   string
		change func()
	}{
		{"nested repository at depth 1", func() { mkdir("n1/.git") }},
		{"nested repository at depth 2", func() { mkdir("a/n2/.git") }},
		{"nested repository at depth 3", func() { mkdir("a/b/n3/.git") }},
		{"directory renamed", func() {
			if err := os.Rename(filepath.Join(project, "a/b"), filepath.Join(project, "a/b2")); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory removed", func() {
			if err := os.RemoveAll(filepath.Join(project, "x/y")); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory replaced by a symlink", func() {
			if err := os.RemoveAll(filepath.Join(project, "x")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("a", filepath.Join(project, "x")); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory replaced by another", func() {
			mkdir("other/o1/o2")
			if err := os.RemoveAll(filepath.Join(project, "keep")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(project, "other"), filepath.Join(project, "keep")); err != nil {
				t.Fatal(err)
			}
		}},
		{"entry added, modification time set back", func() {
			d := filepath.Join(project, "a")
			var st unix.Stat_t
			if err := unix.Lstat(d, &st); err != nil {
				t.Fatal(err)
			}
			mkdir("a/same/.git")
			if err := unix.UtimesNano(d, []unix.Timespec{st.Atim, st.Mtim}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, dir := range []string{"", "a", "a/b2"} {
		for _, n := range credNames {
			changes = append(changes, struct {
				name   string
				change func()
			}{"credential entry " + filepath.Join(dir, n), func() {
				writeFiles(t, project, map[string]string{filepath.Join(dir, n): "SECRET\n"})
			}})
		}
	}
	for _, ch := range changes {
		ch.change()
		plan(ch.name, trusted)
		plan(ch.name+", once more", trusted)
	}

	// A directory changed within the racy window is not kept: a second change in the same
	// tick of its file times would not show in them.
	mkdir("keep/racy")
	if c := plan("racy change", scrubRacyWindow); c.dirs[filepath.Join(project, "keep")].Dir != (fileStamp{}) {
		t.Errorf("a directory changed within the racy window was kept")
	}

	// A corrupt cache file, or one others may write, reads as empty.
	cacheFile := filepath.Join(cacheDir, projectDirsCacheFile(project))
	if err := os.Chmod(cacheFile, 0o666); err != nil {
		t.Fatal(err)
	}
	if c := loadDirsCache(cacheDir, project); len(c.dirs) != 0 {
		t.Errorf("a cache file others may write was read")
	}
	if err := os.WriteFile(cacheFile, []byte(`{"version":2,"dirs":{`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cacheFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if c := loadDirsCache(cacheDir, project); len(c.dirs) != 0 {
		t.Errorf("a corrupt cache file was read")
	}
	plan("after a corrupt cache file", trusted)
}

// TestEscapeProjectDirsCache: after a run that kept what it found in the project's directories,
// a nested repository added at each depth the scan goes to, a credential file added at each
// depth it lists and a directory holding a repository renamed each hold a secret on the host;
// the next run shows none of them.
func TestEscapeProjectDirsCache(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.MaskCache = t.TempDir()
	const repoConfig = "[remote \"origin\"]\n\turl = https://x-access-token:SECRET-url@github.com/o/r.git\n"
	repo := func(dir string) map[string]string {
		return map[string]string{dir + "/.git/HEAD": "ref: refs/heads/main\n", dir + "/.git/config": repoConfig}
	}
	writeFiles(t, j.project, repo("old/deep"))
	writeFiles(t, j.project, map[string]string{"a/b/f.txt": "f\n", "keep/k.txt": "k\n"})
	// Wait until the fixture is older than the racy window, so that the first run keeps it.
	made := time.Now()
	for time.Since(made) <= scrubRacyWindow+100*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
	}
	if res, _, errOut := j.run(t, p, "/bin/true"); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, errOut)
	}
	if c := loadDirsCache(p.MaskCache, j.project); len(c.dirs) < 4 {
		t.Fatalf("the run kept %d directories: %v", len(c.dirs), c.dirs)
	}

	var paths []string
	for _, dir := range []string{"n1", "a/n2", "a/b/n3"} {
		writeFiles(t, j.project, repo(dir))
		paths = append(paths, filepath.Join(j.project, dir, ".git/config"))
	}
	for _, dir := range []string{"", "a", "a/b"} {
		writeFiles(t, j.project, map[string]string{filepath.Join(dir, ".netrc"): "machine example.com login u password SECRET-netrc\n"})
		paths = append(paths, filepath.Join(j.project, dir, ".netrc"))
	}
	if err := os.Rename(filepath.Join(j.project, "old"), filepath.Join(j.project, "new")); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(j.project, "new/deep/.git/config"))
	res, out, errOut := j.run(t, p, "/bin/sh", "-c", "cat "+strings.Join(paths, " "))
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, errOut)
	}
	if leaked := markers(out); len(leaked) > 0 {
		t.Errorf("after a cached run, the jail shows %v:\n%s", leaked, out)
	}
}

// Each project's directories are kept in a file of their own, so that a run decodes only its
// own project's; version 1's one file for every project is removed, and past
// maxProjectDirsCaches projects the files written longest ago go.
func TestProjectDirsCachePerProject(t *testing.T) {
	cacheDir := t.TempDir()
	old := filepath.Join(cacheDir, oldProjectDirsCache)
	if err := os.WriteFile(old, []byte(`{"version":1,"dirs":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	projects := []string{t.TempDir(), t.TempDir()}
	for i, project := range projects {
		writeFiles(t, project, map[string]string{fmt.Sprintf("only%d/f.txt", i): "f\n"})
		c := loadDirsCache(cacheDir, project)
		c.racy = 0
		projectDirs(project, c)
		c.save()
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("version 1's file of every project was left: %v", err)
	}
	for i, project := range projects {
		c := loadDirsCache(cacheDir, project)
		mine, other := filepath.Join(project, fmt.Sprintf("only%d", i)), filepath.Join(projects[1-i], fmt.Sprintf("only%d", 1-i))
		if _, ok := c.dirs[mine]; !ok {
			t.Errorf("project %d's cache lacks its own directory %s: %v", i, mine, c.dirs)
		}
		if _, ok := c.dirs[other]; ok {
			t.Errorf("project %d's cache holds the other project's directory %s", i, other)
		}
	}

	for i := range maxProjectDirsCaches + 5 {
		name := filepath.Join(cacheDir, fmt.Sprintf("%sfake%03d.json", projectDirsCachePrefix, i))
		if err := os.WriteFile(name, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-time.Duration(1000-i) * time.Hour)
		if err := os.Chtimes(name, at, at); err != nil {
			t.Fatal(err)
		}
	}
	c := loadDirsCache(cacheDir, projects[0])
	c.dirty = true
	c.save()
	names, _ := filepath.Glob(filepath.Join(cacheDir, projectDirsCachePrefix+"*"))
	if len(names) != maxProjectDirsCaches {
		t.Errorf("%d project files kept, want %d", len(names), maxProjectDirsCaches)
	}
	for _, gone := range []string{"fake000", "fake006"} {
		if _, err := os.Stat(filepath.Join(cacheDir, projectDirsCachePrefix+gone+".json")); !os.IsNotExist(err) {
			t.Errorf("%s, among the oldest, was kept", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(cacheDir, projectDirsCacheFile(projects[0]))); err != nil {
		t.Errorf("the project just written was removed: %v", err)
	}
}
