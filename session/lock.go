package session

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/shadow-sandbox/shadow/session/store"
)

// ProjectLock is the exclusive writer lock of one project (flock on a file under the store's
// locks/), and the staging locks of the sessions obtained through it. apply, discard and the
// start of a run hold the project's lock; a run then keeps only its session's lock (HandOver),
// so that sessions of one project run at once, each staging alone, while one apply at a time
// writes the project. Readers never wait on either. Short state changes additionally take the
// project's state lock, which readers share.
type ProjectLock struct {
	store   *Store
	project string
	f       *os.File
	opts    store.LockOptions
	// held are the staging locks of the sessions obtained through this lock, by session ID.
	held map[string]*os.File
	// Recovered says what was done about an interrupted apply or rollback found when the lock was
	// taken, and what an interrupted revert or checkpoint left that was removed; empty when there
	// was none.
	Recovered string
}

// LockProject takes the project's writer lock, then finishes or rolls back any apply that a
// crash interrupted and removes what an interrupted revert or checkpoint left in the project's
// open sessions that no run holds (Recovered says which).
func (st *Store) LockProject(project string, opts store.LockOptions) (*ProjectLock, error) {
	f, err := st.WriterLock(project, opts)
	if err != nil {
		return nil, err
	}
	lk := &ProjectLock{store: st, project: project, f: f, opts: opts, held: map[string]*os.File{}}
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

// Release gives the project's lock up, and every session's lock taken through it.
func (l *ProjectLock) Release() error {
	if l == nil {
		return nil
	}
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f = nil
	}
	for id, f := range l.held {
		f.Close()
		delete(l.held, id)
	}
	return err
}

// HandOver gives up the project's writer lock but keeps s's staging lock: a run holds its
// session, not the project, so that another session of the project can run or be applied
// meanwhile. s stays writable for what a run writes (its record, its staging, its checkpoints);
// applying needs the project's lock again. Release gives up the rest.
func (l *ProjectLock) HandOver(s *Session) error {
	if l.held[s.Meta.ID] == nil {
		return fmt.Errorf("hand over session %s: its lock is not held", s.Meta.ID)
	}
	for id, f := range l.held {
		if id != s.Meta.ID {
			f.Close()
			delete(l.held, id)
		}
	}
	if l.f != nil {
		err := l.f.Close()
		l.f = nil
		return err
	}
	return nil
}

// withProject runs fn under the project's writer lock: the one l holds, or, when l keeps only
// its sessions' locks (a run's or a review's, handed over), the project's taken for fn alone,
// waiting for another session's apply to end. No one waits for a session while holding the
// project, so waiting here for the project while holding a session deadlocks no one.
func (l *ProjectLock) withProject(fn func() error) error {
	if l == nil {
		return fmt.Errorf("the project's writer lock is not held")
	}
	if l.holdsProject() {
		return fn()
	}
	opts := l.opts
	opts.Wait = true
	f, err := l.store.WriterLock(l.project, opts)
	if err != nil {
		return err
	}
	l.f = f
	defer func() {
		if l.f != nil {
			l.f.Close()
			l.f = nil
		}
	}()
	return fn()
}

// holdsProject reports whether the project's writer lock is held.
func (l *ProjectLock) holdsProject() bool { return l != nil && l.f != nil }

// holds reports whether the staging lock of session id is held.
func (l *ProjectLock) holds(id string) bool { return l != nil && l.held[id] != nil }

