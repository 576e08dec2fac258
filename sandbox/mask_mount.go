package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Masking, the jail side: PID 1 hides each path of jailSpec.Masked (see
// mask.go) right after binding the system, so that the project and the
// explicit binds, mounted later, still show what they show.

// maskSource is where PID 1 mounts, for the time of the step, the tmpfs
// every mask is a bind of: its root directory (mode 0000) for a directory,
// the empty file maskFile in it (mode 0000) for anything else. One tmpfs,
// made read-only before any bind of it, serves every mask: a bind is one
// cheap mount, and there is one filesystem less to tear down per mask.
const (
	maskSource = "/.shadow-masked"
	maskFile   = "file"
)

// maskTmpfsSize is the size of a masking tmpfs: it holds nothing, or the
// empty directories leading to a mount below it.
const maskTmpfsSize = 64 << 10

// maskFlags are the flags of every masking mount.
const maskFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// hideUnreadable hides, under root, every path of masked: a directory
// behind an empty read-only directory of mode 0000, anything else behind an
// empty read-only file of mode 0000. Without a capability, not even the
// jail's root may open them. A masked directory that holds the mount point
// of a later step ($HOME, one of mounts: a project under a 0700 directory
// of /opt) gets a tmpfs of mode 0755 holding only the way there. The list
// may come from a cache: a path that vanished, or that now is or goes
// through a symlink, is skipped.
func hideUnreadable(root string, masked []string, home string, mounts []mountSpec) error {
	if len(masked) == 0 {
		return nil
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rootFD)
	src := root + maskSource
	if err := mountMaskSource(src); err != nil {
		return err
	}
	// The binds keep the tmpfs; its own mount point goes.
	defer os.Remove(src)
	defer unix.Unmount(src, unix.MNT_DETACH)
	later := laterMountPoints(home, mounts)
	for _, p := range masked {
		kind, err := maskedKind(rootFD, p)
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
		switch kind {
		case 0:
			continue
		case unix.S_IFDIR:
			err = maskDir(root, p, src, later)
		default:
			err = bindMask(src+"/"+maskFile, root+p)
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
	}
	return nil
}

// mountMaskSource mounts the tmpfs the masks are binds of on dir, with its
// empty file, and makes it read-only: every bind of it is read-only too.
func mountMaskSource(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", maskFlags, "mode=0000,size=4k"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	fd, err := unix.Open(dir+"/"+maskFile, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("create %s/%s: %w", dir, maskFile, err)
	}
	unix.Close(fd)
	if err := unix.Mount("", dir, "", maskFlags|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", dir, err)
	}
	return nil
}

// bindMask binds src, a part of the read-only mask tmpfs, on target.
func bindMask(src, target string) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return nil
}

// maskedKind is the file type (unix.S_IFDIR, unix.S_IFREG, ...) of masked
// path p under the root open at rootFD, or 0 when p is missing, is a
// symlink or lies beyond one, or when PID 1 may not reach it: then the
// command, with the same uid and fewer rights, may not either (a directory
// above it closed since a cached scan).
func maskedKind(rootFD int, p string) (uint32, error) {
	fd, err := unix.Openat2(rootFD, strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EACCES):
		return 0, nil
	case errors.Is(err, unix.ENOSYS): // no openat2 (before Linux 5.6): the last component only
		var st unix.Stat_t
		if err := unix.Fstatat(rootFD, strings.TrimPrefix(p, "/"), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return 0, nil
		}
		return kindOf(st.Mode), nil
	case err != nil:
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return kindOf(st.Mode), nil
}

func kindOf(mode uint32) uint32 {
	if mode&unix.S_IFMT == unix.S_IFLNK {
		return 0
	}
	return mode & unix.S_IFMT
}

// laterMountPoint is a jail path a later step mounts on, and whether it is
// a directory.
type laterMountPoint struct {
	path string
	dir  bool
}

// laterMountPoints are the mount points of the steps after the system
// binds that may lie under the bound system trees: $HOME and the project
// and extra mounts.
func laterMountPoints(home string, mounts []mountSpec) []laterMountPoint {
	var out []laterMountPoint
	if home != "" && home != "/" {
		out = append(out, laterMountPoint{home, true})
	}
	for _, m := range mounts {
		dir := true
		if m.Kind == mountBind {
			fi, err := os.Stat(m.Src)
			dir = err != nil || fi.IsDir()
		}
		out = append(out, laterMountPoint{m.Dst, dir})
	}
	return out
}

// maskDir hides directory p: a bind of the mask tmpfs's empty root or,
// when mount points of later steps lie below p, a tmpfs of mode 0755
// holding only the directories and files those mounts need, made
// read-only once they exist (a later step finds them and only mounts on
// them).
func maskDir(root, p, src string, later []laterMountPoint) error {
	var below []laterMountPoint
	for _, m := range later {
		if m.path != p && within(m.path, p) {
			below = append(below, m)
		}
	}
	if len(below) == 0 {
		return bindMask(src, root+p)
	}
	dir := root + p
	if err := unix.Mount("tmpfs", dir, "tmpfs", maskFlags, fmt.Sprintf("mode=0755,size=%d", maskTmpfsSize)); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	for _, m := range below {
		path := root + m.path
		mk := touch
		if m.dir {
			mk = func(d string) error { return os.MkdirAll(d, 0o755) }
		}
		if err := mk(path); err != nil {
			return fmt.Errorf("make the way to %s: %w", m.path, err)
		}
	}
	if err := unix.Mount("", dir, "", maskFlags|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount tmpfs read-only: %w", err)
	}
	return nil
}
