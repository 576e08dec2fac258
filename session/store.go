// Package session keeps shadow's sessions: the staging layer each run writes into, the manifest and
// pre-images that tell what the agent changed and whether the host changed too, the review decisions,
// and the journaled apply and rollback that move accepted changes into the project.
package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"golang.org/x/sys/unix"
)

// State is where a session is in its life: open (accepting runs), applied, or discarded.
type State string

// The states of a session.
const (
	StateOpen      State = "open"
	StateApplied   State = "applied"
	StateDiscarded State = "discarded"
)

// ErrNoSession is returned by Current when the project has no open session.
var ErrNoSession = errors.New("no open session")

const metaVersion = 1

// Meta is the content of a session's session.json.
type Meta struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Project string    `json:"project"`
	Created time.Time `json:"created"`
	State   State     `json:"state"`
	// LegacyRuns are the finished runs recorded here before they went to runsFile; kept as
	// they are, never added to.
	LegacyRuns []Run `json:"runs,omitempty"`
	// Active is the run in progress, if any; it is stale when its process is gone.
	Active *Run `json:"active,omitempty"`
	// Applies are the committed applies, oldest first (rolled-back ones included, marked).
	Applies []ApplyRecord `json:"applies,omitempty"`
	// Closed is when the session was applied or discarded.
	Closed time.Time `json:"closed,omitzero"`
	// BaseCommit is the commit HEAD named when the session started ("" outside a git repository,
	// or for a session of an older shadow): `shadow export` branches from it.
	BaseCommit string `json:"base_commit,omitempty"`
	// Identity is the project directory's device and inode when the session started (nil for a
	// session of an older shadow): a moved or renamed project is recognised by it.
	Identity *ProjectIdentity `json:"project_identity,omitempty"`
}

// Store is the directory holding every session ($XDG_STATE_HOME/shadow).
type Store struct {
	Root string
	// MaxDiffBytes bounds the text files diffed line by line (DefaultMaxDiffBytes when zero or
	// less); a larger one is never read for a diff and is decided as a whole file. Tests lower it
	// so that a "too large" file costs a few kilobytes.
	MaxDiffBytes int64
	// DiffBudget is the time a line diff may take (diffview's default when zero); tests shorten
	// it.
	DiffBudget time.Duration
}

// changeset.DiffBudget is the store's time limit on a line diff.
func (st *Store) diffBudget() time.Duration {
	if st == nil {
		return 0
	}
	return st.DiffBudget
}

// DefaultMaxDiffBytes is the largest text file the review and apply diff line by line.
const DefaultMaxDiffBytes = 64 << 20

// changeset.MaxDiffBytes is the store's limit on a file diffed line by line.
func (st *Store) maxDiffBytes() int64 {
	if st == nil || st.MaxDiffBytes <= 0 {
		return DefaultMaxDiffBytes
	}
	return st.MaxDiffBytes
}

// Session is one session of a project; it writes only when it was obtained through a writer lock.
type Session struct {
	store *Store
	dir   string
	Meta  Meta
	lock  *ProjectLock
	// protected extends DefaultProtected for this session's classification (config `protected`).
	protected []string
	// pre is the precapture of the active run, when Precapture started one.
	pre *precapture
	// checked holds, by checkpoint, the paths found damaged when its contents were checked
	// against its sums (see damage.go): once per command.
	checked map[string][]string
	// man is the session's manifest when this process recorded it (create), until the first load
	// of the bases: the session's first run uses it rather than read it back.
	man *changeset.Manifest
}

// SetProtected adds gitignore-style patterns (matched at any depth) to the protected paths used
// when this session's changes are classified: the config's `protected` key.
func (s *Session) SetProtected(patterns []string) {
	s.protected = append([]string(nil), patterns...)
}

// DefaultRoot is $XDG_STATE_HOME/shadow, or ~/.local/state/shadow when the variable is unset.
func DefaultRoot() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := os.Getenv("HOME")
		if home == "" || !filepath.IsAbs(home) {
			return "", errors.New("find the state directory: HOME is not set to an absolute path: set HOME, or XDG_STATE_HOME to a directory shadow may write (it keeps its sessions there)")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "shadow"), nil
}

// CheckStateDir tells whether root (see DefaultRoot) can hold shadow's sessions, without making
// anything: the directory, or its nearest existing parent, must be a directory this process may
// write. The error names XDG_STATE_HOME, the variable that moves it.
func CheckStateDir(root string) error {
	dir := root
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("state directory %s: %s is not a directory: set XDG_STATE_HOME to a directory shadow may write", root, dir)
			}
			break
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return fmt.Errorf("state directory %s: %w: set XDG_STATE_HOME to a directory shadow may write", root, err)
		}
		dir = parent
	}
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
		what := "cannot be written"
		if dir != root {
			what = "cannot be created"
		}
		return fmt.Errorf("state directory %s %s (%s: %v): set XDG_STATE_HOME to a directory shadow may write", root, what, dir, err)
	}
	return nil
}

// Open opens (creating if needed) the store rooted at root.
func Open(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open session store %s: %w", root, err)
	}
	for _, d := range []string{abs, filepath.Join(abs, "sessions"), filepath.Join(abs, "locks")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("open session store: create %s: %w (set XDG_STATE_HOME to a directory shadow may write)", d, err)
		}
	}
	return &Store{Root: abs}, nil
}

