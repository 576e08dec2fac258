package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Masking, the host side. Run by root, the command is root of the jail
// mapped to host uid 0: owner bits need no capability, so /etc/shadow, a
// host key or any root-only file of the bound system trees would be
// readable. And an ordinary user's command keeps the user's groups, which
// may open a 0640 root:adm file. So the host finds every path under the
// system trees that others may not read, and PID 1 hides each one
// (hideUnreadable, in mask_mount.go). Masking was chosen over the other
// ways: running the command as another uid would stop it writing a project
// owned by the invoker (root), and Landlock cannot deny a path below one it
// allows.
//
// Walking /etc (about 2,000 entries) takes a few milliseconds and is done on
// every run: that is where administrators keep secrets outside any package.
// Walking /usr (about 150,000 entries) takes half a second warm and seconds
// cold, far more than a jail's start-up; the kernel keeps no index of
// modes, and package databases do not record them. Large trees are therefore
// kept in a cache (Policy.MaskCache) that records the change time (ctime) of
// every directory the walk read: a file or directory made, removed or
// renamed at any depth changes its directory's, a chmod or chown of a
// directory its own. Every run checks them all (one lstat per directory,
// about a tenth of the tree's entries) and the package databases; when any
// changed, the tree is walked again before the run, which is never served
// from a cache known to be stale. A chmod or chown of an existing file
// changes that file's ctime alone, which only a walk sees: so a scan is
// trusted for maskStore.maxAge, then still used for the run at hand and
// rescanned while the command runs.

// maskCacheName is the cache's file in Policy.MaskCache.
const maskCacheName = "system-masks.json"

// maskCacheVersion changes when the file's meaning does.
const maskCacheVersion = 3

// maxMaskCacheSize is the largest cache file read: past it, the trees are walked.
const maxMaskCacheSize = 256 << 20

// maskStore is where the scans of the system trees are kept (cacheDir,
// Policy.MaskCache) and how far they are trusted.
type maskStore struct {
	cacheDir string
	// maxAge is how long a cached scan is trusted. An existing file made
	// unreadable to others after a scan (chmod, chown, an ACL) stays
	// readable in the jail for runs that start before the next scan
	// finishes.
	maxAge time.Duration
	// racyWindow covers the granularity of the kernel's file times (a
	// jiffy, at most 10 ms, where it is coarse): a directory changed this
	// close to the start of a walk may change again without its ctime
	// moving, so a scan that saw one is walked again by the next run.
	racyWindow time.Duration
	// smallTree is the size (entries) under which a tree is walked on
	// every run rather than cached: it costs about as much as checking the
	// cache.
	smallTree int
}

// defaultSmallTree is maskStore.smallTree of every run.
const defaultSmallTree = 4096

// newMaskStore is the store of Policy.MaskCache cacheDir, as runs use it.
func newMaskStore(cacheDir string) maskStore {
	return maskStore{cacheDir: cacheDir, maxAge: time.Hour, racyWindow: 50 * time.Millisecond, smallTree: defaultSmallTree}
}

// alwaysWalked are the trees walked on every run whatever their size.
var alwaysWalked = []string{"/etc"}

// packageDatabases change when a package is installed, upgraded or
// removed, which is when the package-managed trees change; a change
// makes a cached scan stale.
var packageDatabases = []string{
	"/var/lib/dpkg/status", "/var/lib/dpkg/statoverride", "/var/lib/rpm", "/var/lib/rpm/rpmdb.sqlite", "/usr/lib/sysimage/rpm",
	"/usr/lib/sysimage/rpm/rpmdb.sqlite", "/var/lib/pacman/local", "/lib/apk/db/installed",
}

// maskCache is what the cache file holds: one scan per system tree.
type maskCache struct {
	Version int                 `json:"version"`
	Trees   map[string]treeScan `json:"trees"`
}

