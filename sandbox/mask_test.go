package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// maskTree makes a tree under a temp dir and returns its root. Entries are
// made before modes are set, so that a 0000 directory can hold files.
func maskTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	outside := filepath.Join(filepath.Dir(root), "outside")
	for _, d := range []string{root, outside, outside + "/dir"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{"readable", 0o644},
		{"owner-only", 0o600},
		{"group-only", 0o640},
		{"exec-only", 0o711},
		{"open/readable", 0o644},
		{"open/secret", 0o600},
		{"open/deep/secret", 0o400},
		{"closed/readable", 0o644},
		{"listless/readable", 0o644},
		{"unenterable/readable", 0o644},
	} {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside+"/secret", []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside+"/dir/secret", []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Symlinks are not followed, whatever they point to.
	for name, target := range map[string]string{"link-file": outside + "/secret", "link-dir": outside + "/dir", "dangling": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for d, mode := range map[string]os.FileMode{"closed": 0o700, "listless": 0o711, "unenterable": 0o754} {
		if err := os.Chmod(filepath.Join(root, d), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { openDirs(root) })
	return root
}

func TestMaskWalk(t *testing.T) {
	t.Parallel()
	root := maskTree(t)
	got, entries := walkUnreadable(root)
	var want []string
	for _, p := range []string{"closed", "exec-only", "fifo", "group-only", "listless", "open/deep/secret",
		"open/secret", "owner-only", "unenterable"} {
		want = append(want, filepath.Join(root, p))
	}
	if !slices.Equal(got, want) {
		t.Errorf("masked:\n%q\nwant\n%q", got, want)
	}
	// Everything but what lies in the three hidden directories: 12 at the top, 3 in open, 1 in open/deep.
	if entries != 16 {
		t.Errorf("walked %d entries, want 16", entries)
	}
	// A tree others may not enter is hidden whole.
	if err := os.Chmod(root, 0o750); err != nil {
		t.Fatal(err)
	}
	if got, _ := walkUnreadable(root); !slices.Equal(got, []string{root}) {
		t.Errorf("tree 0750: masked %q, want only the tree", got)
	}
}

func TestMaskHiddenFromOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode uint32
		want bool
	}{
		{syscall.S_IFREG | 0o644, false},
		{syscall.S_IFREG | 0o604, false},
		{syscall.S_IFREG | 0o640, true},
		{syscall.S_IFREG | 0o4711, true},
		{syscall.S_IFDIR | 0o755, false},
		{syscall.S_IFDIR | 0o1777, false},
		{syscall.S_IFDIR | 0o751, true},
		{syscall.S_IFDIR | 0o754, true},
		{syscall.S_IFLNK | 0o777, false},
		{syscall.S_IFSOCK | 0o660, true},
	} {
		if got := hiddenFromOthers(tc.mode); got != tc.want {
			t.Errorf("hiddenFromOthers(%o) = %v, want %v", tc.mode, got, tc.want)
		}
	}
}

// testMaskStore is the mask store of cacheDir with trees of small entries
// or more cached, for a test. No directory counts as changed too close to a
// walk: the fixtures are made just before their first.
func testMaskStore(cacheDir string, small int) maskStore {
	ms := newMaskStore(cacheDir)
	ms.smallTree, ms.maxAge, ms.racyWindow = small, time.Hour, -time.Hour
	return ms
}

