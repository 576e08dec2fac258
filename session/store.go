// Package session keeps shadow's sessions: a Session ties one session's parts together and runs
// its lifecycle (a run begun, its pre-images taken, its checkpoints settled, its end recorded).
// Each part is a package of its own, readable alone:
//
//   - store: the state directory, each session's record, the project indexes and locks;
//   - changeset: the manifest, the pre-images and the change set read from the staging layer;
//   - apply: the plan, the journaled write, rollback and recovery, the review's decisions;
//   - history: the checkpoints, the tree at each step, revert;
//   - gitout: the commit of an apply and the branch of an export;
//   - config: the configuration a run starts from;
//   - projectfs and statefile: reading the project without following symlinks, and writing
//     the session's own files atomically;
//   - runner: the one run sequence the commands and the app share.
package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/gitout"
	"github.com/shadow-sandbox/shadow/session/history"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
	"golang.org/x/sys/unix"
)

// Store is the directory holding every session (package store), with the sessions it holds
// opened as Sessions.
type Store struct {
	*store.Store
}

// changeset.DiffBudget is the store's time limit on a line diff.
func (st *Store) diffBudget() time.Duration {
	if st == nil || st.Store == nil {
		return 0
	}
	return st.DiffBudget
}

// changeset.MaxDiffBytes is the store's limit on a file diffed line by line.
func (st *Store) maxDiffBytes() int64 {
	if st == nil || st.Store == nil || st.MaxDiffBytes <= 0 {
		return store.DefaultMaxDiffBytes
	}
	return st.MaxDiffBytes
}

// Session is one session of a project; it writes only when it was obtained through a writer lock.
type Session struct {
	store *Store
	dir   string
	Meta  store.Meta
	lock  *ProjectLock
	// protected extends DefaultProtected for this session's classification (config `protected`).
	protected []string
	// pre is the precapture of the active run, when Precapture started one.
	pre *precapture
	// hist is the session's history (layers), made on first use.
	hist *history.Layers
	// man is the session's manifest when this process recorded it (create), until the first load
	// of the bases: the session's first run uses it rather than read it back.
	man *changeset.Manifest
}

// SetProtected adds gitignore-style patterns (matched at any depth) to the protected paths used
// when this session's changes are classified: the config's `protected` key.
func (s *Session) SetProtected(patterns []string) {
	s.protected = append([]string(nil), patterns...)
}

// load reads one session's metadata.
func (st *Store) load(id string) (*Session, error) {
	m, err := st.ReadMeta(id)
	if err != nil {
		return nil, err
	}
	s := &Session{store: st, dir: st.SessionDir(id), Meta: m}
	s.dropEndedRun()
	return s, nil
}

// Get returns the session with the given id, read-only.
func (st *Store) Get(id string) (*Session, error) {
	return st.load(id)
}

// all loads every readable session, oldest first, with the errors of unreadable ones.
func (st *Store) all() ([]*Session, []error, error) {
	return st.allWhere(nil)
}

// allWhere is all, but loads only the sessions whose ID want accepts (nil: every one).
func (st *Store) allWhere(want func(id string) bool) ([]*Session, []error, error) {
	ids, err := st.IDs()
	if err != nil {
		return nil, nil, err
	}
	out, bad := st.loadEach(ids, want)
	return out, bad, nil
}

// loadEach loads the sessions with the given IDs that want accepts (nil: all), oldest first, with
// the errors of unreadable ones. A directory without session.json is a session whose creation was
// interrupted (never started): it is skipped.
func (st *Store) loadEach(ids []string, want func(id string) bool) ([]*Session, []error) {
	var out []*Session
	var bad []error
	for _, id := range ids {
		if want != nil && !want(id) {
			continue
		}
		if !st.Recorded(id) {
			continue
		}
		s, err := st.load(id)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Meta.Created.Before(out[j].Meta.Created) })
	return out, bad
}

// Info is one row of `shadow sessions`.
type Info struct {
	ID      string `json:"id"`
	Project string `json:"project"`
	// Name is the name the session was opened under ("" for the project's default session).
	Name        string      `json:"name,omitempty"`
	Created     time.Time   `json:"created"`
	Runs        int         `json:"runs"`
	Running     bool        `json:"running"`
	FilesStaged int         `json:"files_staged"`
	Network     int         `json:"network_requests"`
	State       store.State `json:"state"`
	// Incomplete says why some of a run's writes are missing from what is staged (Incomplete).
	Incomplete string `json:"incomplete,omitempty"`
	// DiskBytes is what the session's directory takes on disk (its layers, checkpoints,
	// pre-images and journal; a file linked twice counted once). An idle session holds no
	// memory: no process of it stays once its run ends.
	DiskBytes int64 `json:"disk_bytes"`
	// Gone says the open session's project is no longer at its path (moved, renamed or removed).
	Gone bool `json:"project_gone,omitempty"`
	// Error is set for a session whose files could not be read.
	Error string `json:"error,omitempty"`
}

