// Package layers reads and writes overlayfs layers in the format a
// userxattr overlay uses: a whiteout (a 0/0 character device) deletes, a
// directory marked user.overlay.opaque replaces the one below it. shadow
// stages a run's writes as such layers: merged into the session's staging
// layer, and kept as checkpoints (SPEC §12).
package layers

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/quote"
)

// OpaqueXattr marks a directory that replaces the one below it (userxattr
// overlays).
const OpaqueXattr = "user.overlay.opaque"

// Merge merges the layer at directory descriptor src into the layer at dst,
// as if src were mounted as an overlay's upper layer over dst: src's
// whiteouts delete, its opaque directories replace, the rest is copied
// (sparse files keep their holes). project is the lowest layer, under dst:
// a deletion of a path it holds is kept in dst as a whiteout.
func Merge(src, dst, project int) error {
	return merger{project: project}.dir(src, dst, "", false)
}

// MergeLinked is Merge for a src on dst's filesystem that stays as it is
// (a checkpoint): files and symlinks are hard links to src's rather than
// copies, so merging costs a link, not a write, per file. Nothing writes
// to a file of either layer in place: a change replaces the entry.
func MergeLinked(src, dst, project int) error {
	return merger{project: project, link: true}.dir(src, dst, "", false)
}

// merger is one Merge: the project below, and whether files are linked.
type merger struct {
	project int
	link    bool
}

// dir merges the directory src (of the run's layer) into dst (of the
// staging layer). rel is its path in the project ("" at the top); hidden is
// set when nothing of the project shows below dst (an opaque directory of
// the staging layer, or one made here), so that a deletion needs no
// whiteout.
func (m merger) dir(src, dst int, rel string, hidden bool) error {
	names, err := readDirNames(src)
	if err != nil {
		return fmt.Errorf("read the run's layer at %s: %w", visiblePath(rel), err)
	}
	for _, name := range names {
		p := joinRel(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("stat %s in the run's layer: %w", visiblePath(p), err)
		}
		if err := m.entry(src, dst, name, p, &st, hidden); err != nil {
			return err
		}
	}
	return nil
}

// entry merges one entry of the run's layer into the staging layer.
func (m merger) entry(src, dst int, name, p string, st *unix.Stat_t, hidden bool) error {
	switch kind := KindAt(src, name, st); {
	case kind == Other && st.Mode&unix.S_IFMT == unix.S_IFCHR:
		return fmt.Errorf("%s: a device node in the run's layer", visiblePath(p))
	case kind == Whiteout:
		// The path is deleted.
		if err := RemoveAt(dst, name); err != nil {
			return fmt.Errorf("delete %s from the staging layer: %w", visiblePath(p), err)
		}
		if hidden || !existsAt(m.project, p) {
			return nil
		}
		if err := unix.Mknodat(dst, name, unix.S_IFCHR, 0); err != nil {
			return fmt.Errorf("stage the deletion of %s: %w", visiblePath(p), err)
		}
		return nil
	case kind == Dir || kind == OpaqueDir:
		return m.subdir(src, dst, name, p, st, hidden)
	}
	link := m.link && (st.Mode&unix.S_IFMT == unix.S_IFREG || st.Mode&unix.S_IFMT == unix.S_IFLNK)
	if link {
		// Most of what a step writes is new to the staging layer: the link is tried first,
		// and what it would replace removed only when there is something.
		if err := unix.Linkat(src, name, dst, name, 0); err != unix.EEXIST {
			if err != nil {
				return fmt.Errorf("stage %s: %w", visiblePath(p), err)
			}
			return nil
		}
	}
	if err := RemoveAt(dst, name); err != nil {
		return fmt.Errorf("replace %s in the staging layer: %w", visiblePath(p), err)
	}
	var err error
	if link {
		err = unix.Linkat(src, name, dst, name, 0)
	} else {
		err = copyEntry(src, dst, name, st)
	}
	if err != nil {
		return fmt.Errorf("stage %s: %w", visiblePath(p), err)
	}
	return nil
}

// subdir merges directory name: an opaque one replaces what the staging
// layer has; another merges into it.
func (m merger) subdir(src, dst int, name, p string, st *unix.Stat_t, hidden bool) error {
	sfd, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s in the run's layer: %w", visiblePath(p), err)
	}
	defer unix.Close(sfd)
	opaque := isOpaque(sfd)
	var dst0 unix.Stat_t
	exists := unix.Fstatat(dst, name, &dst0, unix.AT_SYMLINK_NOFOLLOW) == nil
	if opaque || (exists && dst0.Mode&unix.S_IFMT != unix.S_IFDIR) {
		if err := RemoveAt(dst, name); err != nil {
			return fmt.Errorf("replace %s in the staging layer: %w", visiblePath(p), err)
		}
		exists = false
	}
	if !exists {
		if err := unix.Mkdirat(dst, name, 0o700); err != nil {
			return fmt.Errorf("create %s in the staging layer: %w", visiblePath(p), err)
		}
	}
	dfd, err := unix.Openat(dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s in the staging layer: %w", visiblePath(p), err)
	}
	defer unix.Close(dfd)
	if opaque {
		if err := unix.Fsetxattr(dfd, OpaqueXattr, []byte("y"), 0); err != nil {
			return fmt.Errorf("mark %s replaced: %w", visiblePath(p), err)
		}
	}
	if err := m.dir(sfd, dfd, p, hidden || opaque || isOpaque(dfd)); err != nil {
		return err
	}
	return setMeta(dfd, st)
}

