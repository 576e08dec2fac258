package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
)

// A session's checkpoints have a disk budget (SPEC §12): every checkpoint
// keeps what its step wrote, so a run that writes and deletes in a loop
// would grow the state directory without end. PID 1 counts what the
// session's checkpoints use on disk (each inode once, as du counts it);
// once a quiet checkpoint could take the history past the budget (it holds
// at most what the run's layer holds now, and room stays for the run's
// last checkpoint, at most the layer's size), quiet checkpoints stop for
// the rest of the run, and the host is told why. Prompt, manual and
// run-end checkpoints go on: the user asked for them, and the last one is
// how the run's writes reach the staging layer.

// DefaultCheckpointBudget is the budget of a session's checkpoints as a
// multiple of the run's layer size (--max-upper-bytes).
const DefaultCheckpointBudget = 4

// historyBudget is the budget of one run's PID 1.
type historyBudget struct {
	limit int64 // bytes; 0: none
	// used is what the session's checkpoints use on disk, once measured
	// (at the first quiet checkpoint: the walk of the history does not
	// delay the command's start).
	used     int64
	measured bool
	size     int64 // the run's layer's size
	stopped  bool  // quiet checkpoints stopped
}

// newHistoryBudget is the budget of the run's checkpoints: limit, or (0)
// DefaultCheckpointBudget times the layer's size; negative: none.
func newHistoryBudget(l *runLayer, limit int64) *historyBudget {
	b := &historyBudget{size: l.size()}
	switch {
	case limit > 0:
		b.limit = limit
	case limit == 0:
		b.limit = DefaultCheckpointBudget * b.size
	}
	return b
}

// wrote counts checkpoint cp, just written.
func (b *historyBudget) wrote(l *runLayer, cp *Checkpoint) {
	if b.limit <= 0 || !b.measured || cp == nil {
		return
	}
	if fd, err := unix.Openat(l.checkpoints, cp.ID, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		b.used += layers.Measure(fd).Bytes
		unix.Close(fd)
	}
}

// allowQuiet reports whether a quiet checkpoint may be taken now, and, the
// first time it may not, what to tell the user.
func (b *historyBudget) allowQuiet(l *runLayer) (bool, string) {
	if b.limit <= 0 || l.checkpoints < 0 {
		return true, ""
	}
	if !b.measured {
		b.used, b.measured = layers.Measure(l.checkpoints).Bytes, true
	}
	pending, _ := l.usage()
	if b.used+pending+b.size <= b.limit {
		return true, ""
	}
	if b.stopped {
		return false, ""
	}
	b.stopped = true
	return false, fmt.Sprintf("the session's checkpoints use %s of their budget of %s: no more quiet checkpoints in this run "+
		"(a crash loses what was written since the last one; prompt, manual and run-end checkpoints go on); "+
		"--checkpoint-budget sets the budget", humanBytes(b.used), humanBytes(b.limit))
}

// size is the run's layer's size: its tmpfs's, or the limit of a layer on
// disk (0: none).
func (l *runLayer) size() int64 {
	if l.onDisk {
		return l.limit
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(l.upper, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * st.Bsize
}