// writer makes s writable through l: it takes s's staging lock, refusing (a *BusyError naming
// the run) while another shadow holds it. With --wait it waits for it, without the project's
// lock meanwhile (no one waits for a session while holding the project), then takes the
// project's lock again and rereads s.
func (l *ProjectLock) writer(s *Session) (*Session, error) {
	if l.holds(s.Meta.ID) {
		s.lock = l
		return s, nil
	}
	if !l.holdsProject() {
		return nil, fmt.Errorf("session %s: the project lock was released", s.Meta.ID)
	}
	// A session's lock is held for as long as its run goes: never Brief, as the project's may be.
	held := l.opts
	held.Brief = false
	nowait := held
	nowait.Wait = false
	f, err := l.store.SessionLock(l.project, s.Meta.ID, s.Label(), nowait)
	if errors.Is(err, store.ErrBusy) && l.opts.Wait {
		l.f.Close()
		l.f = nil
		if f, err = l.store.SessionLock(l.project, s.Meta.ID, s.Label(), held); err != nil {
			return nil, err
		}
		if l.f, err = l.store.WriterLock(l.project, l.opts); err != nil {
			f.Close()
			return nil, err
		}
		if err := s.reload(); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	l.held[s.Meta.ID] = f
	s.lock = l
	return s, nil
}

// Project is the locked project's path.
func (l *ProjectLock) Project() string { return l.project }

// Current returns the project's only open session, writable, or ErrNoSession; several open
// sessions are a *SeveralOpenError (see CurrentNamed).
func (l *ProjectLock) Current() (*Session, error) { return l.CurrentNamed("") }

// CurrentNamed returns the project's open session named name ("": the only open one), writable,
// or ErrNoSession.
func (l *ProjectLock) CurrentNamed(name string) (*Session, error) {
	s, err := l.openSession(name)
	if err != nil {
		return nil, err
	}
	if s == nil {
		if name != "" {
			return nil, fmt.Errorf("project %s has no open session named %q: %w", l.project, name, store.ErrNoSession)
		}
		return nil, fmt.Errorf("project %s: %w", l.project, store.ErrNoSession)
	}
	return l.writer(s)
}

// Create starts a new session of the project, recording its manifest. It refuses while the
// project has an open session.
func (l *ProjectLock) Create() (*Session, error) { return l.CreateNamed("") }

// CreateNamed starts a new session of the project named name, recording its manifest. It refuses
// while the project has an open session of that name (any open session, for name "").
func (l *ProjectLock) CreateNamed(name string) (*Session, error) {
	if !l.holdsProject() {
		return nil, fmt.Errorf("create session: the project lock was released")
	}
	cur, err := l.openSession(name)
	// Asked for a new session, the user has chosen not to bring a moved one along.
	var moved *MovedError
	var several *SeveralOpenError
	if errors.As(err, &several) {
		cur, err = several.Open[len(several.Open)-1], nil
	}
	if err != nil && !errors.As(err, &moved) {
		return nil, err
	}
	if cur != nil {
		if name != "" {
			return nil, fmt.Errorf("project %s already has an open session named %q (%s); run `shadow apply --session %s` or `shadow discard --session %s` first, or continue it without --new", l.project, name, cur.Meta.ID, name, name)
		}
		return nil, fmt.Errorf("project %s already has an open session %s; run `shadow apply` or `shadow discard` first, or continue it without --new", l.project, cur.Meta.ID)
	}
	s, err := l.store.create(l.project, name, l)
	if err != nil {
		return nil, err
	}
	return l.writer(s)
}

// openSession is the project's open session named name ("": the only one), read-only, or nil.
// One found only by a scan of the store (the index lost it) is put back in the index.
func (l *ProjectLock) openSession(name string) (*Session, error) {
	cur, scanned, err := l.store.current(l.project, name)
	if errors.Is(err, store.ErrNoSession) {
		return nil, nil
	}
	if scanned {
		l.store.rebuildIndex(l.project)
	}
	return cur, err
}

// CurrentOrCreate continues the project's only open session, or starts one when there is none.
func (l *ProjectLock) CurrentOrCreate() (*Session, bool, error) { return l.CurrentOrCreateNamed("") }

// CurrentOrCreateNamed continues the project's open session named name ("": the only open one),
// or starts one of that name when there is none.
func (l *ProjectLock) CurrentOrCreateNamed(name string) (*Session, bool, error) {
	s, err := l.openSession(name)
	if err != nil {
		return nil, false, err
	}
	if s != nil {
		s, err = l.writer(s)
		return s, false, err
	}
	if !l.holdsProject() {
		return nil, false, fmt.Errorf("create session: the project lock was released")
	}
	if s, err = l.store.create(l.project, name, l); err != nil {
		return nil, false, err
	}
	s, err = l.writer(s)
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
	return l.writer(s)
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
