package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
)

// A run writes into a layer of its own: a tmpfs, sized by
// Policy.MaxUpperBytes, as the project overlay's upper layer, over the
// session's staging layer on disk (lower) over the project. The kernel
// enforces the size (no unlinked file, unreadable directory or sparse file
// gets past it), and staged writes cost what tmpfs writes cost. PID 1 writes
// what changed in it to disk as checkpoints while the run goes; when the
// command and everything it started are gone, it takes the last one and
// merges the run's checkpoints into the staging layer, keeping overlay
// semantics: a whiteout deletes, an opaque directory replaces (SPEC §12).
// Where tmpfs keeps no user.* attributes (before Linux 6.6) the layer is a
// directory on disk beside the staging layer instead.

// runLayer is what PID 1 keeps of the run's layer once the jail's root is
// built: descriptors, as no path of the jail leads to them.
type runLayer struct {
	upper   int // the tmpfs upper layer
	staging int // the session's staging layer on disk
	project int // the project (O_PATH), to tell whether a deletion hides anything
	// checkpoints is the session's checkpoint directory (-1: none taken);
	// next the number of the next one; argv the command run and command
	// the user's, for their record.
	checkpoints int
	next        int
	argv        []string
	command     []string
	tracker     *layers.Tracker
	// onDisk is set when the layer is a directory on the state disk, not a
	// tmpfs (Linux before 6.6: tmpfs keeps no user.* extended attributes,
	// which the overlay needs in its upper layer): scratch is that
	// directory, limit the size PID 1 then polls for, and overLimit says the
	// run was stopped for passing it.
	onDisk    bool
	scratch   int
	limit     int64
	overLimit bool
	// fresh is the layer's signature before the command started; walked
	// what the last walk of it found, and nextWalk when the next may start
	// (see changed).
	fresh    [2]uint64
	walked   layers.Footprint
	nextWalk time.Time
	// prevDelta is the layer of the last checkpoint written (-1: none).
	prevDelta int
}

// layerMount is where the run's tmpfs is mounted while the jail is built;
// it is detached before the command exists.
const layerMount = "/.shadow-layer"

