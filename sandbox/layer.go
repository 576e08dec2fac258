package sandbox

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
)

// A run writes into a layer of its own: a tmpfs, sized by
// Policy.MaxUpperBytes, as the project overlay's upper layer, over the
// session's staging layer on disk (lower) over the project. The kernel
// enforces the size (no unlinked file, unreadable directory or sparse file
// gets past it), and staged writes cost what tmpfs writes cost. When the
// command and everything it started are gone, PID 1 merges the run's layer
// into the staging layer on disk, keeping overlay semantics: a whiteout
// deletes, an opaque directory replaces (SPEC §12).

// runLayer is what PID 1 keeps of the run's layer once the jail's root is
// built: descriptors, as no path of the jail leads to them.
type runLayer struct {
	upper   int // the tmpfs upper layer
	staging int // the session's staging layer on disk
	project int // the project (O_PATH), to tell whether a deletion hides anything
}

// layerMount is where the run's tmpfs is mounted while the jail is built;
// it is detached before the command exists.
const layerMount = "/.shadow-layer"

// mountRunLayer mounts the project's overlay on dir: lower the staging
// layer over the project, upper a tmpfs of size bytes (0: the kernel's
// default, half of the memory). It returns the descriptors of the layers;
// the tmpfs itself is detached from the jail's tree, reachable only by them.
func mountRunLayer(root, dir, project, staging string, size int64) (*runLayer, error) {
	mnt := root + layerMount
	mode := uint32(0o700)
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", mnt, err)
	}
	opts := fmt.Sprintf("mode=%04o", mode)
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mount the run's layer (tmpfs %s): %w", opts, err)
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(mnt+"/"+d, 0o755); err != nil {
			return nil, fmt.Errorf("create %s/%s: %w", mnt, d, err)
		}
	}
	l := &runLayer{upper: -1, staging: -1, project: -1}
	var err error
	if l.upper, err = unix.Open(mnt+"/upper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("open the run's layer: %w", err)
	}
	if l.staging, err = unix.Open(staging, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		l.close()
		return nil, fmt.Errorf("open the staging layer %s: %w", staging, err)
	}
	if l.project, err = unix.Open(project, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		l.close()
		return nil, fmt.Errorf("open %s: %w", project, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.close()
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	opts = "lowerdir=" + escapeOverlayPath(staging) + ":" + escapeOverlayPath(project) +
		",upperdir=" + escapeOverlayPath(mnt+"/upper") + ",workdir=" + escapeOverlayPath(mnt+"/work") + ",userxattr"
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		l.close()
		return nil, fmt.Errorf("mount overlay on %s (lower %s:%s, upper the run's layer): %w", dir, staging, project, err)
	}
	// The overlay holds its own reference to the tmpfs.
	if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
		l.close()
		return nil, fmt.Errorf("detach the run's layer: %w", err)
	}
	if err := os.Remove(mnt); err != nil {
		l.close()
		return nil, fmt.Errorf("remove %s: %w", mnt, err)
	}
	return l, nil
}

func (l *runLayer) close() {
	for _, fd := range []int{l.upper, l.staging, l.project} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// rules are the paths PID 1's Landlock domain must allow for the merge:
// the layers by descriptor, as /proc/self/fd links, which Landlock
// resolves to the directories themselves.
func (l *runLayer) rules() (read, write []string) {
	fd := func(n int) string { return "/proc/self/fd/" + strconv.Itoa(n) }
	return []string{fd(l.upper), fd(l.project)}, []string{fd(l.staging)}
}

// usage reports how many bytes of the run's layer are used, and whether it
// is full: less than 64 KiB free, where the next write of any size fails.
func (l *runLayer) usage() (used int64, full bool) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(l.upper, &st); err != nil {
		return 0, false
	}
	used = int64(st.Blocks-st.Bfree) * st.Bsize
	return used, int64(st.Bavail)*st.Bsize < 64<<10
}

// merge moves what the run wrote into the staging layer, with overlay
// semantics across the two; the project tells whether a deletion of a path
// the staging layer does not hold must be kept as a whiteout.
func (l *runLayer) merge() error {
	return layers.Merge(l.upper, l.staging, l.project)
}
