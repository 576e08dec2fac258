// Package projectfs reads and writes a project tree (the project, a staged layer, a checkpoint)
// beneath one open directory descriptor, never following a symlink out of it, and names file
// contents the way the session records them (ContentSum, sparse files by their data segments).
package projectfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"golang.org/x/sys/unix"
)

// Every access to the project during apply and rollback goes through a directory descriptor of the
// project root and openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so that a symlink planted by the
// agent or swapped in by the host cannot redirect a read or a write outside the project. Kernels
// without openat2 get a walk that opens one component at a time with O_NOFOLLOW.

// ForceWalk makes the code take the O_NOFOLLOW walk even where openat2 exists (tests set it).
var ForceWalk = false

// Root is an open directory descriptor of the project root.
type Root struct {
	path string
	FD   int
	dirs map[string]int // cached descriptors of directories beneath the root
}

func OpenRoot(path string) (*Root, error) {
	fd, err := unix.Open(path, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", path, err)
	}
	return &Root{path: path, FD: fd}, nil
}

// Clone returns another root on the same directory (a duplicate descriptor, not a new lookup of
// the path) with a cache of its own, for a parallel worker.
func (r *Root) Clone() (*Root, error) {
	fd, err := unix.FcntlInt(uintptr(r.FD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", r.path, err)
	}
	return &Root{path: r.path, FD: fd}, nil
}

func (r *Root) Close() error {
	r.Invalidate()
	return unix.Close(r.FD)
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

// Openat opens rel beneath dirfd without following any symlink on the way or at the end. A rel
// of PATH_MAX bytes or more, which the kernel refuses in one lookup (ENAMETOOLONG), is opened in
// steps (openInSteps): the depth of a path is never a limit.
func Openat(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if len(rel) >= unix.PathMax {
		return openInSteps(dirfd, rel, flags, mode)
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	// The directory itself: no component to walk (the walk below refuses "." as a way out).
	if rel == "." {
		return unix.Openat(dirfd, ".", flags, mode)
	}
	if !ForceWalk {
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
		next, err := Openat(cur, rel[:i], unix.O_DIRECTORY|unix.O_RDONLY, 0)
		closeIfNot(cur, dirfd)
		if err != nil {
			return -1, err
		}
		cur, rel = next, rel[i+1:]
	}
	defer closeIfNot(cur, dirfd)
	return Openat(cur, rel, flags, mode)
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

// OpenParent returns a descriptor of rel's parent directory beneath the root (creating missing
// directories with mode 0755 when create is set) and rel's last component. The descriptor is
// borrowed from the root's cache: callers must not close it.
func (r *Root) OpenParent(rel string, create bool) (int, string, error) {
	if err := validRel(rel); err != nil {
		return -1, "", err
	}
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return r.FD, rel, nil
	}
	dir, name := rel[:i], rel[i+1:]
	if fd, ok := r.dirs[dir]; ok {
		return fd, name, nil
	}
	fd, err := Openat(r.FD, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil && create && errors.Is(err, unix.ENOENT) {
		if err := r.MkdirAll(dir); err != nil {
			return -1, "", err
		}
		fd, err = Openat(r.FD, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	}
	if err != nil {
		return -1, "", err
	}
	if len(r.dirs) >= maxCachedDirs {
		r.Invalidate()
	}
	if r.dirs == nil {
		r.dirs = map[string]int{}
	}
	r.dirs[dir] = fd
	return fd, name, nil
}

// maxCachedDirs bounds the directory descriptors a root keeps open.
const maxCachedDirs = 256

// Invalidate forgets every cached directory descriptor, so that paths are resolved afresh (after
// a directory was removed, and between the steps of an apply).
func (r *Root) Invalidate() {
	for _, fd := range r.dirs {
		unix.Close(fd)
	}
	r.dirs = nil
}

// MkdirAll creates dir beneath the root one component at a time; an existing symlink component
// fails (ELOOP/ENOTDIR) rather than being followed.
func (r *Root) MkdirAll(dir string) error {
	parts := strings.Split(dir, "/")
	cur, err := unix.Dup(r.FD)
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
			return fmt.Errorf("create directory %s: %s: %w", quote.Path(dir), quote.Path(p), err)
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// OpenDir opens the directory rel beneath the root ("" for the root itself) for reading its
// entries, never through a symlink, however long rel is.
func (r *Root) OpenDir(rel string) (*os.File, error) {
	var fd int
	var err error
	if rel == "" {
		fd, err = unix.Openat(r.FD, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	} else if err = validRel(rel); err == nil {
		fd, err = Openat(r.FD, rel, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// ReadableDir is the package's ReadableDir for the directory rel beneath the root.
func (r *Root) ReadableDir(rel string) error {
	if rel == "" {
		return ReadableDir(r.path)
	}
	dir, name, err := r.OpenParent(rel, false)
	if err != nil {
		return err
	}
	return readableDirAt(dir, name)
}

// HostEntry is what is at a project path right now.
type HostEntry struct {
	Exists bool
	Stat   FileStat
	Dev    uint64
	Target string // symlink target
}

// Lstat describes rel beneath the root without following a final symlink.
func (r *Root) Lstat(rel string) (HostEntry, error) {
	dir, name, err := r.OpenParent(rel, false)
	st, exists, err := StatAt(dir, err, name)
	if err != nil {
		return HostEntry{}, fmt.Errorf("inspect %s: %w", quote.Path(rel), err)
	}
	if !exists {
		return HostEntry{}, nil
	}
	h := HostEntry{Exists: true, Stat: StatFromUnix(&st), Dev: st.Dev}
	if h.Stat.Type == 'l' {
		h.Target, err = Readlinkat(dir, name)
		if err != nil {
			return HostEntry{}, fmt.Errorf("inspect %s: %w", quote.Path(rel), err)
		}
	}
	return h, nil
}

// RelJoin is the project-relative path of name in the directory rel ("" for the root).
func RelJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func StatFromUnix(st *unix.Stat_t) FileStat {
	fs := FileStat{Mode: st.Mode & 0o7777, Size: st.Size, Mtime: st.Mtim.Nano(), Ino: st.Ino}
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

func Readlinkat(dir int, name string) (string, error) {
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

// OpenRead opens a regular file beneath the root for reading (a symlink or special file fails,
// and is never opened: opening a device or FIFO can have effects of its own).
func (r *Root) OpenRead(rel string) (*os.File, error) {
	fd, err := r.OpenReadFD(rel)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), r.path+"/"+rel), nil
}

// OpenReadFD is OpenRead returning the bare descriptor, which the caller closes: reading thousands
// of small files, an *os.File for each costs two more system calls.
func (r *Root) OpenReadFD(rel string) (int, error) {
	dir, name, err := r.OpenParent(rel, false)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", quote.Path(rel), err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, fmt.Errorf("open %s: %w", quote.Path(rel), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, fmt.Errorf("open %s: not a regular file", quote.Path(rel))
	}
	fd, _, err := OpenRegularAt(dir, name)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", quote.Path(rel), err)
	}
	return fd, nil
}

// Rmdir removes an empty directory beneath the root.
func (r *Root) Rmdir(rel string) error {
	dir, name, err := r.OpenParent(rel, false)
	if err != nil {
		return err
	}
	err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
	r.Invalidate()
	return err
}

// Mkdir makes one directory beneath the root with exactly mode (an existing directory is fine).
func (r *Root) Mkdir(rel string, mode uint32) error {
	dir, name, err := r.OpenParent(rel, false)
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

// ErrNotRegular is OpenRegularAt's error for what is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegularAt opens name in dir for reading when it is a regular file, and describes it by its
// descriptor. A symlink fails (ELOOP); a special file is closed unread, and fails with
// ErrNotRegular and its description (O_NONBLOCK: opening a FIFO cannot hang). A file whose mode
// denies its owner reading it is read all the same when shadow runs as that owner (openOwned).
func OpenRegularAt(dir int, name string) (int, unix.Stat_t, error) {
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
		return -1, st, ErrNotRegular
	}
	return fd, st, nil
}

// StatAt describes name in the project directory dir without following a symlink; dirErr is why
// dir could not be opened. exists is false when nothing is there: name is missing, or its parent
// is (ENOENT), or is a file or a symlink (ENOTDIR, ELOOP), so that nothing exists beneath real
// directories of the project.
func StatAt(dir int, dirErr error, name string) (st unix.Stat_t, exists bool, err error) {
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

// FdIO reads and writes a raw descriptor: many small files are copied without the cost of an
// *os.File for each (a fcntl and a poller registration).
type FdIO int

func (f FdIO) Read(p []byte) (int, error) {
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

func (f FdIO) Write(p []byte) (int, error) {
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

// WalkAt calls fn for every entry below the directory dir, whose path is rel ("" for the root
// of the walk), parents before what they hold, without following a symlink: each directory is
// opened beneath the nearest one above it that the walk holds open, so that no path is built
// and depth is no limit. The walk holds at most WalkHeld descriptors; a directory deeper than
// those is opened from the deepest held, a part of under PATH_MAX at a time (openat). fn gets
// the entry's path, the descriptor of its directory and its name there; returning fs.SkipDir
// for a directory leaves out what it holds.
func WalkAt(dir int, rel string, fn func(rel string, dir int, name string, st *unix.Stat_t) error) error {
	type held struct {
		rel string
		FD  int
	}
	open := []held{{rel, dir}} // the directories along the current path; the first is the caller's
	defer func() {
		for _, h := range open[1:] {
			unix.Close(h.FD)
		}
	}()
	todo := []string{rel}
	for len(todo) > 0 {
		d := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for len(open) > 1 && !pathWithin(d, open[len(open)-1].rel) {
			unix.Close(open[len(open)-1].FD)
			open = open[:len(open)-1]
		}
		top := open[len(open)-1]
		fd, own := top.FD, false
		if d != top.rel {
			sub := d
			if top.rel != "" {
				sub = d[len(top.rel)+1:]
			}
			var err error
			if fd, err = Openat(top.FD, sub, unix.O_DIRECTORY|unix.O_RDONLY, 0); err != nil {
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

// walkDir calls WalkAt's fn for every entry of the open directory fd (d below the walk's root),
// and returns the paths of the subdirectories to walk.
func walkDir(fd int, d string, fn func(rel string, dir int, name string, st *unix.Stat_t) error) ([]string, error) {
	names, err := readNames(fd)
	if err != nil {
		return nil, err
	}
	var subdirs []string
	for _, name := range names {
		child := RelJoin(d, name)
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

// WalkHeld bounds the directory descriptors a WalkAt holds open.
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

// FileStat is what the manifest records of a project file: enough to notice that the host changed
// it, without reading its content.
type FileStat struct {
	Type  byte // 'f' regular, 'l' symlink, 'd' directory, 'o' other
	Mode  uint32
	Size  int64
	Mtime int64 // nanoseconds
	Ino   uint64
}

func statOf(fi fs.FileInfo) FileStat {
	st := FileStat{Mode: uint32(fi.Mode().Perm()), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
		st.Mode = sys.Mode & 0o7777
	}
	switch {
	case fi.Mode().IsRegular():
		st.Type = 'f'
	case fi.Mode()&fs.ModeSymlink != 0:
		st.Type = 'l'
	case fi.IsDir():
		st.Type = 'd'
	default:
		st.Type = 'o'
	}
	return st
}

func FilepathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