// ResolveProject turns --project (or the working directory when dir is empty) into the project's
// absolute, symlink-free path: the git top level containing dir, else dir itself.
func ResolveProject(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("project: find the working directory: %w", err)
		}
		dir = wd
		if top := gitTopLevel(wd); top != "" {
			dir = top
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("project %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("project %s does not exist", abs)
	case err != nil:
		return "", fmt.Errorf("project %s: %w", abs, err)
	case !fi.IsDir():
		return "", fmt.Errorf("project %s is not a directory", abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("project %s: resolve symlinks: %w", abs, err)
	}
	return real, nil
}

// gitTopLevel asks git for the top level of the work tree holding dir, falling back to walking up
// for a .git entry when git is not installed. It returns "" outside a work tree.
func gitTopLevel(dir string) string {
	if out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output(); err == nil {
		if top := strings.TrimRight(string(out), "\n"); top != "" {
			return top
		}
		return ""
	} else if _, lookErr := exec.LookPath("git"); lookErr == nil {
		return ""
	}
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func (st *Store) sessionsDir() string { return filepath.Join(st.Root, "sessions") }

// validID reports whether id has the shape of a session id, so that it is safe as a path element.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

func newID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// load reads one session's metadata.
func (st *Store) load(id string) (*Session, error) {
	if !validID(id) {
		return nil, fmt.Errorf("unknown session id %q", id)
	}
	dir := filepath.Join(st.sessionsDir(), id)
	data, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("unknown session id %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("session %s: corrupt session.json (%v); inspect or remove %s", id, err, dir)
	}
	if m.Version != metaVersion || m.ID != id || m.Project == "" {
		return nil, fmt.Errorf("session %s: corrupt session.json (bad version, id or project); inspect or remove %s", id, dir)
	}
	s := &Session{store: st, dir: dir, Meta: m}
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
	ents, err := os.ReadDir(st.sessionsDir())
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
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
		if _, err := os.Lstat(filepath.Join(st.sessionsDir(), id, "session.json")); errors.Is(err, fs.ErrNotExist) {
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
	ID          string    `json:"id"`
	Project     string    `json:"project"`
	Created     time.Time `json:"created"`
	Runs        int       `json:"runs"`
	Running     bool      `json:"running"`
	FilesStaged int       `json:"files_staged"`
	Network     int       `json:"network_requests"`
	State       State     `json:"state"`
	// Incomplete says why some of a run's writes are missing from what is staged (Incomplete).
	Incomplete string `json:"incomplete,omitempty"`
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
		inf := Info{ID: s.Meta.ID, Project: s.Meta.Project, Created: s.Meta.Created,
			State: s.Meta.State, Running: s.RunActive(), Incomplete: s.Incomplete()}
		var errs []error
		runs, err := s.Runs()
		errs = append(errs, err)
		inf.Runs = len(runs)
		if a := s.Meta.Active; a != nil && !recorded(runs, a) {
			inf.Runs++
		}
		if s.Meta.State == StateOpen && s.ProjectGone() {
			inf.Gone = true
		} else if s.Meta.State == StateOpen {
			if cs, err := s.Changes(); err != nil {
				errs = append(errs, err)
			} else {
				inf.FilesStaged = len(cs.Changes)
			}
		}
		if err := errors.Join(errs...); err != nil {
			inf.Error = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		inf.Network = countLines(filepath.Join(s.dir, "net.log"))
		out = append(out, inf)
	}
	for _, e := range bad {
		out = append(out, Info{Error: e.Error()})
	}
	return out, nil
}

func countLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := strings.Count(string(data), "\n")
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
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
func (s *Session) journalDir() string { return journalDirOf(s.dir) }

func journalDirOf(dir string) string { return filepath.Join(dir, "journal") }

// writable reports an error unless the session was obtained through the project's writer lock.
func (s *Session) writable(op string) error {
	if s.lock == nil || s.lock.f == nil {
		return fmt.Errorf("%s: session %s was opened read-only (take the project's writer lock first)", op, s.Meta.ID)
	}
	return nil
}

// saveMeta writes session.json atomically (temp file, fsync, rename, fsync dir).
func (s *Session) saveMeta() error {
	data, err := json.MarshalIndent(s.Meta, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session %s: %w", s.Meta.ID, err)
	}
	return statefile.WriteFileAtomic(filepath.Join(s.dir, "session.json"), append(data, '\n'), 0o600)
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
func (st *Store) create(project string, lk *ProjectLock) (*Session, error) {
	now := time.Now()
	id := newID(now)
	dir := filepath.Join(st.sessionsDir(), id)
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
	s := &Session{store: st, dir: dir, lock: lk, Meta: Meta{Version: metaVersion, ID: id, Project: project, Created: now.UTC(), State: StateOpen,
		BaseCommit: gitHead(project), Identity: identityOf(project)}}
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
	if err := st.addToIndex(project, id); err != nil {
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
	if s.Meta.State == StateDiscarded {
		return fmt.Errorf("discard session %s: already discarded", s.Meta.ID)
	}
	// What is dropped is removed first: on a full disk, that makes the room that recording the
	// session as discarded needs. Killed in between, the session is open with nothing staged.
	for _, d := range []string{s.UpperDir(), s.WorkDir(), s.CacheDir(), s.RuntimeDir(), s.CheckpointDir(), s.revertedDir(),
		filepath.Join(s.dir, incompleteFile), filepath.Join(s.dir, reserveFile)} {
		if err := removeAllWritable(d); err != nil {
			return fmt.Errorf("discard session %s: remove %s: %w", s.Meta.ID, d, err)
		}
	}
	s.Meta.State = StateDiscarded
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
	empty, err := emptyDir(s.UpperDir())
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
	if err := removeAllWritable(s.dir); err != nil {
		return fmt.Errorf("remove session %s: %w", s.Meta.ID, err)
	}
	s.store.rebuildIndex(s.Meta.Project)
	return nil
}

// removeAllWritable removes a tree, first making directories writable: overlay's work dir holds a
// mode-000 "work" directory that os.RemoveAll cannot enter otherwise.
func removeAllWritable(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		} else if err != nil && p != dir {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
