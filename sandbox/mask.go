package sandbox

import (
	"slices"
	"sync"
	"time"

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
