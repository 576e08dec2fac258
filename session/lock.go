package session

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/shadow-sandbox/shadow/session/store"
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

// LockProject takes the project's writer lock, then finishes or rolls back any apply that a
// crash interrupted and removes what an interrupted revert or checkpoint left in the open session
// (Recovered says which).
func (st *Store) LockProject(project string, opts store.LockOptions) (*ProjectLock, error) {
	f, err := st.WriterLock(project, opts)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("project %s: %w", l.project, store.ErrNoSession)
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
	if errors.Is(err, store.ErrNoSession) {
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
	lk, err := st.LockProject(project, store.LockOptions{Command: store.RecoveryCommand})
	if err != nil {
		if errors.Is(err, store.ErrBusy) {
			return "", nil
		}
		return "", err
	}
	defer lk.Release()
	return lk.Recovered, nil
}