// List describes every session, oldest first; unreadable sessions are listed with their error.
func (st *Store) List() ([]Info, error) {
	all, bad, err := st.all()
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(all)+len(bad))
	for _, s := range all {
		inf := Info{ID: s.Meta.ID, Project: s.Meta.Project, Name: s.Meta.Name, Created: s.Meta.Created, DiskBytes: diskUsage(s.dir),
			State: s.Meta.State, Running: s.RunActive(), Incomplete: s.Incomplete()}
		var errs []error
		runs, err := s.Runs()
		errs = append(errs, err)
		inf.Runs = len(runs)
		if a := s.Meta.Active; a != nil && !recorded(runs, a) {
			inf.Runs++
		}
		if s.Meta.State == store.StateOpen && s.ProjectGone() {
			inf.Gone = true
		} else if s.Meta.State == store.StateOpen {
			if cs, err := s.Changes(); err != nil {
				errs = append(errs, err)
			} else {
				inf.FilesStaged = len(cs.Changes)
			}
		}
		if err := errors.Join(errs...); err != nil {
			inf.Error = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		inf.Network = store.CountLines(filepath.Join(s.dir, "net.log"))
		out = append(out, inf)
	}
	for _, e := range bad {
		out = append(out, Info{Error: e.Error()})
	}
	return out, nil
}

// Dir is the session's directory.
func (s *Session) Dir() string { return s.dir }

// ID is the session's id.
func (s *Session) ID() string { return s.Meta.ID }

// Project is the absolute path of the session's project.
func (s *Session) Project() string { return s.Meta.Project }

// UpperDir is the overlay upper layer that stages the project's writes.
func (s *Session) UpperDir() string { return filepath.Join(s.dir, "upper") }

// WorkDir is the overlay work directory paired with UpperDir.
func (s *Session) WorkDir() string { return filepath.Join(s.dir, "work") }

// CacheDir is the session-scoped upper layer of the package caches; it is never reviewed.
func (s *Session) CacheDir() string { return filepath.Join(s.dir, "cache") }

// RuntimeDir holds the jail's sockets for this session; it is never reviewed.
func (s *Session) RuntimeDir() string { return filepath.Join(s.dir, "runtime") }

// NetLog is the file the network proxy appends one line per request to.
func (s *Session) NetLog() string { return filepath.Join(s.dir, "net.log") }

func (s *Session) baseDir() string    { return changeset.BaseDirOf(s.dir) }
func (s *Session) journalDir() string { return apply.JournalDirOf(s.dir) }

// writable reports an error unless the session was obtained through the project's writer lock.
func (s *Session) writable(op string) error {
	if !s.lock.holds(s.Meta.ID) {
		return fmt.Errorf("%s: session %s was opened read-only (take the project's writer lock first)", op, s.Meta.ID)
	}
	return nil
}

// saveMeta writes session.json atomically (temp file, fsync, rename, fsync dir).
func (s *Session) saveMeta() error {
	return store.WriteMeta(s.dir, s.Meta)
}

// reload re-reads session.json (another process may have changed it).
func (s *Session) reload() error {
	fresh, err := s.store.load(s.Meta.ID)
	if err != nil {
		return err
	}
	s.Meta = fresh.Meta
	return nil
}

// create makes a new open session of project; the caller holds the project's writer lock.
func (st *Store) create(project, name string, lk *ProjectLock) (*Session, error) {
	now := time.Now()
	id := store.NewID(now)
	dir := st.SessionDir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	// The manifest, a stat of every file of the project, is taken while git names the commit
	// and the session's directories are made.
	var man *changeset.Manifest
	recorded := make(chan error, 1)
	go func() {
		var err error
		man, err = changeset.RecordManifest(project, filepath.Join(dir, "manifest"), st.Root)
		recorded <- err
	}()
	s := &Session{store: st, dir: dir, lock: lk, Meta: store.Meta{Version: store.MetaVersion, ID: id, Project: project, Created: now.UTC(), State: store.StateOpen,
		BaseCommit: gitout.Head(project), Identity: store.IdentityOf(project), Name: name}}
	fail := func(err error) (*Session, error) {
		if recorded != nil {
			<-recorded
		}
		os.RemoveAll(dir)
		return nil, err
	}
	for _, d := range []string{s.UpperDir(), s.WorkDir(), s.baseDir(), s.journalDir(), s.CacheDir(), s.RuntimeDir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fail(fmt.Errorf("create session %s: %w", id, err))
		}
	}
	err := <-recorded
	recorded = nil
	if err != nil {
		return fail(fmt.Errorf("create session %s: %w", id, err))
	}
	s.man = man
	// The fsync of the directory that makes session.json's entry durable, last, covers this one too.
	if err := statefile.WriteFileReplace(filepath.Join(dir, "decisions.json"), []byte("{\"version\":1,\"files\":{}}\n"), 0o600, false); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(s.NetLog(), nil, 0o600); err != nil {
		return fail(fmt.Errorf("create session %s: %w", id, err))
	}
	if err := os.WriteFile(filepath.Join(dir, reserveFile), make([]byte, reserveBytes), 0o600); err != nil {
		return fail(fmt.Errorf("create session %s: %w", id, err))
	}
	// Indexed before it exists: an indexed directory without session.json is skipped.
	if err := st.AddToIndex(project, id); err != nil {
		return fail(err)
	}
	// session.json last: a directory without it is not a session.
	if err := s.saveMeta(); err != nil {
		return fail(err)
	}
	return s, nil
}

