package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

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

const MetaVersion = 1

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
	// Name is the name the session was opened under (`--session NAME`), "" for the project's
	// default session; no two open sessions of a project share a name.
	Name string `json:"name,omitempty"`
	// Identity is the project directory's device and inode when the session started (nil for a
	// session of an older shadow): a moved or renamed project is recognised by it.
	Identity *ProjectIdentity `json:"project_identity,omitempty"`
}

// DefaultMaxDiffBytes is the largest text file the review and apply diff line by line.
const DefaultMaxDiffBytes = 64 << 20

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

// ValidID reports whether id has the shape of a session id, so that it is safe as a path element.
func ValidID(id string) bool {
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

func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func CountLines(path string) int {
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

// RemoveAllWritable removes a tree, first making directories writable: overlay's work dir holds a
// mode-000 "work" directory that os.RemoveAll cannot enter otherwise.
func RemoveAllWritable(dir string) error {
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

// ParseIndex reads a session index: one session ID a line. An ID cut short (being appended, or
// by a failed write) names no session directory, and loadEach skips it; anything else that is not
// an ID makes the index corrupt (ok false).
func ParseIndex(data []byte) (ids []string, ok bool) {
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		if !IDPrefix(line) {
			return nil, false
		}
		ids = append(ids, line)
	}
	return ids, true
}

// IdPrefix reports whether s is a session ID as NewID makes them (20261201-143143-3bc396), or
// the start of one.
func IDPrefix(s string) bool {
	const shape = "dddddddd-dddddd-xxxxxx"
	if len(s) > len(shape) {
		return false
	}
	for i, c := range []byte(s) {
		switch shape[i] {
		case 'd':
			if c < '0' || c > '9' {
				return false
			}
		case 'x':
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		default:
			if c != shape[i] {
				return false
			}
		}
	}
	return true
}

// ErrBusy matches (errors.Is) the error of LockProject when another writer holds the project.
var ErrBusy = errors.New("project is busy")

// BusyError says which shadow command holds the project's writer lock, or a session's.
type BusyError struct {
	Project string
	// Session is the busy session's label when the lock is a session's ("" for the project's).
	Session string
	Holder  string // e.g. "run (pid 123)"
}

// Error says which project or session is busy and with what.
func (e *BusyError) Error() string {
	if e.Session != "" {
		return fmt.Sprintf("session %s of project %s is busy: another shadow %s is writing to it; wait for it to finish (or pass --wait)", e.Session, e.Project, e.Holder)
	}
	return fmt.Sprintf("project %s is busy: another shadow %s is writing to it; wait for it to finish (or pass --wait)", e.Project, e.Holder)
}

func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// LockOptions tune LockProject.
type LockOptions struct {
	// Wait blocks until another writer releases the project instead of failing at once.
	Wait bool
	// Command names the operation holding the lock (run, apply...), shown to a second writer.
	Command string
	// Brief says the lock is held only for a moment (a run choosing its session before it hands
	// the project over): another writer waits for it, up to RecoveryWait, instead of failing.
	Brief bool
}

// RecoveryCommand names the lock's holder when a command that only reads takes the writer lock to
// finish what a crash interrupted; a writer waits up to RecoveryWait for it.
const (
	RecoveryCommand = "recovery"
	RecoveryWait    = 30 * time.Second
)

// HolderWaits reports whether a writer that finds the lock file f held waits for it (up to
// RecoveryWait) rather than failing: its holder finishes what a crash interrupted or holds it only
// for a moment (LockOptions.Brief), or has not yet written who it is.
func HolderWaits(f *os.File) bool {
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, 0)
	fields := strings.Fields(string(buf[:n]))
	return len(fields) == 0 || len(fields) >= 3 && fields[2] == RecoveryCommand || len(fields) >= 4 && fields[3] == "brief"
}

// ReadHolder describes the process named in a lock file, e.g. "run (pid 123)".
func ReadHolder(f *os.File) string {
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

func FlockRetry(f *os.File, how int) error {
	for {
		if err := unix.Flock(int(f.Fd()), how); err != unix.EINTR {
			return err
		}
	}
}

// Run is one command run in the jail over the session.
type Run struct {
	Argv     []string  `json:"argv"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	ExitCode int       `json:"exit_code"`
	// PID and PIDStart identify the shadow process running it (start time guards against reuse).
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pid_start,omitempty"`
	// Captured and Unknown count the pre-images taken and the paths whose base became unknown.
	Captured int `json:"captured,omitempty"`
	Unknown  int `json:"unknown,omitempty"`
}

// ApplyRecord is one committed apply of a session.
// The paths themselves are in the apply's journal entry: listing them here too would make
// session.json, read by every command, grow by every path of every apply.
type ApplyRecord struct {
	ID         string    `json:"id"`
	Time       time.Time `json:"time"`
	Files      int       `json:"files"`
	RolledBack bool      `json:"rolled_back,omitempty"`
}

// ProjectIdentity is what stays the same when a project's directory is moved or renamed within
// its filesystem: its device and inode. A session records it at its start, so that the project
// is recognised at its new path.
type ProjectIdentity struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IdentityOf is the identity of the directory at path, nil when it cannot be read.
func IdentityOf(path string) *ProjectIdentity {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &ProjectIdentity{Dev: uint64(st.Dev), Ino: st.Ino}
}
