package layers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A checkpoint writes what changed in a run's upper layer since the last
// one as a layer of its own, over the state at the last checkpoint:
// merged onto that state, in order, the checkpoints give the upper layer
// as it was when the last one was taken. Tracker remembers what the upper
// layer held at the last checkpoint; a checkpoint costs a walk of the run's
// upper layer (in memory) and the copy of what changed.

// entryState is what the tracker compares to tell that an entry changed.
type entryState struct {
	ino          uint64
	ctime, mtime int64 // nanoseconds
	size         int64
	mode         uint32
	rdev         uint64
	kind         Kind
	// racy is set when the entry changed within a clock tick of the
	// checkpoint: a later write in the same tick would leave its times
	// alone, so the next checkpoint copies it again.
	racy bool
}

func (e entryState) isDir() bool      { return e.kind == Dir || e.kind == OpaqueDir }
func (e entryState) isWhiteout() bool { return e.kind == Whiteout }

// Tracker holds the state of an upper layer at its last checkpoint.
type Tracker struct {
	seen map[string]entryState
	// prev is the directory of the last delta written (-1: none): a racy
	// entry whose stat did not move is compared with its copy there.
	prev int
	// sums are the checksums of the files the last delta copied, by path, taken as they were
	// written (see LayerSums).
	sums map[string]string
}

// NewTracker returns a tracker of an upper layer that was empty at the last
// checkpoint (a run's new layer).
func NewTracker() *Tracker { return &Tracker{seen: map[string]entryState{}, prev: -1} }

// Wrote tells the tracker where the delta it just wrote went (an open
// directory the caller keeps until the next WriteDelta): the next one checks
// what was racy in it by content rather than copying it again.
func (t *Tracker) Wrote(dir int) { t.prev = dir }

// LayerSums is Sums of the layer dst that the last WriteDelta wrote: the files it copied are not
// read again.
func (t *Tracker) LayerSums(dst int) ([]byte, error) { return sumsKnown(dst, t.sums) }

// racyWindow is how close to a checkpoint an entry's change time must be
// for the entry to be copied again at the next one (the coarse clock file
// times come from ticks at 4 ms or less).
const racyWindow = 20 * time.Millisecond

// WriteDelta writes into the empty layer directory dst what changed in the
// upper layer since the tracker's last state, and moves the tracker to the
// upper layer's state now. It returns the paths the delta holds (changed,
// added, deleted), sorted; none when nothing changed.
func (t *Tracker) WriteDelta(upper, dst int) ([]string, error) {
	now := time.Now().UnixNano()
	cur := map[string]entryState{}
	if err := scanState(upper, cur); err != nil {
		return nil, err
	}
	for p, e := range cur {
		if e.ctime >= now-int64(racyWindow) {
			e.racy = true
			cur[p] = e
		}
	}
	d := &delta{upper: upper, dst: dst, cur: cur, seen: t.seen, prev: t.prev, made: map[string]bool{},
		upperDirs: &dirChain{root: upper}, dstDirs: &dirChain{root: dst}, sums: map[string]string{}}
	t.sums = nil
	defer d.upperDirs.close()
	defer d.dstDirs.close()
	paths := make([]string, 0, len(cur))
	for p := range cur {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents before children
	for _, p := range paths {
		if err := d.visit(p); err != nil {
			return nil, err
		}
	}
	var gone []string
	for p := range t.seen {
		if _, ok := cur[p]; !ok {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		if err := d.vanished(p); err != nil {
			return nil, err
		}
	}
	t.seen, t.sums = cur, d.sums
	sort.Strings(d.changed)
	return d.changed, nil
}

// delta is one WriteDelta in progress.
type delta struct {
	upper, dst int
	prev       int // the last delta, for racy entries (-1: none)
	cur, seen  map[string]entryState
	// made are the directories created in dst so far; replaced those
	// copied whole (an opaque directory new since the last checkpoint),
	// whose entries need no visit of their own.
	made     map[string]bool
	replaced []string
	changed  []string
	sums     map[string]string // of the files copied, as written
	// upperDirs and dstDirs keep open the directories of the last path looked up in each
	// tree: paths come sorted, so the next one's parent is mostly open already, and a
	// checkpoint of a tree n directories deep costs n lookups, not n*n.
	upperDirs, dstDirs *dirChain
}

// dirChain is the open directories along one path below root, parents first.
type dirChain struct {
	root  int
	paths []string
	fds   []int
	limit int // chainLimit, 0 until the first lookup
	// opened counts the directories looked up by name, what a lookup costs.
	opened int
}

// chainLimit bounds the descriptors a chain keeps: an eighth of what the process may hold (the
// walk of the layer holds one per level as well), at most 4096. Past it the chain lets go of its
// highest directories; a path above those is opened from the root again.
func chainLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 64
	}
	return int(max(16, min(4096, rl.Cur/8)))
}