// mountRunLayer mounts the project's overlay on dir: lower the staging
// layer over the project, upper a tmpfs of size bytes (0: the kernel's
// default, half of the memory). It returns the descriptors of the layers;
// the tmpfs itself is detached from the jail's tree, reachable only by them.
func mountRunLayer(root, dir, project, staging, fallback string, size int64, forceOnDisk bool, cp checkpointSpec) (*runLayer, error) {
	mnt := root + layerMount
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", mnt, err)
	}
	opts := "mode=0700"
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mount the run's layer (tmpfs %s): %w", opts, err)
	}
	l := &runLayer{upper: -1, staging: -1, project: -1, checkpoints: -1, scratch: -1, prevDelta: -1, next: cp.Next, tracker: layers.NewTracker()}
	base := mnt
	if forceOnDisk || !userXattrs(mnt) {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			return nil, fmt.Errorf("unmount the run's tmpfs: %w", err)
		}
		if err := os.Remove(mnt); err != nil {
			return nil, fmt.Errorf("remove %s: %w", mnt, err)
		}
		if err := os.RemoveAll(fallback); err != nil {
			return nil, fmt.Errorf("clear the run's layer %s: %w", fallback, err)
		}
		if err := os.Mkdir(fallback, 0o700); err != nil {
			return nil, fmt.Errorf("create the run's layer %s: %w", fallback, err)
		}
		base, l.onDisk, l.limit = fallback, true, size
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(base+"/"+d, 0o755); err != nil {
			return nil, fmt.Errorf("create %s/%s: %w", base, d, err)
		}
	}
	var err error
	if l.onDisk {
		if l.scratch, err = unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("open the run's layer: %w", err)
		}
	}
	if cp.Dir != "" {
		if l.checkpoints, err = unix.Open(cp.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("open the checkpoint directory %s: %w", cp.Dir, err)
		}
		topOfHierarchies(l.checkpoints)
	}
	if l.upper, err = unix.Open(base+"/upper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
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
		",upperdir=" + escapeOverlayPath(base+"/upper") + ",workdir=" + escapeOverlayPath(base+"/work") + ",userxattr"
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		l.close()
		return nil, fmt.Errorf("mount overlay on %s (lower %s:%s, upper the run's layer): %w", dir, staging, project, err)
	}
	// What an unwritten layer uses: the first write moves it (see changed).
	l.fresh, l.walked = l.signature(), layers.Measure(l.upper)
	if l.onDisk {
		return l, nil
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
	for _, fd := range []int{l.upper, l.staging, l.project, l.checkpoints, l.scratch, l.prevDelta} {
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
	write = []string{fd(l.staging)}
	for _, n := range []int{l.checkpoints, l.scratch} {
		if n >= 0 {
			write = append(write, fd(n))
		}
	}
	return []string{fd(l.upper), fd(l.project)}, write
}

// usage reports how many bytes of the run's layer are used, and whether it
// is full: less than 64 KiB free, where the next write of any size fails.
func (l *runLayer) usage() (used int64, full bool) {
	if l.onDisk {
		used = layers.DiskUsage(l.upper)
		return used, l.overLimit || (l.limit > 0 && used >= l.limit)
	}
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

// checkpointSpec says where a run's checkpoints go: Dir, the session's
// checkpoint directory (empty: none are taken), and the number of the next.
type checkpointSpec struct {
	Dir   string
	Next  int
	Quiet int64 // nanoseconds of quiet for a quiet checkpoint; 0: 3 s, < 0: none
	// Budget is the disk the session's checkpoints may use (see historyBudget).
	Budget int64 `json:",omitempty"`
	// Command is the command as the user gave it (Policy.Command).
	Command []string `json:",omitempty"`
}

// Checkpoint and the triggers that take one are the layers package's: the
// session reads what PID 1 writes.
type Checkpoint = layers.Checkpoint

const (
	CheckpointRunEnd = layers.CheckpointRunEnd
	CheckpointPrompt = layers.CheckpointPrompt
	CheckpointQuiet  = layers.CheckpointQuiet
	CheckpointManual = layers.CheckpointManual
	MergedFile       = layers.MergedFile
)

// PromptRequest is the checkpoint request of a prompt whose first line is line (see
// layers.PromptRequest): what the app puts on IO.CheckpointRequests for an Enter.
func PromptRequest(line string) string { return layers.PromptRequest(line) }

// SplitRequest is what took a requested checkpoint and the prompt's line (layers.SplitRequest).
func SplitRequest(r string) (trigger, prompt string) { return layers.SplitRequest(r) }

// checkpoint writes what changed in the run's layer since the last
// checkpoint as the next checkpoint: in c<N>.tmp, then renamed, so that it
// is published whole. It is as durable as the same writes made outside the
// jail: in the page cache, which no SIGKILL of any process loses, until the
// kernel writes it back; nothing is fsynced (a power loss that tears it is
// found by its checksums, and the checkpoint is dropped, see
// session.checkContents). It returns nil when nothing changed, or
// checkpoints are off.
func (l *runLayer) checkpoint(trigger, prompt string) (*Checkpoint, error) {
	if l.checkpoints < 0 {
		return nil, nil
	}
	cp := &Checkpoint{ID: "c" + strconv.Itoa(l.next), N: l.next, Time: time.Now().UTC(), Trigger: trigger, Argv: l.argv, Command: l.command, Prompt: prompt}
	tmp := cp.ID + ".tmp"
	if err := removeTree(l.checkpoints, tmp); err != nil {
		return nil, fmt.Errorf("checkpoint: clear %s: %w", tmp, err)
	}
	if err := unix.Mkdirat(l.checkpoints, tmp, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	dir, err := unix.Openat(l.checkpoints, tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer unix.Close(dir)
	if err := unix.Mkdirat(dir, "layer", 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	layer, err := unix.Openat(dir, "layer", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer unix.Close(layer)
	if cp.Paths, err = l.tracker.WriteDelta(l.upper, layer); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
	}
	if len(cp.Paths) == 0 {
		return nil, removeTree(l.checkpoints, tmp)
	}
	// The list of entries and their checksums, then the metadata that checks it, last.
	sums, err := l.tracker.LayerSums(layer)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
	}
	if err := writeFileAt(dir, layers.SumsFile, sums); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
	}
	cp.Sums = layers.SumOf(sums)
	meta, err := layers.SealMeta(*cp)
	if err != nil {
		return nil, err
	}
	if err := writeFileAt(dir, "meta.json", meta); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
	}
	if err := unix.Renameat(l.checkpoints, tmp, l.checkpoints, cp.ID); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
	}
	// The delta is the next one's reference for what was racy in it.
	if prev, err := unix.Dup(layer); err == nil {
		unix.CloseOnExec(prev)
		if l.prevDelta >= 0 {
			unix.Close(l.prevDelta)
		}
		l.prevDelta = prev
		l.tracker.Wrote(prev)
	}
	l.next++
	return cp, nil
}

// userXattrs reports whether the filesystem at dir keeps user.* extended
// attributes (tmpfs does from Linux 6.6).
func userXattrs(dir string) bool {
	err := unix.Setxattr(dir, "user.shadow.probe", []byte("1"), 0)
	if err != nil {
		return false
	}
	_ = unix.Removexattr(dir, "user.shadow.probe")
	return true
}

// tooLarge reports, for a layer on disk with a limit, that it holds more
// than the limit (polled: see runLayer.onDisk).
func (l *runLayer) tooLarge() bool {
	if !l.onDisk || l.limit <= 0 || l.overLimit {
		return false
	}
	l.overLimit = layers.DiskUsage(l.upper) > l.limit
	return l.overLimit
}

// finish merges the run's layer into the staging layer and records the last
// checkpoint as merged. With checkpoints, what the run wrote is on disk
// already, in the run's checkpoints: they are merged in order, their files
// linked rather than copied again, and the staging layer is as durable as
// they are (the page cache, checked by their sums: see checkpoint). Without,
// the run's layer is copied and made durable.
func (l *runLayer) finish(first int, cpErr error) error {
	if l.checkpoints >= 0 && cpErr == nil {
		for n := first; n < l.next; n++ {
			if err := l.mergeCheckpoint(n); err != nil {
				return err
			}
		}
	} else {
		if err := l.merge(); err != nil {
			return err
		}
		if err := unix.Syncfs(l.staging); err != nil {
			return fmt.Errorf("sync the staging layer: %w", err)
		}
	}
	if l.onDisk {
		// A layer on disk is emptied once merged (its work directory is
		// left mode 000 by the kernel: PID 1 may remove it, the user not).
		for _, d := range []string{"upper", "work"} {
			if err := layers.RemoveAt(l.scratch, d); err != nil {
				return fmt.Errorf("clear the run's layer: %w", err)
			}
		}
	}
	if l.checkpoints < 0 || l.next <= 1 {
		return nil
	}
	if err := writeFileAt(l.checkpoints, MergedFile+".tmp", []byte(strconv.Itoa(l.next-1)+"\n")); err != nil {
		return fmt.Errorf("record the merge: %w", err)
	}
	if err := unix.Renameat(l.checkpoints, MergedFile+".tmp", l.checkpoints, MergedFile); err != nil {
		return fmt.Errorf("record the merge: %w", err)
	}
	return nil
}

// mergeCheckpoint merges checkpoint n's layer into the staging layer.
func (l *runLayer) mergeCheckpoint(n int) error {
	layer, err := unix.Openat(l.checkpoints, "c"+strconv.Itoa(n)+"/layer", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("merge checkpoint c%d: %w", n, err)
	}
	defer unix.Close(layer)
	if err := layers.MergeLinked(layer, l.staging, l.project); err != nil {
		return fmt.Errorf("merge checkpoint c%d: %w", n, err)
	}
	return nil
}

// changed reports whether the run's layer moved since the last look (sig,
// and the last walk): how PID 1 notices writes for the quiet checkpoint.
// The block and inode counts of a tmpfs miss a rewrite of the same size, a
// rename onto a file, a truncate and write: a walk of the layer sees them
// (the latest change time, see layers.Footprint). The walk costs in
// proportion to the files the layer holds, so for a large layer it is
// taken less often than every poll (at most a fifth of PID 1's time).
func (l *runLayer) changed(sig *[2]uint64) bool {
	now := l.signature()
	moved := now != *sig
	*sig = now
	if start := time.Now(); !start.Before(l.nextWalk) {
		walked := layers.Measure(l.upper)
		l.nextWalk = start.Add(5 * time.Since(start))
		moved = moved || walked != l.walked
		l.walked = walked
	}
	return moved
}

// signature is what the run's layer uses: blocks and inodes of its tmpfs,
// or, for a layer on disk (whose filesystem others write too), the bytes
// below it.
func (l *runLayer) signature() [2]uint64 {
	if l.onDisk {
		return [2]uint64{uint64(layers.DiskUsage(l.upper)), 0}
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(l.upper, &st); err != nil {
		return [2]uint64{}
	}
	return [2]uint64{st.Blocks - st.Bfree, st.Files - st.Ffree}
}

// writeFileAt writes data to a new file name in dir, unsynced (see checkpoint).
func writeFileAt(dir int, name string, data []byte) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// topOfHierarchies marks directory fd, on ext4, as the top of directory hierarchies (chattr +T):
// the inode allocator then places each directory made in it (a checkpoint) in a block group of
// its own choosing rather than its parent's, and a checkpoint's files with it. Placed with their
// parent, the files of a checkpoint written just after a session was discarded look for free
// inodes among the thousands it freed, which ext4 without a journal passes over one by one for
// half a minute after a deletion: 5,000 files then cost seconds, not milliseconds. Elsewhere it
// does nothing.
func topOfHierarchies(fd int) {
	const topDir = 0x00020000 // FS_TOPDIR_FL
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || flags&topDir != 0 {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|topDir))
}

// removeTree removes name below dir, a whole tree; missing is no error.
func removeTree(dir int, name string) error { return layers.RemoveAt(dir, name) }
