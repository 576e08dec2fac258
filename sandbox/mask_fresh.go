package sandbox

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Whether a cached scan still holds: the package databases' mtimes and the
// ctime of every directory the walk read.

// packageDatabases change when a package is installed, upgraded or
// removed, which is when the package-managed trees change; a change
// makes a cached scan stale.
var packageDatabases = []string{
	"/var/lib/dpkg/status", "/var/lib/dpkg/statoverride", "/var/lib/rpm", "/var/lib/rpm/rpmdb.sqlite", "/usr/lib/sysimage/rpm",
	"/usr/lib/sysimage/rpm/rpmdb.sqlite", "/var/lib/pacman/local", "/lib/apk/db/installed",
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