// treeScan is one walk of a system tree.
type treeScan struct {
	Scanned time.Time `json:"scanned"` // when the walk started
	// Stamp holds the mtimes (ns; 0 when missing) of the package
	// databases, taken before the walk.
	Stamp map[string]int64 `json:"stamp"`
	// Dirs are the directories the walk read, each its change time (ns)
	// as the walk found it, before reading it, and its path relative to
	// its anchor (see anchorDirs; "" is the tree), in the form of
	// appendDir, parents first. They follow
	// the JSON document in the cache file, DirsSize bytes per tree in the
	// order of the trees' names: some 17,000 directories under /usr read
	// in a millisecond this way, in twenty as JSON.
	Dirs     []byte `json:"-"`
	DirsSize int    `json:"dirs_size"`
	// Racy is set when a directory changed within maskStore.racyWindow of the walk.
	Racy    bool     `json:"racy,omitempty"`
	Entries int      `json:"entries"` // entries the walk looked at
	Masked  []string `json:"masked"`
}

// systemMasks returns the paths under the system trees among dirs that
// others may not read, for PID 1 to hide, and, when part of the answer came
// from a stale cache, the rescan to run while the command runs (nil when
// none is due). ms says where the scans are kept.
func (ms maskStore) systemMasks(dirs []string) (masked []string, rescan func()) {
	cache := loadMaskCache(ms.cacheDir)
	now := time.Now()
	dirty := false
	var stale []string
	for _, tree := range systemTrees(dirs) {
		if slices.Contains(alwaysWalked, tree) {
			m, _ := walkUnreadable(tree)
			masked = append(masked, m...)
			continue
		}
		c, ok := cache.Trees[tree]
		state := scanChanged
		if ok && c.Entries >= ms.smallTree {
			state = c.state(tree, now, ms.maxAge)
		}
		switch state {
		case scanChanged:
			ts := scanTree(tree, ms.racyWindow)
			masked = append(masked, ts.Masked...)
			// A small tree is only recorded as small, once: it is
			// walked again on every run anyway.
			if !ok || ts.Entries >= ms.smallTree || c.Entries >= ms.smallTree {
				cache.Trees[tree] = ts
				dirty = true
			}
		case scanFresh:
			masked = append(masked, c.Masked...)
		case scanOld:
			masked = append(masked, c.Masked...)
			stale = append(stale, tree)
		}
	}
	if dirty {
		saveMaskCache(ms.cacheDir, cache)
	}
	if len(stale) > 0 {
		rescan = func() { ms.rescanTrees(stale) }
	}
	return masked, rescan
}

// maskScan is systemMasks running in the background: Run starts it
// before the jail's PID 1 and waits for it only to send PID 1 its spec, so
// that the walk of /etc overlaps PID 1's start.
type maskScan struct {
	done   chan struct{}
	masked []string
	rescan func()
}

func startSystemMasks(dirs []string, ms maskStore) *maskScan {
	m := &maskScan{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.masked, m.rescan = ms.systemMasks(dirs)
	}()
	return m
}

// earlyMasks is the check StartMaskCheck started, for the process's next Run.
var earlyMasks struct {
	sync.Mutex
	scan     *maskScan
	dirs     []string
	cacheDir string
	started  time.Time
}

// earlyMaskAge is how old an early check may be when a run takes it: an older one (the run
// waited for another command's lock) is done again, so that the masks are those of the run's
// start.
const earlyMaskAge = 10 * time.Second

// StartMaskCheck starts the check of the system trees' masks, over the mask cache cacheDir
// (Policy.MaskCache), in the background: with a fresh cache it costs one lstat per directory
// of the cached trees, more CPU than anything else a run's start does, and started at the
// process's start it runs beside the rest (the flags, the session, the plan, PID 1's start)
// instead of after it. The process's next Run over that cache takes it. A process that runs
// no jail has done a little work for nothing.
func StartMaskCheck(cacheDir string) {
	earlyMasks.Lock()
	defer earlyMasks.Unlock()
	if earlyMasks.scan != nil {
		return
	}
	dirs := systemDirs()
	earlyMasks.scan, earlyMasks.dirs, earlyMasks.cacheDir = startSystemMasks(dirs, newMaskStore(cacheDir)), dirs, cacheDir
	earlyMasks.started = time.Now()
}

