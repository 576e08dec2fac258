package projectfs

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ApplyWorkers bounds the goroutines an apply reads, writes and renames files with. On a disk where
// creating an inode is the slow part, the kernel's per-file work proceeds in parallel across
// directories; more workers than this only contend for the same locks.
const ApplyWorkers = 4

// DirGroup is the indexes of the paths of one parent directory ("" for the root), in order.
type DirGroup struct {
	dir string
	idx []int
}

// GroupByDir groups the indexes of paths (those want accepts; all when want is nil) by parent
// directory, in order of first appearance.
func GroupByDir(paths []string, want func(i int) bool) []DirGroup {
	var groups []DirGroup
	at := map[string]int{}
	for i, p := range paths {
		if want != nil && !want(i) {
			continue
		}
		d := FilepathDir(p)
		g, ok := at[d]
		if !ok {
			g = len(groups)
			at[d] = g
			groups = append(groups, DirGroup{dir: d})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	return groups
}

// InDirs calls fn for every index of every group on up to ApplyWorkers goroutines, each taking a
// whole directory at a time: the directory is opened once beneath the root, never through a
// symlink, and its descriptor passed to fn (or -1 and the reason it could not be opened, as
// dirErr). worker numbers the goroutine (0 to ApplyWorkers-1). After the first error no further
// path is started; that error is returned.
func (r *Root) InDirs(groups []DirGroup, fn func(worker, dir int, dirErr error, i int) error) error {
	var (
		mu     sync.Mutex
		first  error
		next   int
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	take := func() (DirGroup, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next >= len(groups) {
			return DirGroup{}, false
		}
		next++
		return groups[next-1], true
	}
	for w := range min(ApplyWorkers, len(groups)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g, ok := take()
				if !ok {
					return
				}
				dir, dirErr := r.FD, error(nil)
				if g.dir != "" {
					if err := validRel(g.dir); err != nil {
						dir, dirErr = -1, err
					} else if dir, dirErr = Openat(r.FD, g.dir, unix.O_DIRECTORY|unix.O_RDONLY, 0); dirErr != nil {
						dir = -1
					}
				}
				for _, i := range g.idx {
					if failed.Load() {
						break
					}
					if err := fn(w, dir, dirErr, i); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						failed.Store(true)
						break
					}
				}
				closeIfNot(dir, r.FD)
			}
		}()
	}
	wg.Wait()
	return first
}
