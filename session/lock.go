package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProjectLock is the exclusive writer lock of one project (flock on a file under the store's
// locks/). run, shell, apply and discard hold it for as long as they write; readers never wait on
// it. Short state changes additionally take the project's state lock, which readers share.
type ProjectLock struct {
	store   *Store
	project string
	f       *os.File
	// Recovered says what was done about an interrupted apply or rollback found when the lock was
	// taken, and what an interrupted revert or checkpoint left that was removed; empty when there
	// was none.
	Recovered string
}

// ErrBusy matches (errors.Is) the error of LockProject when another writer holds the project.
var ErrBusy = errors.New("project is busy")

// BusyError says which shadow command holds the project's writer lock.
type BusyError struct {
	Project string
	Holder  string // e.g. "run (pid 123)"
}

// Error says which project is busy and with what.
func (e *BusyError) Error() string {
	return fmt.Sprintf("project %s is busy: another shadow %s is writing to it; wait for it to finish (or pass --wait)", e.Project, e.Holder)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// LockOptions tune LockProject.
type LockOptions struct {
	// Wait blocks until another writer releases the project instead of failing at once.
	Wait bool
	// Command names the operation holding the lock (run, apply...), shown to a second writer.
	Command string
}

// projectFile is one of the store's files of project: its locks and its session index.
func (st *Store) projectFile(project, kind string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(st.Root, "locks", hex.EncodeToString(sum[:8])+"."+kind)
}

// LockProject takes the project's writer lock, then finishes or rolls back any apply that a
// crash interrupted and removes what an interrupted revert or checkpoint left in the open session
// (Recovered says which).
func (st *Store) LockProject(project string, opts LockOptions) (*ProjectLock, error) {
	path := st.projectFile(project, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock project %s: open %s: %w", project, path, err)
	}
	how := unix.LOCK_EX
	if !opts.Wait {
		how |= unix.LOCK_NB
	}
	err = flockRetry(f, how)
	// A command that only reads holds the lock for a moment to put right what a crash left
	// (Recover, AwaitCheckpoints): a writer that finds it there waits for it, for a while, rather
	// than failing as busy because a `shadow log` ran at the same instant.
	for waited := time.Duration(0); errors.Is(err, unix.EWOULDBLOCK) && holderCommand(f) == recoveryCommand && waited < recoveryWait; waited += 10 * time.Millisecond {
		time.Sleep(10 * time.Millisecond)
		err = flockRetry(f, how)
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		holder := readHolder(f)
		f.Close()
		return nil, &BusyError{Project: project, Holder: holder}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock project %s: %w", project, err)
	}
	cmd := opts.Command
	if cmd == "" {
		cmd = "command"
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(fmt.Sprintf("%d %s %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), cmd)), 0)
	}
	lk := &ProjectLock{store: st, project: project, f: f}
	st.indexProject(project)
	msg, err := lk.recover()
	if err != nil {
		lk.Release()
		return nil, err
	}
	tidied, err := lk.tidy()
	if err != nil {
		lk.Release()
		return nil, err
	}
	if msg != "" && tidied != "" {
		msg += "; "
	}
	lk.Recovered = msg + tidied
	return lk, nil
}

// recoveryCommand names the lock's holder when a command that only reads takes the writer lock to
// finish what a crash interrupted; a writer waits up to recoveryWait for it.
const (
	recoveryCommand = "recovery"
	recoveryWait    = 30 * time.Second
)

// holderCommand is the command named in a lock file ("run", "recovery"), "" when none is.
func holderCommand(f *os.File) string {
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, 0)
	if fields := strings.Fields(string(buf[:n])); len(fields) >= 3 {
		return fields[2]
	}
	return ""
}

// readHolder describes the process named in a lock file, e.g. "run (pid 123)".
func readHolder(f *os.File) string {
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, 0)
	fields := strings.Fields(string(buf[:n]))
	if len(fields) >= 3 {
		if pid, err := strconv.Atoi(fields[0]); err == nil {
			return fmt.Sprintf("%s (pid %d)", fields[2], pid)
		}
	}
	return "command"
}

// Release gives the lock up.
func (l *ProjectLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Project is the locked project's path.
func (l *ProjectLock) Project() string { return l.project }

// Current returns the project's open session, writable, or ErrNoSession.
func (l *ProjectLock) Current() (*Session, error) {
	s, err := l.openSession()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("project %s: %w", l.project, ErrNoSession)
	}
	s.lock = l
	return s, nil
}

// Create starts a new session of the project, recording its manifest. It refuses while the
// project has an open session.
func (l *ProjectLock) Create() (*Session, error) {
	if l.f == nil {
		return nil, fmt.Errorf("create session: the project lock was released")
	}
	cur, err := l.openSession()
	// Asked for a new session, the user has chosen not to bring a moved one along.
	var moved *MovedError
	if err != nil && !errors.As(err, &moved) {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("project %s already has an open session %s; run `shadow apply` or `shadow discard` first, or continue it without --new", l.project, cur.Meta.ID)
	}
	return l.store.create(l.project, l)
}

// openSession is the project's open session, read-only, or nil. One found only by a scan of the
// store (the index lost it) is put back in the index.
func (l *ProjectLock) openSession() (*Session, error) {
	cur, scanned, err := l.store.current(l.project)
	if errors.Is(err, ErrNoSession) {
		return nil, nil
	}
	if scanned {
		l.store.rebuildIndex(l.project)
	}
	return cur, err
}

// CurrentOrCreate continues the project's open session, or starts one when there is none.
func (l *ProjectLock) CurrentOrCreate() (*Session, bool, error) {
	s, err := l.openSession()
	if err != nil {
		return nil, false, err
	}
	if s != nil {
		s.lock = l
		return s, false, nil
	}
	if l.f == nil {
		return nil, false, fmt.Errorf("create session: the project lock was released")
	}
	s, err = l.store.create(l.project, l)
	return s, err == nil, err
}

// Get returns the session with the given id, writable; it must belong to the locked project.
func (l *ProjectLock) Get(id string) (*Session, error) {
	s, err := l.store.load(id)
	if err != nil {
		return nil, err
	}
	if s.Meta.Project != l.project {
		return nil, fmt.Errorf("session %s belongs to project %s, not %s", id, s.Meta.Project, l.project)
	}
	s.lock = l
	return s, nil
}

// stateLock takes the project's short-lived state lock: exclusive while a writer changes staged
// state or the project, shared while a reader scans it.
func (st *Store) stateLock(project string, exclusive bool) (func(), error) {
	path := st.projectFile(project, "state")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state of %s: %w", project, err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state of %s: %w", project, err)
	}
	return func() { f.Close() }, nil
}

