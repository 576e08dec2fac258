package session

import (
	"fmt"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/session/store"
)

// A project's session index (store.ProjectFile(project, "sessions")) lists the IDs of its sessions,
// one a line, so that finding them reads the project's own sessions however many the store
// holds. Only a writer of the project changes it: LockProject writes it from a scan of every
// session when it is missing (a store from before it) or corrupt, and create adds a session to
// it before the session exists. Without it, or while it is corrupt, the project's sessions are
// found by that scan. Whatever the index says, a new session is started only when a scan of
// the store finds no open session of the project: an index that lost a line cannot make a
// second open session.

// projectSessions loads project's sessions, oldest first, with the errors of unreadable ones
// that may be the project's (with the index, only the sessions it lists).
func (st *Store) projectSessions(project string) ([]*Session, []error, error) {
	return st.projectSessionsWhere(project, nil)
}

// projectSessionsWhere is projectSessions, but loads only the sessions whose ID want accepts (nil:
// every one): a session's own files can say, more cheaply than its session.json, that it is not
// one the caller looks for.
func (st *Store) projectSessionsWhere(project string, want func(id string) bool) ([]*Session, []error, error) {
	ids, ok, err := st.ReadIndex(project)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		all, bad, err := st.allWhere(want)
		return ofProject(all, project), bad, err
	}
	found, bad := st.loadEach(ids, want)
	return ofProject(found, project), bad, nil
}

// ofProject is the sessions of project among all.
func ofProject(all []*Session, project string) []*Session {
	var out []*Session
	for _, s := range all {
		if s.Meta.Project == project {
			out = append(out, s)
		}
	}
	return out
}

// indexProject writes project's session index from a scan of every session, when there is none
// or it is corrupt; the caller holds the project's writer lock. While any session is unreadable
// it writes none: that session may be the project's. It is best effort: without the index, the
// project's sessions are found by the scan, so a store that cannot be written (a full disk)
// stays usable.
func (st *Store) indexProject(project string) {
	if _, ok, err := st.ReadIndex(project); ok || err != nil {
		return
	}
	st.rebuildIndex(project)
}

// rebuildIndex writes project's session index from a scan of every session, unless a session is
// unreadable (it may be the project's). Best effort, as indexProject.
func (st *Store) rebuildIndex(project string) {
	all, bad, err := st.all()
	if err != nil || len(bad) > 0 {
		return
	}
	var ids []string
	for _, s := range ofProject(all, project) {
		ids = append(ids, s.Meta.ID)
	}
	st.WriteIndex(project, ids)
}

// openByScan finds the project's open session named name ("": any) by a scan of every readable
// session, whatever the index says; with none, moved is the open session of this same
// directory at a path that is gone (see MovedError). Several open ones (name "") are all
// returned in open, oldest first.
func (st *Store) openByScan(project, name string) (open []*Session, moved *Session, err error) {
	all, _, err := st.all()
	if err != nil {
		return nil, nil, err
	}
	open = openNamed(ofProject(all, project), name)
	if len(open) > 0 {
		return open, nil, nil
	}
	return nil, movedHere(all, project), nil
}

// openNamed are the open sessions among sessions whose name is name ("": every open one).
func openNamed(sessions []*Session, name string) []*Session {
	var open []*Session
	for _, s := range sessions {
		if s.Meta.State == store.StateOpen && (name == "" || s.Meta.Name == name) {
			open = append(open, s)
		}
	}
	return open
}

// Current returns the project's open session, read-only, or ErrNoSession; when the project has
// several open sessions, a *SeveralOpenError that names them (the caller asks for --session).
// An unreadable session could be the project's open one, so when there is one, the error names
// it instead of ErrNoSession: a new session is never started over work that may still be staged.
func (st *Store) Current(project string) (*Session, error) {
	s, _, err := st.current(project, "")
	return s, err
}