// parent returns a descriptor of the directory holding p (the caller closes it) and p's
// last name.
func (c *dirChain) parent(p string) (int, string, error) {
	dir, name, err := c.at(p)
	if err != nil {
		return -1, "", err
	}
	fd, err := unix.FcntlInt(uintptr(dir), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	return fd, name, nil
}

// at is parent, with a descriptor the chain keeps: the caller does not close it, and it is
// good until the chain's next lookup.
func (c *dirChain) at(p string) (int, string, error) {
	dir, name := parentOf(p), p[strings.LastIndexByte(p, '/')+1:]
	// The chain's paths are nested, each below the one before: the deepest that holds dir is
	// looked for from the top, so a lookup costs what it pops.
	keep := len(c.paths)
	for keep > 0 && !within(dir, c.paths[keep-1]) {
		keep--
	}
	for len(c.fds) > keep {
		unix.Close(c.fds[len(c.fds)-1])
		c.fds, c.paths = c.fds[:len(c.fds)-1], c.paths[:len(c.paths)-1]
	}
	cur, at := c.root, ""
	if keep > 0 {
		cur, at = c.fds[keep-1], c.paths[keep-1]
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(dir, at), "/")
	if rest == "" {
		return cur, name, nil
	}
	for _, comp := range strings.Split(rest, "/") {
		next, err := unix.Openat(cur, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, "", fmt.Errorf("open %s: %w", visiblePath(dir), err)
		}
		c.opened++
		at = joinRel(at, comp)
		if c.limit == 0 {
			c.limit = chainLimit()
		}
		if len(c.fds) >= c.limit {
			// The chain lets go of its highest directory; cur, the last, stays.
			unix.Close(c.fds[0])
			c.fds, c.paths = c.fds[1:], c.paths[1:]
		}
		c.fds, c.paths = append(c.fds, next), append(c.paths, at)
		cur = next
	}
	return cur, name, nil
}

// within reports whether path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// stat is statIn through the chain.
func (c *dirChain) stat(p string) (dir int, name string, st unix.Stat_t, err error) {
	if dir, name, err = c.parent(p); err != nil {
		return -1, "", st, err
	}
	if err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		unix.Close(dir)
		return -1, "", st, err
	}
	return dir, name, st, nil
}

func (c *dirChain) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds, c.paths = nil, nil
}

// visit puts path p of the upper layer into the delta when it changed.
func (d *delta) visit(p string) error {
	if d.under(p) {
		return nil
	}
	e := d.cur[p]
	old, had := d.seen[p]
	if e.isDir() {
		newlyOpaque := e.kind == OpaqueDir && (!had || old.kind != OpaqueDir || old.ino != e.ino)
		if newlyOpaque {
			if err := d.ensureParent(p); err != nil {
				return err
			}
			if err := copyTree(d.upper, d.dst, p); err != nil {
				return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
			}
			d.replaced = append(d.replaced, p+"/")
			d.changed = append(d.changed, p)
			return nil
		}
		if !had || !old.isDir() || old.mode != e.mode || old.mtime != e.mtime || old.racy {
			// A directory's own change (new, chmod) is carried by creating
			// it in the delta with its attributes; what is below it is
			// visited on its own.
			if err := d.ensureDir(p); err != nil {
				return err
			}
			if !had || !old.isDir() || old.mode != e.mode {
				d.changed = append(d.changed, p)
			}
		}
		return nil
	}
	if had && old.ino == e.ino && old.ctime == e.ctime && old.mtime == e.mtime &&
		old.size == e.size && old.mode == e.mode && old.rdev == e.rdev &&
		(!old.racy || sameAsCopy(d.upper, d.prev, p)) {
		return nil
	}
	if e.isWhiteout() {
		return d.whiteout(p)
	}
	if err := d.ensureParent(p); err != nil {
		return err
	}
	// Both directories stay the chains' own: nothing looks up another path until the copy
	// is done.
	dir, name, err := d.dstDirs.at(p)
	if err != nil {
		return err
	}
	src, _, err := d.upperDirs.at(p)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		sum, err := copyFileSum(src, dir, name, &st, true)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
		}
		if sum != "" {
			d.sums[p] = sum
		}
	} else if err := copyEntry(src, dir, name, &st); err != nil {
		return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
	}
	d.changed = append(d.changed, p)
	return nil
}

