package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Every access to the project during apply and rollback goes through a directory descriptor of the
// project root and openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so that a symlink planted by the
// agent or swapped in by the host cannot redirect a read or a write outside the project. Kernels
// without openat2 get a walk that opens one component at a time with O_NOFOLLOW.

// forceWalk makes the code take the O_NOFOLLOW walk even where openat2 exists (tests set it).
var forceWalk = false

// projectRoot is an open directory descriptor of the project root.
type projectRoot struct {
	path string
	fd   int
	dirs map[string]int // cached descriptors of directories beneath the root
}

func openRoot(path string) (*projectRoot, error) {
	fd, err := unix.Open(path, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", path, err)
	}
	return &projectRoot{path: path, fd: fd}, nil
}

// clone returns another root on the same directory (a duplicate descriptor, not a new lookup of
// the path) with a cache of its own, for a parallel worker.
func (r *projectRoot) clone() (*projectRoot, error) {
	fd, err := unix.FcntlInt(uintptr(r.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", r.path, err)
	}
	return &projectRoot{path: r.path, fd: fd}, nil
}

func (r *projectRoot) Close() error {
	r.invalidate()
	return unix.Close(r.fd)
}

// validRel rejects paths that are not clean relative slash paths (no "..", ".", empty or absolute
// components); change-set paths always are, so anything else is bad input.
func validRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return fmt.Errorf("bad path %q", rel)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("bad path %q", rel)
		}
	}
	return nil
}