// copyEntry copies a regular file (its holes kept), symlink, FIFO or socket
// of the run's layer into the staging layer.
func copyEntry(src, dst int, name string, st *unix.Stat_t) error {
	perm := uint32(st.Mode & 0o7777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return copyFileAt(src, dst, name, st)
	case unix.S_IFLNK:
		target, err := readlinkAt(src, name)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, dst, name); err != nil {
			return err
		}
		ts := []unix.Timespec{st.Atim, st.Mtim}
		return unix.UtimesNanoAt(dst, name, ts, unix.AT_SYMLINK_NOFOLLOW)
	case unix.S_IFIFO, unix.S_IFSOCK:
		return unix.Mknodat(dst, name, st.Mode&unix.S_IFMT|perm, 0)
	}
	return fmt.Errorf("unknown file type %#o", st.Mode&unix.S_IFMT)
}

// copyFileAt copies regular file name, data segment by data segment, so
// that a sparse file stays sparse: a 1 TiB file of holes costs nothing.
func copyFileAt(src, dst int, name string, st *unix.Stat_t) error {
	_, err := copyFileSum(src, dst, name, st, false)
	return err
}

// copyBufs are the buffers of file copies: a checkpoint of many small files takes one, not one
// per file.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

const copyBufSize = 256 << 10

// copyFileSum is copyFileAt; with sum set it also returns the checksum of what it wrote, as
// fileSum would read it back ("": not known, fileSum must read it). A file that fits the buffer
// and has no holes is read and written whole, a call each, without looking for holes.
func copyFileSum(src, dst int, name string, st *unix.Stat_t, sum bool) (string, error) {
	in, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(in)
	out, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", err
	}
	defer unix.Close(out)
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	digest := ""
	if st.Size <= copyBufSize && st.Blocks*512 >= st.Size {
		if digest, err = copyDense(in, out, st.Size, *bp, sum); err != nil {
			return "", err
		}
	} else if err := copySparse(in, out, st.Size, *bp); err != nil {
		return "", err
	}
	return digest, setMeta(out, st)
}

// copyDense copies a file of size bytes, at most len(buf), that has no holes, and returns the
// checksum of what it wrote when sum is set and the file held size bytes.
func copyDense(in, out int, size int64, buf []byte, sum bool) (string, error) {
	n, err := readFull(in, buf[:size])
	if err != nil {
		return "", err
	}
	for done := 0; done < n; {
		m, err := unix.Write(out, buf[done:n])
		if err != nil {
			return "", err
		}
		done += m
	}
	if int64(n) != size {
		// It changed while copied: it gets its size, and fileSum reads what it holds.
		return "", unix.Ftruncate(out, size)
	}
	if !sum {
		return "", nil
	}
	return denseSum(buf[:n]), nil
}

// copySparse copies size bytes of in to out, skipping holes, through buf.
func copySparse(in, out int, size int64, buf []byte) error {
	var off int64
	for off < size {
		data, err := unix.Seek(in, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(in, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		for pos := data; pos < hole; {
			n, err := unix.Pread(in, buf[:min(int64(len(buf)), hole-pos)], pos)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if _, err := unix.Pwrite(out, buf[:n], pos); err != nil {
				return err
			}
			pos += int64(n)
		}
		off = hole
	}
	return unix.Ftruncate(out, size)
}

// setMeta gives the open file or directory fd the mode and times of st.
func setMeta(fd int, st *unix.Stat_t) error {
	if err := unix.Fchmod(fd, uint32(st.Mode&0o7777)); err != nil {
		return err
	}
	return unix.UtimesNanoAt(fd, "", []unix.Timespec{st.Atim, st.Mtim}, unix.AT_EMPTY_PATH)
}

// isOpaque reports whether directory fd carries the overlay's opaque mark.
func isOpaque(fd int) bool { return KindFD(fd, nil) == OpaqueDir }

// existsAt reports whether path p exists below dir fd, without following a
// symlink at its end.
func existsAt(dir int, p string) bool {
	// A path the kernel would refuse as too long in one lookup is looked up a part of under
	// PATH_MAX at a time: a deletion of a file that deep is kept like any other.
	for len(p) >= unix.PathMax {
		i := strings.LastIndexByte(p[:unix.PathMax-1], '/')
		if i <= 0 {
			return false
		}
		next, err := unix.Openat(dir, p[:i], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		defer unix.Close(next)
		dir, p = next, p[i+1:]
	}
	var st unix.Stat_t
	return unix.Fstatat(dir, p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// RemoveAt removes name (a whole tree, if a directory) from directory dir;
// a missing name is no error.
func RemoveAt(dir int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dir, name, 0)
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readDirNames(fd)
	if err == nil {
		for _, n := range names {
			if err = RemoveAt(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// readDirNames lists the entries of directory fd, without "." and "..".
func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}

// readlinkAt reads the target of symlink name in dir.
func readlinkAt(dir int, name string) (string, error) {
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

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// visiblePath quotes p for an error message, so that a name with control
// characters cannot write to the terminal.
func visiblePath(p string) string { return quote.Path(p) }

// DiskUsage is the space the files below directory fd take on disk; what
// cannot be read counts nothing.
func DiskUsage(fd int) int64 {
	names, err := readDirNames(fd)
	if err != nil {
		return 0
	}
	var n int64
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		n += st.Blocks * 512
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				n += DiskUsage(sub)
				unix.Close(sub)
			}
		}
	}
	return n
}
