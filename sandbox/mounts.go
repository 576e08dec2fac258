package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// This file holds the mount steps PID 1 of the jail runs, in the order of
// buildRoot. Each step runs in the jail's fresh mount namespace, before
// pivot_root, with host paths still reachable; the new root is a tmpfs at
// jailSpec.Root that nothing on the host can see.

// Jail paths that are not host paths.
const (
	jailRuntimeDir = "/run/shadow"      // Policy.RuntimeDir
	jailInitBinary = "/run/shadow-init" // the shadow binary, to exec the command stage
	publishSocket  = "publish.sock"     // in jailRuntimeDir
)

// Size limits of the jail's own tmpfs mounts.
const (
	rootTmpfsSize = 16 << 20
	devTmpfsSize  = 64 << 10
	shmTmpfsSize  = 256 << 20
)

// devices are the host device nodes bound into the jail's /dev: a user
// namespace cannot create device nodes.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// procReadOnly are the parts of the fresh /proc made read-only, as bubblewrap
// does: the sysctls, the magic SysRq trigger, IRQ affinity and bus tunables.
var procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus"}

// makePrivate stops mount events from propagating between the jail and the
// host, in either direction.
func makePrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	return nil
}

// mountTmpfs mounts a size-limited tmpfs on dir, creating dir; mode is in
// chmod's octal form (0o1777 for a sticky, world-writable /tmp).
func mountTmpfs(dir string, mode uint32, size int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	opts := fmt.Sprintf("mode=%04o,size=%d", mode, size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// The system directories are shown read-only, as mountShownOn does (one
// showTree step each): a read-only bind would still let connect(2) reach a
// host daemon's socket inside them (/opt/app/run/app.sock, one made after
// the run started included); an overlay refuses it. The ones that are
// symlinks (/bin -> usr/bin on merged-/usr systems) are recreated as
// symlinks; a tree the host mounted more below is shown piece by piece.
// Last, /etc/resolv.conf's target is bound when it lives under /run
// (bindRegularFile): a regular file, which cannot be a socket.

// bindRegularFile binds host file p read-only at root+p; it must be a
// regular file. A missing one is skipped.
func bindRegularFile(root, p string) error {
	if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	return bindInto(root, p, p, true)
}

// hostMountsBelow lists the host's mount points strictly below one of
// dirs, leaving out the jail's own root (where PID 1 builds everything).
func hostMountsBelow(dirs []string, root string) ([]string, error) {
	table, err := readMountTable()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range table {
		if within(e.path, root) || slices.Contains(out, e.path) {
			continue
		}
		for _, d := range dirs {
			if e.path != d && within(e.path, d) {
				out = append(out, e.path)
				break
			}
		}
	}
	return out, nil
}

// showTree shows host path p read-only at root+p, refusing connect(2) to
// any socket in it: a directory through one overlay (mountShownOn); a
// symlink as a symlink; a regular file through a read-only bind (a file is
// not a socket, and the bind holds that file even if the host replaces
// it). A socket, fifo or device is not shown. A directory the host mounted
// more below (a container's /etc/hosts, a separate /usr/local) is another
// matter: in a user namespace those mounts are locked to it, and overlayfs
// refuses a layer with locked mounts in it ("failed to clone lowerpath"),
// so such a directory becomes a directory of the jail's root holding each
// of its entries shown the same way, one level down. below lists the
// host's mount points below the system trees.
func showTree(root, p, empty string, below []string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	target := root + p
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("read link %s: %w", p, err)
		}
		if err := os.Symlink(link, target); err != nil {
			return fmt.Errorf("symlink %s: %w", target, err)
		}
		return nil
	case fi.Mode().IsRegular():
		if err := touch(target); err != nil {
			return err
		}
		return bindReadOnly(p, target)
	case !fi.IsDir():
		return nil
	}
	if !slices.ContainsFunc(below, func(m string) bool { return m != p && within(m, p) }) {
		return mountShownOn(target, p, empty)
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", target, err)
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrPermission) {
		// The invoker may not list it either: shown empty and closed.
		return os.Chmod(target, 0)
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", p, err)
	}
	for _, e := range entries {
		if err := showTree(root, filepath.Join(p, e.Name()), empty, below); err != nil {
			return err
		}
	}
	if err := os.Chmod(target, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("chmod %s: %w", target, err)
	}
	return nil
}

// mountDevpts mounts a devpts instance of the jail's own on pts (/dev
// holds a tmpfs with binds of the host's harmless devices, this, a tmpfs
// /dev/shm and the usual links).
func mountDevpts(pts string) error {
	if err := os.Mkdir(pts, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", pts, err)
	}
	if err := unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount devpts on %s: %w", pts, err)
	}
	return nil
}