// maskCheckFor is the check of a run over the system directories dirs and the mask cache
// cacheDir: the one StartMaskCheck started when it checks the same, at most earlyMaskAge ago,
// else one started now.
func maskCheckFor(dirs []string, cacheDir string) *maskScan {
	earlyMasks.Lock()
	m := earlyMasks.scan
	ok := m != nil && earlyMasks.cacheDir == cacheDir && slices.Equal(earlyMasks.dirs, dirs) &&
		time.Since(earlyMasks.started) <= earlyMaskAge
	earlyMasks.scan = nil
	earlyMasks.Unlock()
	if ok {
		return m
	}
	return startSystemMasks(dirs, newMaskStore(cacheDir))
}

// wait returns the paths to mask.
func (m *maskScan) wait() []string {
	<-m.done
	return m.masked
}

// startRescan starts the rescan the scan found due, if any, and returns
// the function that waits for it: the process must not exit halfway
// through.
func (m *maskScan) startRescan() (wait func()) {
	<-m.done
	if m.rescan == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.rescan()
	}()
	return func() { <-done }
}

// rescanTrees walks trees again and records them in the cache.
func (ms maskStore) rescanTrees(trees []string) {
	scans := make(map[string]treeScan, len(trees))
	for _, t := range trees {
		scans[t] = scanTree(t, ms.racyWindow)
	}
	// Another run may have written the cache meanwhile: merge into it.
	cache := loadMaskCache(ms.cacheDir)
	for t, s := range scans {
		cache.Trees[t] = s
	}
	saveMaskCache(ms.cacheDir, cache)
}

// systemTrees are the directories among dirs that are walked: those that
// are directories, not symlinks (a symlink is recreated in the jail and its
// target lies in another tree).
func systemTrees(dirs []string) []string {
	var trees []string
	for _, d := range dirs {
		var st unix.Stat_t
		if unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			trees = append(trees, d)
		}
	}
	return trees
}

// scanTree walks tree, stamped first so that a change during the walk
// makes the scan stale; a directory changed within racyWindow of its start
// makes it racy.
func scanTree(tree string, racyWindow time.Duration) treeScan {
	ts := treeScan{Scanned: time.Now(), Stamp: map[string]int64{}}
	for _, p := range packageDatabases {
		ts.Stamp[p] = mtime(p)
	}
	w := walkTree(tree)
	ts.Masked, ts.Entries = w.masked, int(w.entries.Load())
	since := ts.Scanned.Add(-racyWindow).UnixNano()
	anchorOf, number := anchorDirs(w.dirs)
	for i, d := range w.dirs {
		a := anchorOf[i]
		rel := ""
		if i > 0 {
			rel = d[len(w.dirs[a])+1:]
		}
		ts.Dirs = appendDir(ts.Dirs, w.ctimes[i], number[a], number[i] > 0, rel)
		ts.Racy = ts.Racy || w.ctimes[i] >= since
	}
	return ts
}

// anchorMin is how many directories of a scan must lie below a directory for it to be an
// anchor.
const anchorMin = 32

// anchorDirs picks the anchors of the directories dirs of a walk (the tree first, every
// directory after its parent): those with anchorMin directories or more below them. The check of
// a cached scan opens each anchor (relative to its own anchor) and looks every other directory
// up from its nearest one, so that a lookup walks a path or two, not the seven of a path from
// the root of /usr: path lookups were most of the check's cost. anchorOf[i] is the index of
// dirs[i]'s nearest anchor above it (0, the tree, for the tree itself and for those with none
// but the tree), number[i] an anchor's number (from 1, in the order of dirs; 0 for the tree and
// for a directory that is no anchor).
func anchorDirs(dirs []string) (anchorOf, number []int) {
	n := len(dirs)
	anchorOf, number = make([]int, n), make([]int, n)
	index := make(map[string]int, n)
	parent := make([]int, n)
	for i, d := range dirs {
		index[d] = i
		if i > 0 {
			p, ok := index[filepath.Dir(d)]
			if !ok {
				p = 0 // not below a directory of the walk: looked up from the tree
			}
			parent[i] = p
		}
	}
	below := make([]int, n)
	for i := n - 1; i > 0; i-- {
		below[parent[i]] += below[i] + 1
	}
	anchors := 0
	for i := 1; i < n; i++ {
		p := parent[i]
		if number[p] > 0 {
			anchorOf[i] = p
		} else {
			anchorOf[i] = anchorOf[p]
		}
		if below[i] >= anchorMin {
			anchors++
			number[i] = anchors
		}
	}
	return anchorOf, number
}