// RecoverAll is Recover for every project whose sessions have an apply or rollback to finish or
// undo, for the commands that are not about one project (sessions, doctor). Only the journals of
// the sessions are read to find them. It returns what it did, one sentence a project joined by
// "; ", "" when nothing.
func (st *Store) RecoverAll() (string, error) {
	sessions, _, err := st.allWhere(st.unsettled)
	if err != nil {
		return "", err
	}
	var msgs []string
	var errs []error
	done := map[string]bool{}
	for _, s := range sessions {
		if done[s.Meta.Project] {
			continue
		}
		done[s.Meta.Project] = true
		msg, err := st.Recover(s.Meta.Project)
		if err != nil {
			errs = append(errs, err)
		}
		if msg != "" {
			msgs = append(msgs, msg)
		}
	}
	return strings.Join(msgs, "; "), errors.Join(errs...)
}

// Recover finishes or undoes an apply or rollback that a crash interrupted, for commands that
// only read (diff, sessions, review): it takes the writer lock without waiting, and when another
// shadow holds it (that apply is not interrupted, it is running) does nothing. It returns what it
// did, "" when nothing.
func (st *Store) Recover(project string) (string, error) {
	lk, err := st.LockProject(project, LockOptions{Command: recoveryCommand})
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return "", nil
		}
		return "", err
	}
	defer lk.Release()
	return lk.Recovered, nil
}
