package layers

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Kind is what an entry of an overlay layer is to the layers below it. Every reader of a layer
// (the change set, the history, the merge of a run's layer, deltas and checksums) decides it
// here, the same way.
type Kind uint8

const (
	// Other is a device, FIFO or socket: shown as it is.
	Other Kind = iota
	// File is a regular file.
	File
	// Symlink is a symbolic link.
	Symlink
	// Dir is a directory merged with the directories below it. overlay.opaque = "x" marks one
	// too: it says the directory may hold whiteouts in file form, not that it hides anything.
	// So is a directory with overlay.redirect: the jail mounts its overlays with userxattr,
	// which follows no redirect.
	Dir
	// OpaqueDir is a directory that replaces the directories below it (overlay.opaque = "y").
	OpaqueDir
	// Whiteout deletes what the layers below hold at its path: a character device 0/0, or a
	// zero-size regular file carrying overlay.whiteout (the form of nested overlays).
	Whiteout
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case Symlink:
		return "symlink"
	case Dir:
		return "directory"
	case OpaqueDir:
		return "opaque directory"
	case Whiteout:
		return "whiteout"
	}
	return "other"
}

// XattrNamespaces are the namespaces of the overlay's xattrs: trusted. where the overlay is
// mounted by root in the first user namespace, user. where it is mounted with userxattr (in a
// user namespace, as the jail's are). A layer may come from either; both are read.
var XattrNamespaces = []string{"trusted.", "user."}

// KindAt is the kind of the entry name of the directory dirfd, st its lstat. Its xattrs are
// read without following a symlink (none is read of a symlink).
func KindAt(dirfd int, name string, st *unix.Stat_t) Kind {
	p := name
	if dirfd != unix.AT_FDCWD {
		p = "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
	}
	return classify(st, func(attr string, buf []byte) (int, error) { return unix.Lgetxattr(p, attr, buf) })
}

// KindFD is the kind of the open file fd, st its fstat (nil: fd is fstat'ed here).
func KindFD(fd int, st *unix.Stat_t) Kind {
	if st == nil {
		st = new(unix.Stat_t)
		if unix.Fstat(fd, st) != nil {
			return Other
		}
	}
	return classify(st, func(attr string, buf []byte) (int, error) { return unix.Fgetxattr(fd, attr, buf) })
}

// classify decides the kind of an entry from its stat and its xattrs, read through getxattr.
func classify(st *unix.Stat_t, getxattr func(attr string, buf []byte) (int, error)) Kind {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if st.Rdev == 0 {
			return Whiteout
		}
	case unix.S_IFREG:
		if st.Size == 0 && hasOverlayXattr(getxattr, "overlay.whiteout", "") {
			return Whiteout
		}
		return File
	case unix.S_IFLNK:
		return Symlink
	case unix.S_IFDIR:
		if hasOverlayXattr(getxattr, "overlay.opaque", "y") {
			return OpaqueDir
		}
		return Dir
	}
	return Other
}

// hasOverlayXattr reports whether the entry carries attr in either namespace, with the value
// want (any value when want is "").
func hasOverlayXattr(getxattr func(attr string, buf []byte) (int, error), attr, want string) bool {
	buf := make([]byte, 8)
	for _, ns := range XattrNamespaces {
		n, err := getxattr(ns+attr, buf)
		if err == unix.ERANGE {
			// Longer than any value looked for: present, and not want.
			if want == "" {
				return true
			}
			continue
		}
		if err == nil && (want == "" || string(buf[:n]) == want) {
			return true
		}
	}
	return false
}