// appendDir appends one directory of treeScan.Dirs to b: its ctime, the number of its anchor
// (0: the tree) with whether it is an anchor itself in the lowest bit, and the length of its path
// relative to its anchor, as varints, then that path.
func appendDir(b []byte, ctime int64, anchor int, isAnchor bool, rel string) []byte {
	b = binary.AppendVarint(b, ctime)
	ref := uint64(anchor) << 1
	if isAnchor {
		ref |= 1
	}
	b = binary.AppendUvarint(b, ref)
	b = binary.AppendUvarint(b, uint64(len(rel)))
	return append(b, rel...)
}

// cachedDir is one directory of treeScan.Dirs, as nextDir reads it.
type cachedDir struct {
	ctime    int64
	anchor   int
	isAnchor bool
	rel      []byte
}

// nextDir reads the first directory of b and returns the rest; ok is false when b is
// malformed.
func nextDir(b []byte) (d cachedDir, rest []byte, ok bool) {
	ctime, n := binary.Varint(b)
	if n <= 0 {
		return d, nil, false
	}
	b = b[n:]
	ref, n := binary.Uvarint(b)
	if n <= 0 || ref>>1 > 1<<30 {
		return d, nil, false
	}
	b = b[n:]
	size, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < size {
		return d, nil, false
	}
	d = cachedDir{ctime: ctime, anchor: int(ref >> 1), isAnchor: ref&1 == 1, rel: b[n : n+int(size)]}
	return d, b[n+int(size):], true
}

// scanState is what a cached scan is worth to a run.
type scanState int

const (
	scanFresh   scanState = iota // use it
	scanOld                      // use it, and walk again while the command runs
	scanChanged                  // do not use it: walk now
)

// state tells how the scan of tree may be used at now: changed when a
// package database or any directory it read changed since (or it cannot be
// told), old past maxAge, else fresh.
func (ts treeScan) state(tree string, now time.Time, maxAge time.Duration) scanState {
	if ts.Racy || len(ts.Stamp) == 0 {
		return scanChanged
	}
	if len(ts.Dirs) == 0 {
		return scanChanged
	}
	for p, m := range ts.Stamp {
		if mtime(p) != m {
			return scanChanged
		}
	}
	if !dirsUnchanged(tree, ts.Dirs) {
		return scanChanged
	}
	if age := now.Sub(ts.Scanned); age < 0 || age > maxAge {
		return scanOld
	}
	return scanFresh
}