// vanished records that p, in the upper layer at the last checkpoint, is
// gone from it: the delta deletes it with a whiteout at the highest path
// that went, unless something the delta holds already hides it.
func (d *delta) vanished(p string) error {
	if d.seen[p].isWhiteout() {
		return nil // nothing showed there
	}
	for a := parentOf(p); a != ""; a = parentOf(a) {
		ca, here := d.cur[a]
		if !here {
			if _, was := d.seen[a]; was {
				return nil // a went too: its own whiteout deletes p
			}
			continue
		}
		if !ca.isDir() || d.under(a+"/x") {
			return nil // a file, whiteout or new opaque directory at a hides p
		}
		break
	}
	if d.under(p) {
		return nil
	}
	return d.whiteout(p)
}

// whiteout puts a whiteout at p in the delta: p is deleted in this step.
func (d *delta) whiteout(p string) error {
	if err := d.ensureParent(p); err != nil {
		return err
	}
	dir, name, err := d.openParent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := unix.Mknodat(dir, name, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("checkpoint the deletion of %s: %w", visiblePath(p), err)
	}
	d.changed = append(d.changed, p)
	return nil
}

// under reports whether p lies in a directory the delta copied whole.
func (d *delta) under(p string) bool {
	for _, r := range d.replaced {
		if strings.HasPrefix(p, r) {
			return true
		}
	}
	return false
}

// ensureParent creates p's parent directories in dst, with the upper
// layer's attributes.
func (d *delta) ensureParent(p string) error {
	if parent := parentOf(p); parent != "" {
		return d.ensureDir(parent)
	}
	return nil
}

// ensureDir creates directory p (and its parents) in dst, not opaque: in a
// layer, a plain directory merges with the one below.
func (d *delta) ensureDir(p string) error {
	if d.made[p] {
		return nil
	}
	if err := d.ensureParent(p); err != nil {
		return err
	}
	dir, name, err := d.openParent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := unix.Mkdirat(dir, name, 0o700); err != nil && err != unix.EEXIST {
		return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
	}
	src, _, st, err := d.upperDirs.stat(p)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", visiblePath(p), err)
	}
	defer unix.Close(src)
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := setMeta(fd, &st); err != nil {
		return err
	}
	d.made[p] = true
	return nil
}

// openParent opens p's parent directory in dst.
func (d *delta) openParent(p string) (int, string, error) { return d.dstDirs.parent(p) }

// openParentIn opens the directory holding p below root, without following
// symlinks, and returns it with p's last name.
func openParentIn(root int, p string) (int, string, error) {
	dir, name := parentOf(p), p[strings.LastIndexByte(p, '/')+1:]
	fd, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	if dir == "" {
		return fd, name, nil
	}
	for _, c := range strings.Split(dir, "/") {
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, "", fmt.Errorf("open %s: %w", visiblePath(dir), err)
		}
		fd = next
	}
	return fd, name, nil
}

// statIn opens the directory holding p below root (see openParentIn) and
// stats p there, without following a symlink at its end. The caller closes
// the directory.
func statIn(root int, p string) (dir int, name string, st unix.Stat_t, err error) {
	if dir, name, err = openParentIn(root, p); err != nil {
		return -1, "", st, err
	}
	if err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		unix.Close(dir)
		return -1, "", st, err
	}
	return dir, name, st, nil
}

// copyTree copies directory p of src (an opaque one: it replaces what is
// below) whole into dst, marked opaque.
func copyTree(src, dst int, p string) error {
	sdir, name, st, err := statIn(src, p)
	if err != nil {
		return err
	}
	defer unix.Close(sdir)
	ddir, dname, err := openParentIn(dst, p)
	if err != nil {
		return err
	}
	defer unix.Close(ddir)
	if err := RemoveAt(ddir, dname); err != nil {
		return err
	}
	return copySubdir(sdir, ddir, name, &st, true)
}

