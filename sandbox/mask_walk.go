package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The walk of a system tree for what others may not read.

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