// bindDevice binds one host device node; the bind keeps the host mount's
// flags, so the device works although the jail's tmpfs is nodev.
func bindDevice(src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("stat %s: %w", src, err)
	}
	if err := touch(dst); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, dst, err)
	}
	return nil
}

// mountProc mounts a /proc of the jail's PID namespace on proc; the
// steps after it set the user namespace's per-user limits (userlimits.go)
// and make the system-wide knobs read-only (remountOverItself).
func mountProc(proc string) error {
	if err := os.Mkdir(proc, 0o555); err != nil {
		return fmt.Errorf("create %s: %w", proc, err)
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc on %s: %w", proc, err)
	}
	return nil
}

// remountOverItself binds p read-only over itself, when it exists.
func remountOverItself(p string) error {
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	return bindReadOnly(p, p)
}

// shownLower is where the empty directory is mounted that every read-only
// overlay (mountShown) has as its second layer: overlayfs wants two lower
// layers when there is no upper one (see mountEmptyLower).
const shownLower = "/.shadow-empty"

// mountEmptyLower mounts an empty directory at shownLower under root, for
// the read-only overlays of the steps up to dropEmptyLower: overlayfs wants
// two lower layers when there is no upper one. It is the root of a tmpfs
// of its own, detached after, rather than a directory of the jail's root
// that is removed: an overlay cannot list a directory whose lower layer
// was removed (getdents fails), a detached mount's root stays whole.
func mountEmptyLower(root string) error {
	empty := root + shownLower
	if err := os.Mkdir(empty, 0o555); err != nil {
		return fmt.Errorf("create %s: %w", empty, err)
	}
	if err := unix.Mount("tmpfs", empty, "tmpfs", unix.MS_RDONLY|maskFlags, "mode=0555,size=4k"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", empty, err)
	}
	return nil
}

// dropEmptyLower detaches and removes what mountEmptyLower made: the
// overlays mounted since hold it.
func dropEmptyLower(root string) error {
	empty := root + shownLower
	if err := unix.Unmount(empty, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach %s: %w", empty, err)
	}
	if err := os.Remove(empty); err != nil {
		return fmt.Errorf("remove %s: %w", empty, err)
	}
	return nil
}

// overlayVolatile turns on the overlay's "volatile" option. Without it every
// copy-up fsyncs the copied file, which makes appending a line to 5,000
// project files about 30 times slower than outside the jail on ext4. The
// trade-off: if the host crashes during a run, what the run staged may be
// lost or torn; when the run ends, its session syncs the upper layer's
// filesystem once (see Policy.Upper), so a finished run is as durable as
// before. The kernel refuses to
// mount a work directory that was used volatile until its incompat/volatile
// marker is removed, which mountOverlayOn does.
const overlayVolatile = true

// mountOverlayOn mounts the overlay lower (read) + upper (writes) on dir.
// userxattr makes it work in a user namespace: its metadata (opaque
// directories, redirects) is kept in user.overlay.* xattrs.
func mountOverlayOn(dir, lower, upper, work string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	opts := "lowerdir=" + escapeOverlayPath(lower) + ",upperdir=" + escapeOverlayPath(upper) +
		",workdir=" + escapeOverlayPath(work) + ",userxattr"
	if overlayVolatile {
		if err := os.RemoveAll(filepath.Join(work, "work", "incompat")); err != nil {
			return fmt.Errorf("clear volatile marker in %s: %w", work, err)
		}
		opts += ",volatile"
	}
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay on %s (lower %s, upper %s): %w", dir, lower, upper, err)
	}
	return nil
}

// mountShownOn shows host directory src read-only on dir through an
// overlay of src over an empty directory, with no upper layer. Unlike a
// read-only bind it refuses connect(2) to a socket in src; filesystems
// mounted below src on the host are not shown.
func mountShownOn(dir, src, empty string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	opts := "lowerdir=" + escapeOverlayPath(src) + ":" + escapeOverlayPath(empty) + ",userxattr"
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount read-only overlay of %s on %s: %w", src, dir, err)
	}
	return nil
}