// reserveFile, in a session's directory, holds reserveBytes that discard frees before it records
// the session as discarded: on a disk the run filled before anything of it was staged, removing
// what is staged frees nothing, and the new session.json still needs room.
const (
	reserveFile  = "reserve"
	reserveBytes = 64 << 10
)

// Discard drops the session's staged changes and marks it discarded; applied files stay applied.
func (s *Session) Discard() error {
	if err := s.writable("discard"); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	if s.RunActive() {
		return fmt.Errorf("discard session %s: a run is active (pid %d); wait for it to end", s.Meta.ID, s.Meta.Active.PID)
	}
	if s.Meta.State == store.StateDiscarded {
		return fmt.Errorf("discard session %s: already discarded", s.Meta.ID)
	}
	// What is dropped is removed first: on a full disk, that makes the room that recording the
	// session as discarded needs. Killed in between, the session is open with nothing staged.
	for _, d := range []string{s.UpperDir(), s.WorkDir(), s.CacheDir(), s.RuntimeDir(), s.CheckpointDir(), s.revertedDir(),
		filepath.Join(s.dir, incompleteFile), filepath.Join(s.dir, reserveFile)} {
		if err := store.RemoveAllWritable(d); err != nil {
			return fmt.Errorf("discard session %s: remove %s: %w", s.Meta.ID, d, err)
		}
	}
	s.Meta.State = store.StateDiscarded
	s.Meta.Closed = time.Now().UTC()
	s.Meta.Active = nil
	if err := s.saveMeta(); err != nil {
		return fmt.Errorf("discard session %s: its staged changes are removed, but it could not be marked discarded: %w", s.Meta.ID, ExplainFull(err, s.store.Root))
	}
	return nil
}

// Abandon removes a session that was opened for a run that was then refused (the app's preflight
// blocked it): it must never have run, staged or applied anything. Nothing of it is left, and the
// project's index forgets it.
func (s *Session) Abandon() error {
	if err := s.writable("abandon"); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	runs, err := s.Runs()
	if err != nil {
		return err
	}
	empty, err := projectfs.EmptyDir(s.UpperDir())
	if err != nil {
		return err
	}
	if len(runs) > 0 || s.Meta.Active != nil || len(s.Meta.Applies) > 0 || !empty {
		return fmt.Errorf("session %s has runs or staged changes; it is kept", s.Meta.ID)
	}
	// session.json first: a directory without it is no session, whatever else is left.
	if err := os.Remove(filepath.Join(s.dir, "session.json")); err != nil {
		return fmt.Errorf("remove session %s: %w", s.Meta.ID, err)
	}
	if err := store.RemoveAllWritable(s.dir); err != nil {
		return fmt.Errorf("remove session %s: %w", s.Meta.ID, err)
	}
	if s.lock.holdsProject() {
		// Only a writer of the project changes its index; without the project's lock the
		// line stays, naming a directory that no longer holds a session (which is skipped).
		s.store.rebuildIndex(s.Meta.Project)
	}
	return nil
}

// Open opens (creating if needed) the store rooted at root.
func Open(root string) (*Store, error) {
	st, err := store.Open(root)
	if err != nil {
		return nil, err
	}
	return &Store{st}, nil
}

// Name is the name the session was opened under ("" for the project's default session).
func (s *Session) Name() string { return s.Meta.Name }

// Label names the session for a person: its name and ID, or its ID alone.
func (s *Session) Label() string {
	if s.Meta.Name == "" {
		return s.Meta.ID
	}
	return s.Meta.Name + " (" + s.Meta.ID + ")"
}

// diskUsage is the space the tree at dir takes on disk: the blocks of every entry, an inode
// linked more than once (a checkpoint's file and the staging layer's) counted once.
func diskUsage(dir string) int64 {
	seen := map[uint64]bool{}
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		total += st.Blocks * 512
		return nil
	})
	return total
}