// dirsUnchanged reports whether every directory of dirs (treeScan.Dirs, below tree) is still a
// directory with the ctime recorded. It is the whole cost of a fresh cache, a stat per directory
// (some 17,000 under /usr): the anchors are opened first, in order, each from its own anchor;
// the other directories are then looked up from theirs, in parallel, each worker decoding the
// list itself. A malformed list reads as changed.
func dirsUnchanged(tree string, dirs []byte) bool {
	root, err := unix.Open(tree, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	anchors := []int{root}
	defer func() {
		for _, fd := range anchors {
			unix.Close(fd)
		}
	}()
	same := func(st *unix.Stat_t, ctime int64) bool {
		return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Ctim.Nano() == ctime
	}
	var st unix.Stat_t
	first := true
	for b := dirs; len(b) > 0; {
		d, rest, ok := nextDir(b)
		// An anchor, or the tree (first, and only first), names an anchor opened before it.
		if !ok || d.anchor >= len(anchors) || (len(d.rel) == 0) != first || (first && d.isAnchor) {
			return false
		}
		first, b = false, rest
		if !d.isAnchor {
			continue
		}
		fd, err := unix.Openat(anchors[d.anchor], string(d.rel), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		anchors = append(anchors, fd)
		if unix.Fstat(fd, &st) != nil || !same(&st, d.ctime) {
			return false
		}
	}
	if first {
		return false // no directory at all
	}
	workers := min(runtime.GOMAXPROCS(0), max(len(dirs)/(1024*32), 1))
	var changed atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st unix.Stat_t
			b := dirs
			for i := 0; len(b) > 0 && !changed.Load(); i++ {
				d, rest, _ := nextDir(b) // checked above
				b = rest
				if d.isAnchor || i%workers != w {
					continue
				}
				var err error
				if len(d.rel) == 0 {
					err = unix.Fstat(anchors[d.anchor], &st)
				} else {
					err = unix.Fstatat(anchors[d.anchor], unsafe.String(unsafe.SliceData(d.rel), len(d.rel)), &st, unix.AT_SYMLINK_NOFOLLOW)
				}
				if err != nil || !same(&st, d.ctime) {
					changed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return !changed.Load()
}

// mtime is path's modification time in nanoseconds, 0 when it is missing.
func mtime(path string) int64 {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return 0
	}
	return st.Mtim.Nano()
}

// hiddenFromOthers reports whether mode keeps a file from others: a file
// without o+r, a directory without o+r or o+x (without o+x its entries
// cannot be reached, without o+r not listed). A symlink's mode means nothing.
func hiddenFromOthers(mode uint32) bool {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return false
	case unix.S_IFDIR:
		return mode&0o005 != 0o005
	}
	return mode&0o004 == 0
}

// walkUnreadable walks tree without following symlinks, into the
// filesystems mounted below it (a bind with MS_REC shows them too), and
// returns, sorted, the paths others may not read (tree itself included)
// and the number of entries it looked at. It does not descend into a
// directory it returns: the mask hides it whole.
func walkUnreadable(tree string) ([]string, int) {
	w := walkTree(tree)
	return w.masked, int(w.entries.Load())
}

// walkTree is walkUnreadable that also returns the directories it read,
// with their ctimes.
func walkTree(tree string) *unreadableWalk {
	w := &unreadableWalk{sem: make(chan struct{}, max(runtime.GOMAXPROCS(0)-1, 1))}
	var st unix.Stat_t
	if err := unix.Lstat(tree, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return w
	}
	if hiddenFromOthers(st.Mode) {
		w.masked = []string{tree}
		w.entries.Store(1)
		return w
	}
	w.dirs, w.ctimes = []string{tree}, []int64{st.Ctim.Nano()}
	// A walk is about one stat per entry; directories are read in
	// parallel, as many at once as there are CPUs.
	w.dir(tree)
	w.wg.Wait()
	slices.Sort(w.masked)
	return w
}

type unreadableWalk struct {
	sem     chan struct{} // a token per extra goroutine
	wg      sync.WaitGroup
	mu      sync.Mutex
	masked  []string
	dirs    []string // every directory read
	ctimes  []int64  // of dirs, taken before each was read
	entries atomic.Int64
}

func (w *unreadableWalk) mask(path string) {
	w.mu.Lock()
	w.masked = append(w.masked, path)
	w.mu.Unlock()
}

// dir walks one directory, which others may list and enter.
func (w *unreadableWalk) dir(path string) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// Gone, or no longer a directory, since its parent was read:
		// PID 1 checks every path again. Anything else (the invoker
		// may not read it, though others may): hide it rather than
		// vouch for what could not be seen.
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
			w.mask(path)
		}
		return
	}
	f := os.NewFile(uintptr(fd), path)
	entries, err := f.ReadDir(-1)
	if err != nil {
		f.Close()
		w.mask(path)
		return
	}
	w.entries.Add(int64(len(entries)))
	var subdirs []string
	var ctimes []int64
	for _, e := range entries {
		// The type comes with the entry: a symlink, more than half of
		// /etc, needs no stat.
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		var st unix.Stat_t
		name := e.Name()
		p := path + "/" + name
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				w.mask(p)
			}
			continue
		}
		switch {
		case hiddenFromOthers(st.Mode):
			w.mask(p)
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			subdirs = append(subdirs, p)
			ctimes = append(ctimes, st.Ctim.Nano())
		}
	}
	f.Close()
	if len(subdirs) > 0 {
		w.mu.Lock()
		w.dirs = append(w.dirs, subdirs...)
		w.ctimes = append(w.ctimes, ctimes...)
		w.mu.Unlock()
	}
	for _, d := range subdirs {
		select {
		case w.sem <- struct{}{}:
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.dir(d)
				<-w.sem
			}()
		default:
			w.dir(d)
		}
	}
}