// overlayPathEscaper escapes the characters the overlay option parser treats
// as separators.
var overlayPathEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`)

func escapeOverlayPath(p string) string { return overlayPathEscaper.Replace(p) }

// bindInto binds host path src at jail path dst (under root), read-only when
// ro. Missing sources are skipped: a cache or config that does not exist has
// nothing to show.
func bindInto(root, src, dst string, ro bool) error {
	fi, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	target := root + dst
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", target, err)
		}
	} else if err := touch(target); err != nil {
		return err
	}
	if !ro {
		if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", src, target, err)
		}
		return nil
	}
	return bindReadOnly(src, target)
}

// bindReadOnly binds src (with its submounts) on dst and makes every
// resulting mount read-only, nosuid and nodev: with one mount_setattr on
// the whole tree (Linux 5.12 and later), which changes only the attributes
// it sets, or else by remounting each mount (see remountReadOnly).
func bindReadOnly(src, dst string) error {
	return bindReadOnlyWith(unix.MountSetattr, src, dst)
}

// bindReadOnlyWith is bindReadOnly with mountSetattr for mount_setattr(2):
// a test passes one that fails to take the way of kernels without it.
func bindReadOnlyWith(mountSetattr func(dirfd int, path string, flags uint, attr *unix.MountAttr) error, src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, dst, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := mountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, &attr); err == nil {
		return nil
	}
	return remountReadOnly(dst)
}

// remountReadOnly remounts every mount of the tree at dst read-only, one by
// one. Mounts inherited from the host are locked in a user namespace: a
// remount must repeat their nosuid, nodev, noexec and atime flags or the
// kernel refuses it, so the flags are read back from each mount.
func remountReadOnly(dst string) error {
	points, err := mountPointsUnder(dst)
	if err != nil {
		return err
	}
	for _, p := range points {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", p, err)
		}
		flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV) | lockedFlags(st.Flags)
		if err := unix.Mount("", p, "", flags, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", p, err)
		}
	}
	return nil
}

// lockedFlags maps statfs flags to the mount flags a bind remount must keep.
func lockedFlags(f int64) uintptr {
	var m uintptr
	for _, x := range []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if f&x.st != 0 {
			m |= x.ms
		}
	}
	return m
}

// mountPointsUnder lists the mount points of the mount tree last mounted at
// dir (the mount itself and its submounts), parents first, from
// /proc/self/mountinfo. Mounts that were under dir before and are now hidden
// by it (the jail's $HOME tmpfs under a `--ro` of its parent) are not in the
// tree: they cannot be reached, let alone remounted.
func mountPointsUnder(dir string) ([]string, error) {
	all, err := readMountTable()
	if err != nil {
		return nil, err
	}
	top := -1
	for i, e := range all {
		if e.path == dir {
			top = i
		}
	}
	if top < 0 {
		return nil, fmt.Errorf("read mount table: nothing is mounted at %s", dir)
	}
	// The table lists mounts in the order they were made, so a submount
	// comes after its parent.
	inTree := map[string]bool{all[top].id: true}
	out := []string{dir}
	seen := map[string]bool{dir: true}
	for _, e := range all[top+1:] {
		if !inTree[e.parent] {
			continue
		}
		inTree[e.id] = true
		if !seen[e.path] {
			seen[e.path] = true
			out = append(out, e.path)
		}
	}
	return out, nil
}

// mountEntry is one line of /proc/self/mountinfo: the mount's id, its
// parent's, and its mount point.
type mountEntry struct {
	id, parent string
	path       string
}

// readMountTable reads /proc/self/mountinfo, in the order the mounts were
// made.
func readMountTable() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	var all []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		all = append(all, mountEntry{id: fields[0], parent: fields[1], path: unescapeMountinfo(fields[4])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	return all, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of
// /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// pivotInto makes root the root of the mount namespace and detaches the old
// root, so that no host path stays reachable.
func pivotInto(root string) error {
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("chdir %s: %w", root, err)
	}
	// pivot_root(".", ".") stacks the old root on top of the new one; the
	// lazy unmount of "." then drops it (pivot_root(2), NOTES).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root to %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	return nil
}

// remountRootReadOnly makes the jail's root tmpfs read-only once every mount
// point on it exists.
func remountRootReadOnly() error {
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remount / read-only: %w", err)
	}
	return nil
}

// chdirStart enters the directory the command starts in, or the project
// when the staged changes deleted it (PWD follows).
func chdirStart(s *jailSpec) error {
	if s.Dir == "" || s.Dir == s.Project || unix.Chdir(s.Dir) != nil {
		s.Exec.Env = setEnv(s.Exec.Env, "PWD", s.Project)
		return chdir(s.Project)
	}
	return nil
}

func chdir(dir string) error {
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("chdir %s: %w", dir, err)
	}
	return nil
}

// touch creates an empty file (and its parents) to bind a file on.
func touch(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}
