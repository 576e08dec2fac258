package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/history"
	"github.com/shadow-sandbox/shadow/session/store"
)

// What a run, a revert or a checkpoint that was cut short leaves behind (SPEC §12). A run's PID 1
// outlives the shadow that started it: killed, that shadow leaves PID 1 writing the run's last
// checkpoint and merging, holding the checkpoints' lock (layers.WriterFile). The next command
// waits for it and says so; nothing reads or merges a checkpoint while it is written, and one is
// published whole, by a rename. What a killed PID 1 or revert left unfinished is removed by the
// next command that may, which says what it freed.

// AwaitCheckpoints waits while the PID 1 of a run whose shadow died still writes or merges the
// run's checkpoints, saying so on w, and then reads the session again. It does nothing when no
// run is active or its shadow lives (then its checkpoints are read as they are published).
func (s *Session) AwaitCheckpoints(w io.Writer) error {
	if s.Meta.Active == nil || s.RunActive() {
		return nil
	}
	if _, _, err := awaitWriter(s.CheckpointDir(), w); err != nil {
		return err
	}
	// The run's jail is gone: what it left (checkpoints it did not merge, or none for what its
	// command wrote last) is settled before anything is read, by this command when it writes,
	// else when no other holds the project.
	if s.lock != nil {
		return s.closeStaleRun()
	}
	said := false
	for {
		lk, err := s.store.LockProject(s.Meta.Project, store.LockOptions{Command: store.RecoveryCommand})
		if err == nil {
			if lk.Recovered != "" && w != nil {
				fmt.Fprintln(w, "shadow:", lk.Recovered)
			}
			err = s.closeStaleRunLocked(lk)
			lk.Release()
			if err == nil {
				return s.reload()
			}
			// Busy here is the session's own lock: a writer that took the session since (a
			// run that began) closes the ended run itself, as below.
		}
		if !errors.Is(err, store.ErrBusy) {
			return err
		}
		if err := s.reload(); err != nil {
			return err
		}
		if s.Meta.Active == nil || s.RunActive() || s.Meta.State != store.StateOpen {
			return nil
		}
		// Another command holds the project and closes the run now (it merges what the
		// run's checkpoints hold): what is staged is read once it is done.
		if !said && w != nil {
			fmt.Fprintf(w, "shadow: waiting for another shadow to stage the checkpoints of the run that ended (%s)…\n", s.store.holder(s.Meta.Project))
			said = true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitWriter waits until no PID 1 holds the checkpoints' lock of dir, saying on w (nil: nowhere)
// whom it waits for, and returns whether it waited and what the lock file says then.
func awaitWriter(dir string, w io.Writer) (bool, layers.WriterState, error) {
	f, err := os.Open(filepath.Join(dir, layers.WriterFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, layers.WriterState{}, nil
	}
	if err != nil {
		return false, layers.WriterState{}, fmt.Errorf("open the checkpoints' lock: %w", err)
	}
	defer f.Close()
	waited := false
	err = store.FlockRetry(f, unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		waited = true
		if w != nil {
			fmt.Fprintf(w, "shadow: waiting for %s…\n", describeWriter(dir, readWriter(f)))
		}
		err = store.FlockRetry(f, unix.LOCK_SH)
	}
	if err != nil {
		return waited, layers.WriterState{}, fmt.Errorf("wait for the checkpoints' lock: %w", err)
	}
	return waited, readWriter(f), nil
}

func readWriter(f *os.File) layers.WriterState {
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, 0)
	return layers.ParseWriter(buf[:n])
}

// describeWriter says what the PID 1 holding the checkpoints' lock of dir is doing: writing a
// checkpoint (c<N>.tmp), merging the ones the staging layer does not hold yet, or still ending
// the run's command.
func describeWriter(dir string, ws layers.WriterState) string {
	by := "the jail of a run whose shadow ended"
	if ws.PID > 0 {
		by = fmt.Sprintf("process %d", ws.PID)
	}
	if tmp := unfinishedCheckpoints(dir); len(tmp) > 0 {
		return fmt.Sprintf("checkpoint %s being written by %s", strings.TrimSuffix(tmp[len(tmp)-1], ".tmp"), by)
	}
	cps, _ := history.ReadCheckpoints(dir)
	done, _ := history.Merged(dir)
	if len(cps) > 0 && cps[len(cps)-1].N > done {
		return fmt.Sprintf("checkpoint %s being merged by %s", cps[len(cps)-1].ID, by)
	}
	return fmt.Sprintf("the last checkpoint of the run, to be written by %s", by)
}

// unfinishedCheckpoints lists the checkpoints of dir being written or left unfinished
// (c<N>.tmp), oldest first.
func unfinishedCheckpoints(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".tmp"); ok {
			if _, ok := history.CheckpointNumber(id); ok {
				out = append(out, e.Name())
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		na, _ := history.CheckpointNumber(strings.TrimSuffix(a, ".tmp"))
		nb, _ := history.CheckpointNumber(strings.TrimSuffix(b, ".tmp"))
		return na - nb
	})
	return out
}

// settleRun makes the session whole after a run's jail is gone, or waits until it is: it merges
// the checkpoints PID 1 did not merge, and marks the session incomplete when PID 1 ended before
// all the run wrote was in a checkpoint. A checkpoint PID 1 did not finish writing is never
// merged; the next command that takes the project's lock removes it, and says so (tidy).
func (s *Session) settleRun() error {
	dir := s.CheckpointDir()
	_, ws, err := awaitWriter(dir, nil)
	if err != nil {
		return err
	}
	if _, err := s.layers().MergeCheckpoints(); err != nil {
		return err
	}
	if !ws.Unfinished() {
		return nil
	}
	since := "it started"
	if cps, err := history.ReadCheckpoints(dir); err == nil && len(cps) > 0 {
		last := cps[len(cps)-1]
		if last.Trigger == layers.CheckpointRunEnd && s.Meta.Active != nil && !last.Time.Before(s.Meta.Active.Start) {
			// PID 1 was killed after it published the run's last checkpoint and before it
			// said so: nothing is lost.
			return os.Truncate(filepath.Join(dir, layers.WriterFile), 0)
		}
		since = "checkpoint " + last.ID
	}
	if err := s.MarkIncomplete(fmt.Sprintf("the jail of a run (process %d) was killed before the run's last checkpoint was written; what the run wrote after %s is not staged", ws.PID, since)); err != nil {
		return err
	}
	// Said once: the next run's PID 1 starts the file again.
	return os.Truncate(filepath.Join(dir, layers.WriterFile), 0)
}

// removeUnfinishedCheckpoints removes the checkpoints whose writer died before it published them
// (c<N>.tmp), unless a PID 1 holds the checkpoints' lock (it is writing one). It says what it
// freed.
func (s *Session) removeUnfinishedCheckpoints() ([]string, error) {
	dir := s.CheckpointDir()
	tmp := unfinishedCheckpoints(dir)
	if len(tmp) == 0 || writerBusy(dir) {
		return nil, nil
	}
	var notes []string
	for _, name := range tmp {
		n, err := removeLeftover(filepath.Join(dir, name))
		if err != nil {
			return notes, fmt.Errorf("remove the unfinished checkpoint %s: %w", strings.TrimSuffix(name, ".tmp"), err)
		}
		notes = append(notes, fmt.Sprintf("removed an unfinished checkpoint %s (%s)", strings.TrimSuffix(name, ".tmp"), english.Count(n, "entry")))
	}
	return notes, nil
}

// writerBusy reports whether a PID 1 holds the checkpoints' lock of dir.
func writerBusy(dir string) bool {
	f, err := os.Open(filepath.Join(dir, layers.WriterFile))
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(store.FlockRetry(f, unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
}

// tidy removes what an interrupted command left in the session: the staging layer a revert was
// building (upper.revert), the one an undone revert replaced (upper.reverted), and checkpoints
// their writer did not finish. It returns what it freed, one sentence each.
func (s *Session) tidy() ([]string, error) {
	var notes []string
	for _, l := range []struct{ dir, what string }{
		{s.UpperDir() + ".revert", "an unfinished revert"},
		{s.UpperDir() + ".reverted", "what an unfinished revert --undo replaced"},
	} {
		if _, err := os.Lstat(l.dir); err != nil {
			continue
		}
		n, err := removeLeftover(l.dir)
		if err != nil {
			return notes, fmt.Errorf("remove %s %s: %w", l.what, l.dir, err)
		}
		notes = append(notes, fmt.Sprintf("removed %s (%s)", l.what, english.Count(n, "entry")))
	}
	more, err := s.removeUnfinishedCheckpoints()
	return append(notes, more...), err
}

// removeLeftover removes the tree at dir, whose directories may be closed to their owner, and
// returns how many entries it held.
func removeLeftover(dir string) (int, error) {
	history.OpenDirs(dir)
	n := -1 // dir itself
	_ = filepath.WalkDir(dir, func(_ string, _ fs.DirEntry, err error) error {
		if err == nil {
			n++
		}
		return nil
	})
	return max(n, 0), os.RemoveAll(dir)
}

// tidy is Session.tidy for the locked project's open session, as one sentence ("" when there was
// nothing to do).
func (l *ProjectLock) tidy() (string, error) {
	open, err := l.store.OpenSessions(l.project)
	if err != nil {
		return "", nil
	}
	var notes []string
	for _, s := range open {
		more, err := l.tidySession(s)
		notes = append(notes, more...)
		if err != nil {
			return strings.Join(notes, "; "), err
		}
	}
	return strings.Join(notes, "; "), nil
}

// tidySession removes what an interrupted revert or checkpoint left in the open session s, and
// closes its run if both its shadow and its jail are gone; a session whose staging lock another
// shadow holds (its run goes on) is left to that run.
func (l *ProjectLock) tidySession(s *Session) ([]string, error) {
	f, err := l.store.SessionLock(l.project, s.Meta.ID, s.Label(), store.LockOptions{Command: store.RecoveryCommand})
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	held := l.held[s.Meta.ID]
	l.held[s.Meta.ID] = f
	defer func() {
		if held != nil {
			l.held[s.Meta.ID] = held
		} else {
			delete(l.held, s.Meta.ID)
		}
	}()
	s.lock = l
	notes, err := s.tidy()
	if err != nil {
		return notes, err
	}
	// A run whose shadow and jail are both gone is closed now, for readers too: what its
	// checkpoints hold is staged before anything is read. One whose jail still writes is left to
	// AwaitCheckpoints, which says so while it waits.
	if s.Meta.Active != nil && !s.RunActive() && !writerBusy(s.CheckpointDir()) {
		err = s.closeStaleRun()
	}
	return notes, err
}

// holder names the shadow command holding project's writer lock, e.g. "run (pid 123)".
func (st *Store) holder(project string) string {
	f, err := os.Open(st.ProjectFile(project, "lock"))
	if err != nil {
		return "command"
	}
	defer f.Close()
	return store.ReadHolder(f)
}

// closeStaleRunLocked closes the session's interrupted run, if it still is one, through the
// project's writer lock lk (taken by a reader for the purpose).
func (s *Session) closeStaleRunLocked(lk *ProjectLock) error {
	w, err := lk.Get(s.Meta.ID)
	if err != nil || w.Meta.State != store.StateOpen {
		return err
	}
	return w.closeStaleRun()
}
