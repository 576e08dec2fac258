package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/store"
)

// ProjectGone reports whether the session's project directory no longer exists at the path the
// session names (moved, renamed or removed).
func (s *Session) ProjectGone() bool {
	_, err := os.Lstat(s.Meta.Project)
	return errors.Is(err, fs.ErrNotExist)
}

// MovedError says that a project has no open session at its path, but an open session was
// started for this same directory at a path that no longer exists: the project was moved or
// renamed, and `shadow sessions move` gives the session its new path.
type MovedError struct {
	Project string // where the project is now
	OldPath string // where it was when the session started
	ID      string // the session
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("project %s has no session, but it is the directory that was %s when session %s started (moved or renamed)",
		quote.Path(e.Project), quote.Path(e.OldPath), e.ID)
}

// movedHere is the open session, among all, whose project is gone from its path and was this
// same directory (by identity), nil when there is none.
func movedHere(all []*Session, project string) *Session {
	id := store.IdentityOf(project)
	if id == nil {
		return nil
	}
	for i := len(all) - 1; i >= 0; i-- {
		s := all[i]
		if s.Meta.State != store.StateOpen || s.Meta.Identity == nil || *s.Meta.Identity != *id || s.Meta.Project == project {
			continue
		}
		if s.ProjectGone() {
			return s
		}
	}
	return nil
}

// Move gives session id the project's new path, after the project's directory was moved or
// renamed. to holds the writer lock of the new path and from that of the session's old one. The
// session must be open, its old path gone, and the new one the same directory (by device and
// inode) unless force is set.
func (st *Store) Move(id string, to, from *ProjectLock, force bool) (*Session, error) {
	s, err := st.load(id)
	if err != nil {
		return nil, err
	}
	dir := to.Project()
	switch {
	case s.Meta.State != store.StateOpen:
		return nil, fmt.Errorf("move session %s: it is %s; only an open session moves", id, s.Meta.State)
	case from.Project() != s.Meta.Project:
		return nil, fmt.Errorf("move session %s: it belongs to %s, not %s", id, quote.Path(s.Meta.Project), quote.Path(from.Project()))
	case s.Meta.Project == dir:
		return nil, fmt.Errorf("move session %s: it is already the session of %s", id, quote.Path(dir))
	case !s.ProjectGone():
		return nil, fmt.Errorf("move session %s: its project %s still exists; a session moves only with its project", id, quote.Path(s.Meta.Project))
	case s.RunActive():
		return nil, fmt.Errorf("move session %s: a run is active (pid %d); wait for it to end", id, s.Meta.Active.PID)
	}
	now := store.IdentityOf(dir)
	if now == nil {
		return nil, fmt.Errorf("move session %s: %s is not a directory", id, quote.Path(dir))
	}
	if !force && (s.Meta.Identity == nil || *s.Meta.Identity != *now) {
		return nil, fmt.Errorf("move session %s: %s is not the directory that was %s (a copy, or another project): pass --force to move it anyway, and its staged changes are compared with what is there", id, quote.Path(dir), quote.Path(s.Meta.Project))
	}
	cur, err := to.openSession(s.Meta.Name)
	var several *SeveralOpenError
	if errors.As(err, &several) {
		cur, err = several.Open[0], nil
	}
	if err == nil && cur != nil {
		return nil, fmt.Errorf("move session %s: %s already has an open session %s; apply or discard it first", id, quote.Path(dir), cur.Label())
	}
	s.Meta.Project, s.Meta.Identity = dir, now
	if err := s.saveMeta(); err != nil {
		return nil, err
	}
	st.rebuildIndex(dir)
	st.rebuildIndex(from.Project())
	return to.writer(s)
}