// openat opens rel beneath dirfd without following any symlink on the way or at the end. A rel
// of PATH_MAX bytes or more, which the kernel refuses in one lookup (ENAMETOOLONG), is opened in
// steps (openInSteps): the depth of a path is never a limit.
func openat(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if len(rel) >= unix.PathMax {
		return openInSteps(dirfd, rel, flags, mode)
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	// The directory itself: no component to walk (the walk below refuses "." as a way out).
	if rel == "." {
		return unix.Openat(dirfd, ".", flags, mode)
	}
	if !forceWalk {
		how := &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for {
			fd, err := unix.Openat2(dirfd, rel, how)
			if err == unix.EINTR || err == unix.EAGAIN {
				continue
			}
			if err != unix.ENOSYS {
				return fd, err
			}
			break
		}
	}
	dir, name, err := walkParent(dirfd, rel)
	if err != nil {
		return -1, err
	}
	defer closeIfNot(dir, dirfd)
	return unix.Openat(dir, name, flags, mode)
}

// openInSteps is openat for a rel too long for one lookup: its directories are opened a part of
// under PATH_MAX bytes at a time, each part beneath the directory the one before it opened.
func openInSteps(dirfd int, rel string, flags int, mode uint32) (int, error) {
	cur := dirfd
	for len(rel) >= unix.PathMax {
		i := strings.LastIndexByte(rel[:unix.PathMax-1], '/')
		if i <= 0 {
			closeIfNot(cur, dirfd)
			return -1, unix.ENAMETOOLONG // a component longer than any name can be
		}
		next, err := openat(cur, rel[:i], unix.O_DIRECTORY|unix.O_RDONLY, 0)
		closeIfNot(cur, dirfd)
		if err != nil {
			return -1, err
		}
		cur, rel = next, rel[i+1:]
	}
	defer closeIfNot(cur, dirfd)
	return openat(cur, rel, flags, mode)
}

// walkParent opens every directory of rel but the last component, one at a time with O_NOFOLLOW,
// and returns the parent's descriptor (dirfd itself when rel has one component) and the last name.
func walkParent(dirfd int, rel string) (int, string, error) {
	parts := strings.Split(rel, "/")
	cur := dirfd
	for _, p := range parts[:len(parts)-1] {
		if p == ".." || p == "." || p == "" {
			closeIfNot(cur, dirfd)
			return -1, "", unix.EXDEV
		}
		next, err := unix.Openat(cur, p, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		closeIfNot(cur, dirfd)
		if err != nil {
			return -1, "", err
		}
		cur = next
	}
	last := parts[len(parts)-1]
	if last == ".." || last == "." || last == "" {
		closeIfNot(cur, dirfd)
		return -1, "", unix.EXDEV
	}
	return cur, last, nil
}

func closeIfNot(fd, keep int) {
	if fd != keep && fd >= 0 {
		unix.Close(fd)
	}
}

// openParent returns a descriptor of rel's parent directory beneath the root (creating missing
// directories with mode 0755 when create is set) and rel's last component. The descriptor is
// borrowed from the root's cache: callers must not close it.
func (r *projectRoot) openParent(rel string, create bool) (int, string, error) {
	if err := validRel(rel); err != nil {
		return -1, "", err
	}
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return r.fd, rel, nil
	}
	dir, name := rel[:i], rel[i+1:]
	if fd, ok := r.dirs[dir]; ok {
		return fd, name, nil
	}
	fd, err := openat(r.fd, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil && create && errors.Is(err, unix.ENOENT) {
		if err := r.mkdirAll(dir); err != nil {
			return -1, "", err
		}
		fd, err = openat(r.fd, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	}
	if err != nil {
		return -1, "", err
	}
	if len(r.dirs) >= maxCachedDirs {
		r.invalidate()
	}
	if r.dirs == nil {
		r.dirs = map[string]int{}
	}
	r.dirs[dir] = fd
	return fd, name, nil
}

// maxCachedDirs bounds the directory descriptors a root keeps open.
const maxCachedDirs = 256

// invalidate forgets every cached directory descriptor, so that paths are resolved afresh (after
// a directory was removed, and between the steps of an apply).
func (r *projectRoot) invalidate() {
	for _, fd := range r.dirs {
		unix.Close(fd)
	}
	r.dirs = nil
}

// mkdirAll creates dir beneath the root one component at a time; an existing symlink component
// fails (ELOOP/ENOTDIR) rather than being followed.
func (r *projectRoot) mkdirAll(dir string) error {
	parts := strings.Split(dir, "/")
	cur, err := unix.Dup(r.fd)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	for _, p := range parts {
		err := unix.Mkdirat(cur, p, 0o755)
		if err != nil && err != unix.EEXIST {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
		next, err := unix.Openat(cur, p, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("create directory %s: %s: %w", visible(dir), visible(p), err)
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// openDir opens the directory rel beneath the root ("" for the root itself) for reading its
// entries, never through a symlink, however long rel is.
func (r *projectRoot) openDir(rel string) (*os.File, error) {
	var fd int
	var err error
	if rel == "" {
		fd, err = unix.Openat(r.fd, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	} else if err = validRel(rel); err == nil {
		fd, err = openat(r.fd, rel, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// readableDir is the package's readableDir for the directory rel beneath the root.
func (r *projectRoot) readableDir(rel string) error {
	if rel == "" {
		return readableDir(r.path)
	}
	dir, name, err := r.openParent(rel, false)
	if err != nil {
		return err
	}
	return readableDirAt(dir, name)
}

// hostEntry is what is at a project path right now.
type hostEntry struct {
	exists bool
	stat   fileStat
	dev    uint64
	target string // symlink target
}

// lstat describes rel beneath the root without following a final symlink.
func (r *projectRoot) lstat(rel string) (hostEntry, error) {
	dir, name, err := r.openParent(rel, false)
	st, exists, err := statAt(dir, err, name)
	if err != nil {
		return hostEntry{}, fmt.Errorf("inspect %s: %w", visible(rel), err)
	}
	if !exists {
		return hostEntry{}, nil
	}
	h := hostEntry{exists: true, stat: statFromUnix(&st), dev: st.Dev}
	if h.stat.Type == 'l' {
		h.target, err = readlinkat(dir, name)
		if err != nil {
			return hostEntry{}, fmt.Errorf("inspect %s: %w", visible(rel), err)
		}
	}
	return h, nil
}

// relJoin is the project-relative path of name in the directory rel ("" for the root).
func relJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func statFromUnix(st *unix.Stat_t) fileStat {
	fs := fileStat{Mode: st.Mode & 0o7777, Size: st.Size, Mtime: st.Mtim.Nano(), Ino: st.Ino}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		fs.Type = 'f'
	case unix.S_IFLNK:
		fs.Type = 'l'
	case unix.S_IFDIR:
		fs.Type = 'd'
	default:
		fs.Type = 'o'
	}
	return fs
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// openRead opens a regular file beneath the root for reading (a symlink or special file fails,
// and is never opened: opening a device or FIFO can have effects of its own).
func (r *projectRoot) openRead(rel string) (*os.File, error) {
	fd, err := r.openReadFD(rel)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), r.path+"/"+rel), nil
}

// openReadFD is openRead returning the bare descriptor, which the caller closes: reading thousands
// of small files, an *os.File for each costs two more system calls.
func (r *projectRoot) openReadFD(rel string) (int, error) {
	dir, name, err := r.openParent(rel, false)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", visible(rel), err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, fmt.Errorf("open %s: %w", visible(rel), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, fmt.Errorf("open %s: not a regular file", visible(rel))
	}
	fd, _, err := openRegularAt(dir, name)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", visible(rel), err)
	}
	return fd, nil
}

// rmdir removes an empty directory beneath the root.
func (r *projectRoot) rmdir(rel string) error {
	dir, name, err := r.openParent(rel, false)
	if err != nil {
		return err
	}
	err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
	r.invalidate()
	return err
}

// mkdir makes one directory beneath the root with exactly mode (an existing directory is fine).
func (r *projectRoot) mkdir(rel string, mode uint32) error {
	dir, name, err := r.openParent(rel, false)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(dir, name, 0o700); err != nil {
		if err == unix.EEXIST {
			return nil
		}
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, mode)
}

// applyWorkers bounds the goroutines an apply reads, writes and renames files with. On a disk where
// creating an inode is the slow part, the kernel's per-file work proceeds in parallel across
// directories; more workers than this only contend for the same locks.
const applyWorkers = 4

// dirGroup is the indexes of the paths of one parent directory ("" for the root), in order.
type dirGroup struct {
	dir string
	idx []int
}

// groupByDir groups the indexes of paths (those want accepts; all when want is nil) by parent
// directory, in order of first appearance.
func groupByDir(paths []string, want func(i int) bool) []dirGroup {
	var groups []dirGroup
	at := map[string]int{}
	for i, p := range paths {
		if want != nil && !want(i) {
			continue
		}
		d := filepathDir(p)
		g, ok := at[d]
		if !ok {
			g = len(groups)
			at[d] = g
			groups = append(groups, dirGroup{dir: d})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	return groups
}

// inDirs calls fn for every index of every group on up to applyWorkers goroutines, each taking a
// whole directory at a time: the directory is opened once beneath the root, never through a
// symlink, and its descriptor passed to fn (or -1 and the reason it could not be opened, as
// dirErr). worker numbers the goroutine (0 to applyWorkers-1). After the first error no further
// path is started; that error is returned.
func (r *projectRoot) inDirs(groups []dirGroup, fn func(worker, dir int, dirErr error, i int) error) error {
	var (
		mu     sync.Mutex
		first  error
		next   int
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	take := func() (dirGroup, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next >= len(groups) {
			return dirGroup{}, false
		}
		next++
		return groups[next-1], true
	}
	for w := range min(applyWorkers, len(groups)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g, ok := take()
				if !ok {
					return
				}
				dir, dirErr := r.fd, error(nil)
				if g.dir != "" {
					if err := validRel(g.dir); err != nil {
						dir, dirErr = -1, err
					} else if dir, dirErr = openat(r.fd, g.dir, unix.O_DIRECTORY|unix.O_RDONLY, 0); dirErr != nil {
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
				closeIfNot(dir, r.fd)
			}
		}()
	}
	wg.Wait()
	return first
}

// errNotRegular is openRegularAt's error for what is not a regular file.
var errNotRegular = errors.New("not a regular file")

// openRegularAt opens name in dir for reading when it is a regular file, and describes it by its
// descriptor. A symlink fails (ELOOP); a special file is closed unread, and fails with
// errNotRegular and its description (O_NONBLOCK: opening a FIFO cannot hang). A file whose mode
// denies its owner reading it is read all the same when shadow runs as that owner (openOwned).
func openRegularAt(dir int, name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.EACCES {
		fd, err = openOwned(dir, name)
	}
	if err != nil {
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, st, errNotRegular
	}
	return fd, st, nil
}

// statAt describes name in the project directory dir without following a symlink; dirErr is why
// dir could not be opened. exists is false when nothing is there: name is missing, or its parent
// is (ENOENT), or is a file or a symlink (ENOTDIR, ELOOP), so that nothing exists beneath real
// directories of the project.
func statAt(dir int, dirErr error, name string) (st unix.Stat_t, exists bool, err error) {
	if dirErr != nil {
		if errors.Is(dirErr, unix.ENOENT) || errors.Is(dirErr, unix.ENOTDIR) || errors.Is(dirErr, unix.ELOOP) {
			return st, false, nil
		}
		return st, false, dirErr
	}
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return st, false, nil
		}
		return st, false, err
	}
	return st, true, nil
}

// fdIO reads and writes a raw descriptor: many small files are copied without the cost of an
// *os.File for each (a fcntl and a poller registration).
type fdIO int

func (f fdIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(int(f), p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f fdIO) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Write(int(f), p[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// procPath names the entry name of the open directory dir by a path of a few bytes, however
// deep dir is: for the calls that take only a path (the xattr calls), never a path joined past
// PATH_MAX. /proc/self/fd/N is the directory itself; name is looked up in it. With dir
// AT_FDCWD, name is the path.
func procPath(dir int, name string) string {
	if dir == unix.AT_FDCWD {
		return name
	}
	return "/proc/self/fd/" + strconv.Itoa(dir) + "/" + name
}

// walkAt calls fn for every entry below the directory dir, whose path is rel ("" for the root
// of the walk), parents before what they hold, without following a symlink: each directory is
// opened beneath the nearest one above it that the walk holds open, so that no path is built
// and depth is no limit. The walk holds at most walkHeld descriptors; a directory deeper than
// those is opened from the deepest held, a part of under PATH_MAX at a time (openat). fn gets
// the entry's path, the descriptor of its directory and its name there; returning fs.SkipDir
// for a directory leaves out what it holds.
func walkAt(dir int, rel string, fn func(rel string, dir int, name string, st *unix.Stat_t) error) error {
	type held struct {
		rel string
		fd  int
	}
	open := []held{{rel, dir}} // the directories along the current path; the first is the caller's
	defer func() {
		for _, h := range open[1:] {
			unix.Close(h.fd)
		}
	}()
	todo := []string{rel}
	for len(todo) > 0 {
		d := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for len(open) > 1 && !pathWithin(d, open[len(open)-1].rel) {
			unix.Close(open[len(open)-1].fd)
			open = open[:len(open)-1]
		}
		top := open[len(open)-1]
		fd, own := top.fd, false
		if d != top.rel {
			sub := d
			if top.rel != "" {
				sub = d[len(top.rel)+1:]
			}
			var err error
			if fd, err = openat(top.fd, sub, unix.O_DIRECTORY|unix.O_RDONLY, 0); err != nil {
				return err
			}
			if len(open) < walkHeld {
				open = append(open, held{d, fd})
			} else {
				own = true // closed once listed
			}
		}
		subdirs, err := walkDir(fd, d, fn)
		if own {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
		for k := len(subdirs) - 1; k >= 0; k-- {
			todo = append(todo, subdirs[k]) // the first is taken first
		}
	}
	return nil
}

// walkDir calls walkAt's fn for every entry of the open directory fd (d below the walk's root),
// and returns the paths of the subdirectories to walk.
func walkDir(fd int, d string, fn func(rel string, dir int, name string, st *unix.Stat_t) error) ([]string, error) {
	names, err := readNames(fd)
	if err != nil {
		return nil, err
	}
	var subdirs []string
	for _, name := range names {
		child := relJoin(d, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return nil, err
		}
		err := fn(child, fd, name, &st)
		if errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			subdirs = append(subdirs, child)
		}
	}
	return subdirs, nil
}

// walkHeld bounds the directory descriptors a walkAt holds open.
const walkHeld = 64

// pathWithin reports whether the path p is dir or below it ("" holds every path).
func pathWithin(p, dir string) bool {
	return dir == "" || p == dir || len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// readNames lists the names in the open directory dir (its offset is not moved: a duplicate
// descriptor reads them).
func readNames(dir int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}
