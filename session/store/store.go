// Package store keeps shadow's state directory: a directory per session under sessions/ with its
// record (session.json, Meta), and under locks/ each project's writer lock, state lock and
// session index. It knows sessions by ID and record only; what a session stages, applies and
// remembers is the business of the packages above it.
package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shadow-sandbox/shadow/session/statefile"
	"golang.org/x/sys/unix"
)

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

// SessionsDir holds a directory per session.
func (st *Store) SessionsDir() string { return filepath.Join(st.Root, "sessions") }

// SessionDir is the directory of the session id.
func (st *Store) SessionDir(id string) string { return filepath.Join(st.SessionsDir(), id) }

// ProjectFile is one of the store's files of project: its locks and its session index.
func (st *Store) ProjectFile(project, kind string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(st.Root, "locks", hex.EncodeToString(sum[:8])+"."+kind)
}

// IDs lists the names of the session directories, in directory order.
func (st *Store) IDs() ([]string, error) {
	ents, err := os.ReadDir(st.SessionsDir())
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Recorded reports whether the session directory id holds a record: a directory without
// session.json is a session whose creation was interrupted (never started).
func (st *Store) Recorded(id string) bool {
	_, err := os.Lstat(filepath.Join(st.SessionDir(id), "session.json"))
	return !errors.Is(err, fs.ErrNotExist)
}

// ReadMeta reads the record of the session id, checked: its version, its ID and a project.
func (st *Store) ReadMeta(id string) (Meta, error) {
	if !ValidID(id) {
		return Meta{}, fmt.Errorf("unknown session id %q", id)
	}
	dir := st.SessionDir(id)
	data, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, fmt.Errorf("unknown session id %q", id)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("read session %s: %w", id, err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return Meta{}, fmt.Errorf("session %s: corrupt session.json (%v); inspect or remove %s", id, err, dir)
	}
	if m.Version != MetaVersion || m.ID != id || m.Project == "" {
		return Meta{}, fmt.Errorf("session %s: corrupt session.json (bad version, id or project); inspect or remove %s", id, dir)
	}
	return m, nil
}

// WriteMeta writes the record m of the session whose directory is dir atomically (temp file,
// fsync, rename, fsync dir).
func WriteMeta(dir string, m Meta) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session %s: %w", m.ID, err)
	}
	return statefile.WriteFileAtomic(filepath.Join(dir, "session.json"), append(data, '\n'), 0o600)
}

// ReadIndex reads project's session index (see the index's comment in package session): the IDs
// it lists, and ok false when there is none or it is corrupt. err is a read error other than a
// missing index.
func (st *Store) ReadIndex(project string) (ids []string, ok bool, err error) {
	path := st.ProjectFile(project, "sessions")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read the session index of %s: %w (remove %s: the next shadow command rebuilds it)", project, err, path)
	}
	if err != nil {
		return nil, false, nil
	}
	ids, ok = ParseIndex(data)
	return ids, ok, nil
}

// WriteIndex replaces project's session index with ids. It is best effort: without the index,
// a project's sessions are found by a scan, so a store that cannot be written (a full disk)
// stays usable.
func (st *Store) WriteIndex(project string, ids []string) {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id + "\n")
	}
	_ = statefile.WriteFileAtomic(st.ProjectFile(project, "sessions"), []byte(b.String()), 0o600)
}

// AddToIndex adds a new session to its project's index, durably, when the project has one.
func (st *Store) AddToIndex(project, id string) error {
	err := statefile.AppendLine(st.ProjectFile(project, "sessions"), []byte(id), false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("index session %s: %w", id, err)
	}
	return nil
}

// StateLock takes the project's short-lived state lock: exclusive while a writer changes staged
// state or the project, shared while a reader scans it. The returned function releases it.
func (st *Store) StateLock(project string, exclusive bool) (func(), error) {
	path := st.ProjectFile(project, "state")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state of %s: %w", project, err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := FlockRetry(f, how); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state of %s: %w", project, err)
	}
	return func() { f.Close() }, nil
}

// WriterLock takes the project's writer lock (flock on its lock file) and names the holder in
// the file (pid, time, opts.Command). A command that only reads holds the lock for a moment to
// put right what a crash left: a writer that finds it there waits for it, for a while, rather
// than failing as busy because a `shadow log` ran at the same instant. Another writer is a
// *BusyError naming it. Closing the file releases the lock.
func (st *Store) WriterLock(project string, opts LockOptions) (*os.File, error) {
	return st.lock(st.ProjectFile(project, "lock"), project, "", opts)
}

// SessionLock takes the staging lock of one session of project, id: a run holds it for as long
// as it stages, and a command that writes the session (apply, discard, revert) takes it beside
// the project's writer lock, so that sessions of one project run at once while no session is
// written by two. label names the session in a *BusyError.
func (st *Store) SessionLock(project, id, label string, opts LockOptions) (*os.File, error) {
	if label == "" {
		label = id
	}
	return st.lock(st.ProjectFile(project, "session-"+id), project, label, opts)
}

// lock takes the flock on path for project (session: the session's label, "" for the project's
// writer lock).
func (st *Store) lock(path, project, session string, opts LockOptions) (*os.File, error) {
	what := "project " + project
	if session != "" {
		what = "session " + session
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: open %s: %w", what, path, err)
	}
	how := unix.LOCK_EX
	if !opts.Wait {
		how |= unix.LOCK_NB
	}
	err = FlockRetry(f, how)
	// A brief holder (a run choosing its session) lets go within milliseconds: the first looks
	// come a millisecond apart, then at most 10 ms.
	start, pause := time.Now(), time.Millisecond
	for errors.Is(err, unix.EWOULDBLOCK) && HolderWaits(f) && time.Since(start) < RecoveryWait {
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
		err = FlockRetry(f, how)
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		holder := ReadHolder(f)
		f.Close()
		return nil, &BusyError{Project: project, Session: session, Holder: holder}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	cmd := opts.Command
	if cmd == "" {
		cmd = "command"
	}
	brief := ""
	if opts.Brief {
		brief = " brief"
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(fmt.Sprintf("%d %s %s%s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), cmd, brief)), 0)
	}
	return f, nil
}
