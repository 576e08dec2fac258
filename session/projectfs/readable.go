package projectfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The agent may close a staged file or directory to its own owner: `chmod 000 f`, `chmod 300 d`.
// Run as root, shadow reads them all the same; run as a user, the jail makes every staged entry
// that user's, so shadow, its owner, can open it up. A file is opened with u+r added for the
// open and its mode put back at once, so that review shows and apply writes the mode the agent
// set; a directory is given u+rx, and keeps it: the change set has no directory modes (an apply
// makes directories 0755). What is chmodded is always the very entry looked at, reached by an
// O_PATH descriptor and changed through /proc/self/fd, never through a symlink swapped in.

// openOwned opens for reading the regular file name of dir that its mode does not let its owner
// read, when that owner is the user shadow runs as: with u+r added for the open, and the mode put
// back once the file is open. It fails with EACCES otherwise.
func openOwned(dir int, name string) (int, error) {
	pfd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != unix.Geteuid() || st.Mode&0o400 != 0 {
		return -1, unix.EACCES
	}
	proc := "/proc/self/fd/" + strconv.Itoa(pfd)
	mode := st.Mode & 0o7777
	if err := unix.Fchmodat(unix.AT_FDCWD, proc, mode|0o400, 0); err != nil {
		return -1, unix.EACCES
	}
	fd, err := unix.Open(proc, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if rerr := unix.Fchmodat(unix.AT_FDCWD, proc, mode, 0); rerr != nil && err == nil {
		unix.Close(fd)
		return -1, rerr
	}
	return fd, err
}

// ReadableDir makes the staged directory path one that shadow can list and enter: when its mode
// denies that to its owner and shadow runs as that owner, u+rx is added (and stays). It fails with
// EACCES when the directory stays closed.
func ReadableDir(path string) error { return readableDirAt(unix.AT_FDCWD, path) }

// readableDirAt is ReadableDir for the entry name of the open directory dir.
func readableDirAt(dir int, name string) error {
	if unix.Faccessat(dir, name, unix.R_OK|unix.X_OK, unix.AT_EACCESS) == nil {
		return nil
	}
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != unix.Geteuid() || st.Mode&0o500 == 0o500 {
		return unix.EACCES
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o7777|0o500, 0); err != nil {
		return unix.EACCES
	}
	return nil
}

// EmptyDir reports whether the directory dir (a staging layer) has no entries. The agent may have closed it
// (chmod 300 on the project's root): it is opened up first (ReadableDir).
func EmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrPermission) && ReadableDir(dir) == nil {
		f, err = os.Open(dir)
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", dir, err)
	}
	return len(names) == 0, nil
}