// memoryMasks is the cache of a process given no cache directory.
var memoryMasks struct {
	sync.Mutex
	cache maskCache
}

// loadMaskCache reads the cache of dir (the process's own when dir is
// empty). A missing, corrupt or foreign file reads as empty: every tree is
// then walked. The file must be the invoker's and writable by no one else,
// or a user could hide nothing from a root-run jail by editing it.
func loadMaskCache(dir string) maskCache {
	empty := maskCache{Version: maskCacheVersion, Trees: map[string]treeScan{}}
	if dir == "" {
		memoryMasks.Lock()
		defer memoryMasks.Unlock()
		c := empty
		for t, s := range memoryMasks.cache.Trees {
			c.Trees[t] = s
		}
		return c
	}
	f, err := os.Open(filepath.Join(dir, maskCacheName))
	if err != nil {
		return empty
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return empty
	}
	// Read at once, in a buffer of its size: a megabyte or so, read on every run, that
	// growing a buffer to would allocate several times over.
	if st.Size <= 0 || st.Size > maxMaskCacheSize {
		return empty
	}
	data := make([]byte, st.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return empty
	}
	// The JSON document ends with a newline; the directories follow.
	doc, blobs, ok := bytes.Cut(data, []byte("\n"))
	var c maskCache
	if !ok || json.Unmarshal(doc, &c) != nil || c.Version != maskCacheVersion || c.Trees == nil {
		return empty
	}
	for _, t := range slices.Sorted(maps.Keys(c.Trees)) {
		s := c.Trees[t]
		if s.DirsSize < 0 || s.DirsSize > len(blobs) {
			return empty
		}
		s.Dirs, blobs = blobs[:s.DirsSize], blobs[s.DirsSize:]
		c.Trees[t] = s
	}
	if len(blobs) != 0 {
		return empty
	}
	for t, s := range c.Trees {
		if !validScan(t, s) {
			delete(c.Trees, t)
		}
	}
	return c
}

// validScan reports whether every masked path of s lies in tree.
func validScan(tree string, s treeScan) bool {
	if !filepath.IsAbs(tree) || filepath.Clean(tree) != tree {
		return false
	}
	for _, p := range s.Masked {
		if filepath.Clean(p) != p || !within(p, tree) {
			return false
		}
	}
	return true
}

// saveMaskCache writes c for the next runs, atomically. It is best
// effort: without a cache, runs walk every tree.
func saveMaskCache(dir string, c maskCache) {
	if dir == "" {
		memoryMasks.Lock()
		memoryMasks.cache = c
		memoryMasks.Unlock()
		return
	}
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	removeStaleTemps(dir)
	f, err := os.CreateTemp(dir, "."+maskCacheName+"-*")
	if err != nil {
		return
	}
	trees := slices.Sorted(maps.Keys(c.Trees))
	for _, t := range trees {
		s := c.Trees[t]
		s.DirsSize = len(s.Dirs)
		c.Trees[t] = s
	}
	err = json.NewEncoder(f).Encode(c)
	for _, t := range trees {
		if err == nil {
			_, err = f.Write(c.Trees[t].Dirs)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, maskCacheName))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// removeStaleTemps removes the temporary files of saveMaskCache in dir that a process which
// ended while it wrote one left behind (a check started early, by a command that then had no
// jail to run): those more than a minute old.
func removeStaleTemps(dir string) {
	temps, _ := filepath.Glob(filepath.Join(dir, "."+maskCacheName+"-*"))
	for _, t := range temps {
		if fi, err := os.Lstat(t); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(t)
		}
	}
}
