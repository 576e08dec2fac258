package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
)

// lockWriter takes, for PID 1, the lock of the session's checkpoints (see layers.WriterFile) in
// the checkpoint directory dir, and empties the file for this run. The lock lasts as long as the
// descriptor, which no child inherits: it goes when PID 1 ends, however it ends.
func lockWriter(dir int) (int, error) {
	fd, err := unix.Openat(dir, layers.WriterFile, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("open the checkpoint lock: %w", err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil {
		err = unix.Ftruncate(fd, 0)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("lock the checkpoints: %w", err)
	}
	return fd, nil
}

// markWritten records in the lock file fd that everything the run wrote is in a checkpoint or
// the staging layer: a PID 1 killed from now on loses nothing. Like the checkpoints it speaks of,
// it is not synced: no kill of a process loses the page cache (see runLayer.checkpoint).
func markWritten(fd int) {
	if fd < 0 {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	_, _ = unix.Pwrite(fd, []byte(layers.WriterWritten+"\n"), st.Size)
}

// noteWriter records, for the host, which process holds the checkpoint lock of dir: PID 1 of the
// jail, pid on the host, once it is ready (it took the lock before).
func noteWriter(dir string, pid int) {
	if dir == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, layers.WriterFile), os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString("pid " + strconv.Itoa(pid) + "\n")
}