func TestMaskCache(t *testing.T) {
	t.Parallel()
	root := maskTree(t)
	cacheDir := t.TempDir()
	ms := testMaskStore(cacheDir, 0)
	readable := filepath.Join(root, "readable")
	first, _ := walkUnreadable(root)

	check := func(step string, want []string, wantRescan bool) {
		t.Helper()
		got, rescan := ms.systemMasks([]string{root})
		if !slices.Equal(got, want) {
			t.Errorf("%s: masked %q, want %q", step, got, want)
		}
		if (rescan != nil) != wantRescan {
			t.Errorf("%s: rescan due %v, want %v", step, rescan != nil, wantRescan)
		}
		if rescan != nil {
			rescan()
		}
	}
	// No cache: walked now, and recorded.
	check("no cache", first, false)
	if _, err := os.Stat(filepath.Join(cacheDir, maskCacheName)); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	// Fresh: used as is, even though an existing file has become secret
	// since (the residual risk the README states: its ctime alone changed).
	if err := os.Chmod(readable, 0o600); err != nil {
		t.Fatal(err)
	}
	check("fresh", first, false)
	second := append([]string{}, first...)
	second = append(second, readable)
	slices.Sort(second)

	// Stale by age: the old answer, and a rescan that records the new one.
	setScanned(t, cacheDir, root, time.Now().Add(-2*time.Hour))
	check("stale by age", first, true)
	check("after the rescan", second, false)

	// Changed: a file added to tree/open changes the directory's ctime;
	// the tree is walked again before the run.
	if err := os.Chmod(readable, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "open", "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	check("changed below the tree", first, false)
	check("after the walk", first, false)

	// A cache writable by others, or corrupt, is not trusted: walked now.
	if err := os.Chmod(readable, 0o600); err != nil {
		t.Fatal(err)
	}
	cacheFile := filepath.Join(cacheDir, maskCacheName)
	if err := os.Chmod(cacheFile, 0o666); err != nil {
		t.Fatal(err)
	}
	check("cache writable by others", second, false)
	if err := os.Chmod(readable, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cacheFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("corrupt cache", first, false)
	// A masked path outside its tree marks a forged entry.
	c := loadMaskCache(cacheDir)
	s := c.Trees[root]
	s.Masked = append(s.Masked, "/etc/hostname")
	c.Trees[root] = s
	saveMaskCache(cacheDir, c)
	if got := loadMaskCache(cacheDir); len(got.Trees) != 0 {
		t.Errorf("a scan listing a path outside its tree was kept: %v", got.Trees)
	}
}

// TestMaskSmallTree: a tree under maskStore.smallTree entries is walked every run.
func TestMaskSmallTree(t *testing.T) {
	t.Parallel()
	root := maskTree(t)
	ms := testMaskStore(t.TempDir(), 1000)
	first, rescan := ms.systemMasks([]string{root})
	if rescan != nil {
		t.Error("rescan due after a first walk")
	}
	readable := filepath.Join(root, "readable")
	if err := os.Chmod(readable, 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := ms.systemMasks([]string{root})
	if len(got) != len(first)+1 || !slices.Contains(got, readable) {
		t.Errorf("small tree: masked %q, want %q too", got, readable)
	}
}

// TestMaskMemoryCache: without a cache directory the process keeps one.
func TestMaskMemoryCache(t *testing.T) {
	t.Parallel()
	root := maskTree(t)
	ms := testMaskStore("", 0)
	first, _ := ms.systemMasks([]string{root})
	if err := os.Chmod(filepath.Join(root, "readable"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, rescan := ms.systemMasks([]string{root}); !slices.Equal(got, first) || rescan != nil {
		t.Errorf("second run: masked %q (rescan %v), want the first walk's %q", got, rescan != nil, first)
	}
}

// setScanned rewrites when tree was scanned in the cache of dir.
func setScanned(t *testing.T, dir, tree string, when time.Time) {
	t.Helper()
	c := loadMaskCache(dir)
	s, ok := c.Trees[tree]
	if !ok {
		t.Fatalf("no scan of %s in the cache", tree)
	}
	s.Scanned = when
	c.Trees[tree] = s
	saveMaskCache(dir, c)
}

// BenchmarkSystemMasks is what masking adds to a run's host side, with a
// fresh cache: /etc walked, the rest checked.
func BenchmarkSystemMasks(b *testing.B) {
	var dirs []string
	for _, g := range systemDirGlobs {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	ms := newMaskStore(b.TempDir())
	ms.systemMasks(dirs)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, rescan := ms.systemMasks(dirs); rescan != nil {
			b.Fatal("rescan due")
		}
	}
}

func BenchmarkWalkEtc(b *testing.B) {
	for i := 0; i < b.N; i++ {
		walkUnreadable("/etc")
	}
}

// TestStartMaskCheck: the check a process starts early is the one its next run over the same
// cache takes, once; a run over another cache, or one that comes too long after, checks anew.
func TestStartMaskCheck(t *testing.T) {
	dirs := systemDirs()
	cacheDir := t.TempDir()
	take := func() *maskScan {
		m := maskCheckFor(dirs, cacheDir)
		m.wait()
		return m
	}
	StartMaskCheck(cacheDir)
	early := earlyMasks.scan
	if early == nil {
		t.Fatal("StartMaskCheck started no check")
	}
	StartMaskCheck(cacheDir)
	if earlyMasks.scan != early {
		t.Error("a second StartMaskCheck replaced the waiting check")
	}
	if got := take(); got != early {
		t.Error("the run did not take the early check")
	}
	if got := take(); got == early {
		t.Error("a second run took the early check again")
	}

	StartMaskCheck(t.TempDir())
	if got := take(); got == earlyMasks.scan || earlyMasks.scan != nil {
		t.Error("a run over another cache took the early check, or left it waiting")
	}

	StartMaskCheck(cacheDir)
	early = earlyMasks.scan
	earlyMasks.started = time.Now().Add(-earlyMaskAge - time.Second)
	if got := take(); got == early {
		t.Error("a run took an early check older than earlyMaskAge")
	}
}

// TestStartMaskCheckRun: a jail run takes the process's early check.
func TestStartMaskCheckRun(t *testing.T) {
	j := newTestJail(t)
	p := j.policy()
	p.MaskCache = t.TempDir()
	StartMaskCheck(p.MaskCache)
	if res, _, _ := j.run(t, p, "/bin/true"); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if earlyMasks.scan != nil {
		t.Error("the run left the early check waiting")
	}
}

// TestMaskDirsMalformed: a cached list of directories cut short or garbled reads as changed.
func TestMaskDirsMalformed(t *testing.T) {
	t.Parallel()
	root := maskTree(t)
	ts := scanTree(root, -time.Hour)
	if !dirsUnchanged(root, ts.Dirs) {
		t.Fatal("the scan just made reads as changed")
	}
	for _, bad := range [][]byte{ts.Dirs[:len(ts.Dirs)-1], append(append([]byte{}, ts.Dirs...), 0x80), {0x02, 0x7f}} {
		if dirsUnchanged(root, bad) {
			t.Errorf("malformed list %q reads as unchanged", bad)
		}
	}
}

// TestMaskCacheLoadAllocs: the cache, read on every run, is read into one buffer of its size:
// what loading it allocates stays under one and a half times the file.
func TestMaskCacheLoadAllocs(t *testing.T) {
	dir := t.TempDir()
	dirs := appendDir(nil, 1, 0, false, "")
	for i := 0; len(dirs) < 1<<20; i++ {
		dirs = appendDir(dirs, int64(i)*1000, 0, false, "share/doc/package-"+strconv.Itoa(i))
	}
	c := maskCache{Version: maskCacheVersion, Trees: map[string]treeScan{
		"/usr": {Scanned: time.Now(), Stamp: map[string]int64{"/var/lib/dpkg/status": 1}, Dirs: dirs, Entries: 100000},
	}}
	saveMaskCache(dir, c)
	fi, err := os.Stat(filepath.Join(dir, maskCacheName))
	if err != nil {
		t.Fatal(err)
	}
	if got := loadMaskCache(dir).Trees["/usr"].Dirs; !bytes.Equal(got, dirs) {
		t.Fatalf("the cache read back holds %d bytes of directories, want the %d written", len(got), len(dirs))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	loadMaskCache(dir)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*uint64(fi.Size())/2 {
		t.Errorf("loading a cache of %d bytes allocated %d", fi.Size(), got)
	}
}

// TestMaskAnchors: the check of a cached scan, which looks directories up from anchors, sees a
// change in every directory of the scan, anchor or not (enumerated from the scan itself): a file
// made in it, it made a symlink to a copy of itself, it closed (chmod).
func TestMaskAnchors(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "tree")
	for i := range anchorMin + 8 {
		if err := os.MkdirAll(filepath.Join(root, "big", "d"+strconv.Itoa(i), "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "small", "one"), 0o755); err != nil {
		t.Fatal(err)
	}
	scan := func() (treeScan, []string, map[string]bool) {
		t.Helper()
		ts := scanTree(root, -time.Hour)
		var dirs []string
		anchors := map[string]bool{}
		var anchorPaths []string
		for b := ts.Dirs; len(b) > 0; {
			d, rest, ok := nextDir(b)
			if !ok {
				t.Fatal("the scan's list of directories does not read")
			}
			b = rest
			base := root
			if d.anchor > 0 {
				base = anchorPaths[d.anchor-1]
			}
			p := base
			if len(d.rel) > 0 {
				p = base + "/" + string(d.rel)
			}
			dirs = append(dirs, p)
			if d.isAnchor {
				anchors[p] = true
				anchorPaths = append(anchorPaths, p)
			}
		}
		if !dirsUnchanged(root, ts.Dirs) {
			t.Fatal("the scan just made reads as changed")
		}
		return ts, dirs, anchors
	}
	_, dirs, anchors := scan()
	if !anchors[root+"/big"] || len(anchors) != 1 {
		t.Fatalf("anchors %v, want %s/big alone", anchors, root)
	}
	if len(dirs) != 2*(anchorMin+8)+4 {
		t.Fatalf("the scan lists %d directories, want %d", len(dirs), 2*(anchorMin+8)+4)
	}
	changes := map[string]func(dir string) func(){
		"a file made in it": func(dir string) func() {
			f := filepath.Join(dir, "new")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return func() { os.Remove(f) }
		},
		"closed": func(dir string) func() {
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			return func() { os.Chmod(dir, 0o755) }
		},
		"a symlink to a copy": func(dir string) func() {
			if dir == root {
				return nil // the tree itself is opened by its name, not followed
			}
			moved := dir + ".real"
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Base(moved), dir); err != nil {
				t.Fatal(err)
			}
			return func() {
				os.Remove(dir)
				os.Rename(moved, dir)
			}
		},
	}
	for name, change := range changes {
		for _, dir := range dirs {
			ts, _, _ := scan()
			undo := change(dir)
			if undo == nil {
				continue
			}
			if dirsUnchanged(root, ts.Dirs) {
				t.Errorf("%s (anchor %v): %s, and the check saw no change", dir, anchors[dir], name)
			}
			undo()
		}
	}
}