// CopyDir copies every entry of directory src into the empty directory dst,
// whiteouts and opaque marks included.
func CopyDir(src, dst int) error {
	names, err := readDirNames(src)
	if err != nil {
		return err
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		switch KindAt(src, name, &st) {
		case Whiteout:
			err = unix.Mknodat(dst, name, unix.S_IFCHR, 0)
		case Dir, OpaqueDir:
			err = copySubdir(src, dst, name, &st, false)
		default:
			err = copyEntry(src, dst, name, &st)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", visiblePath(name), err)
		}
	}
	return nil
}

// copySubdir copies directory name of src into dst, whole, marked opaque
// when src's is or when opaque is set.
func copySubdir(src, dst int, name string, st *unix.Stat_t, opaque bool) error {
	if err := unix.Mkdirat(dst, name, 0o700); err != nil {
		return err
	}
	sfd, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, err := unix.Openat(dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if opaque || isOpaque(sfd) {
		if err := unix.Fsetxattr(dfd, OpaqueXattr, []byte("y"), 0); err != nil {
			return err
		}
	}
	if err := CopyDir(sfd, dfd); err != nil {
		return err
	}
	return setMeta(dfd, st)
}

// scanState records the state of every entry below directory root. It goes depth first and
// reaches each directory through a dirChain: the descriptors it holds stay within the chain's
// bound however deep the tree is (a walk that holds one per level fails past the descriptor
// limit, and the run's last checkpoint with it).
func scanState(root int, out map[string]entryState) error {
	chain := &dirChain{root: root}
	defer chain.close()
	stack := []string{""}
	for len(stack) > 0 {
		rel := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fd, _, err := chain.parent(joinRel(rel, "-"))
		if err != nil {
			return err
		}
		subdirs, err := scanDir(fd, rel, out)
		unix.Close(fd)
		if err != nil {
			return err
		}
		stack = append(stack, subdirs...)
	}
	return nil
}

// scanDir records the state of the entries of directory fd (rel below the root), and returns
// the paths of its subdirectories.
func scanDir(fd int, rel string, out map[string]entryState) ([]string, error) {
	names, err := readDirNames(fd)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", visiblePath(rel), err)
	}
	var subdirs []string
	for _, name := range names {
		p := joinRel(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, fmt.Errorf("stat %s: %w", visiblePath(p), err)
		}
		e := entryState{
			ino: st.Ino, ctime: st.Ctim.Nano(), mtime: st.Mtim.Nano(), size: st.Size,
			mode: st.Mode, rdev: st.Rdev, kind: KindAt(fd, name, &st),
		}
		if e.isDir() {
			subdirs = append(subdirs, p)
		}
		out[p] = e
	}
	return subdirs, nil
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// sameAsCopy reports whether regular file or symlink p of upper has the
// content of its copy in the last delta prev: a racy entry whose stat did not
// move since may still have been written in the same clock tick, and only
// its content tells (a whiteout, FIFO or socket has none). A file over 64
// MiB counts as changed.
func sameAsCopy(upper, prev int, p string) bool {
	if prev < 0 {
		return false
	}
	a, an, sa, err := statIn(upper, p)
	if err != nil {
		return false
	}
	defer unix.Close(a)
	b, bn, sb, err := statIn(prev, p)
	if err != nil {
		return false
	}
	defer unix.Close(b)
	if sa.Mode != sb.Mode || sa.Size != sb.Size || sa.Size > 64<<20 {
		return false
	}
	switch sa.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		ta, erra := readlinkAt(a, an)
		tb, errb := readlinkAt(b, bn)
		return erra == nil && errb == nil && ta == tb
	case unix.S_IFREG:
		return sameFileContent(a, an, b, bn)
	case unix.S_IFCHR:
		return sa.Rdev == 0 && sb.Rdev == 0 // whiteouts
	case unix.S_IFIFO, unix.S_IFSOCK:
		return true
	}
	return false
}

// sameFileContent compares two regular files byte by byte.
func sameFileContent(a int, an string, b int, bn string) bool {
	fa, err := unix.Openat(a, an, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fa)
	fb, err := unix.Openat(b, bn, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fb)
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, erra := readFull(fa, ba)
		nb, errb := readFull(fb, bb)
		if erra != nil || errb != nil || na != nb || string(ba[:na]) != string(bb[:nb]) {
			return false
		}
		if na < len(ba) {
			return true
		}
	}
}

// readFull reads into buf until it is full or the file ends.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}