// current is Current for the open session named name ("": the only open one), and says whether
// it was found only by a scan of the store (the index does not list it).
func (st *Store) current(project, name string) (*Session, bool, error) {
	sessions, bad, err := st.projectSessions(project)
	if err != nil {
		return nil, false, err
	}
	open := openNamed(sessions, name)
	scanned := false
	if len(open) == 0 {
		if len(bad) > 0 {
			return nil, false, bad[0]
		}
		// An index that lost a line (or all of them) must not hide an open session.
		var moved *Session
		if open, moved, err = st.openByScan(project, name); err != nil {
			return nil, false, err
		}
		if moved != nil && name == "" {
			return nil, false, &MovedError{Project: project, OldPath: moved.Meta.Project, ID: moved.Meta.ID}
		}
		scanned = true
	}
	switch {
	case len(open) == 1:
		return open[0], scanned, nil
	case len(open) > 1 && name == "":
		return nil, scanned, &SeveralOpenError{Project: project, Open: open}
	case len(open) > 1:
		// Two open sessions of one name: only a store written by hand makes them; the newest
		// is the one a run continues.
		return open[len(open)-1], scanned, nil
	}
	if name != "" {
		return nil, false, fmt.Errorf("project %s has no open session named %q: %w", project, name, store.ErrNoSession)
	}
	return nil, false, fmt.Errorf("project %s: %w", project, store.ErrNoSession)
}

// SeveralOpenError is Current's error when the project has more than one open session and none
// was named: the command cannot choose for the user.
type SeveralOpenError struct {
	Project string
	Open    []*Session
}

// Error names the open sessions and how to choose one.
func (e *SeveralOpenError) Error() string {
	return fmt.Sprintf("project %s has %s (%s); choose one with --session NAME", e.Project, english.Count(len(e.Open), "open session"), strings.TrimPrefix(describeOpen(e.Open), "open: "))
}

// Latest returns the project's most recent session in any state, read-only, or ErrNoSession.
func (st *Store) Latest(project string) (*Session, error) {
	sessions, _, err := st.projectSessions(project)
	if err != nil {
		return nil, err
	}
	if len(sessions) > 0 {
		return sessions[len(sessions)-1], nil
	}
	return nil, fmt.Errorf("project %s: %w", project, store.ErrNoSession)
}

// OpenSessions are the project's open sessions, oldest first, read-only.
func (st *Store) OpenSessions(project string) ([]*Session, error) {
	sessions, bad, err := st.projectSessions(project)
	if err != nil {
		return nil, err
	}
	var open []*Session
	for _, s := range sessions {
		if s.Meta.State == StateOpen {
			open = append(open, s)
		}
	}
	if len(open) == 0 && len(bad) > 0 {
		return nil, bad[0]
	}
	return open, nil
}

// Find is the session arg names in project, read-only: a session ID, or a name: the project's
// open session of that name, else its newest session of that name in any state.
func (st *Store) Find(project, arg string) (*Session, error) {
	if store.ValidID(arg) && st.Recorded(arg) {
		return st.Get(arg)
	}
	open, err := st.OpenSessions(project)
	if err != nil {
		return nil, err
	}
	for _, s := range open {
		if s.Meta.Name == arg {
			return s, nil
		}
	}
	// A session applied or discarded keeps its name: the newest of that name, for the commands
	// that read what it did (log, diff --checkpoint).
	if sessions, _, err := st.projectSessions(project); err == nil {
		for i := len(sessions) - 1; i >= 0; i-- {
			if sessions[i].Meta.Name == arg {
				return sessions[i], nil
			}
		}
	}
	return nil, fmt.Errorf("project %s has no session named %q (%s)", project, arg, describeOpen(open))
}

// describeOpen names the open sessions, for a message: "open: claude (20261201-…), 20261202-…",
// or "none is open".
func describeOpen(open []*Session) string {
	if len(open) == 0 {
		return "none is open"
	}
	parts := make([]string, len(open))
	for i, s := range open {
		parts[i] = s.Label()
	}
	return "open: " + strings.Join(parts, ", ")
}

// HasID reports whether arg is the ID of a session the store holds (rather than a name).
func (st *Store) HasID(arg string) bool { return store.ValidID(arg) && st.Recorded(arg) }

// CheckName says what is wrong with name as a session's name, nil when nothing: a short word of
// lower-case letters, digits, '.', '_' and '-', starting with a letter or digit, not shaped like
// a session ID.
func CheckName(name string) error {
	if name == "" || len(name) > 40 {
		return fmt.Errorf("session name %q: give 1 to 40 characters", name)
	}
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')) {
			return fmt.Errorf("session name %q: use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	if store.IDPrefix(name) && len(name) >= 8 {
		return fmt.Errorf("session name %q looks like a session ID; choose a word (claude, codex, try-2)", name)
	}
	return nil
}
