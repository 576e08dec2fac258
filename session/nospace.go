package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// StateFullError is a write into shadow's state directory that failed for lack of space (a full
// disk, or the user's quota): it names the directory and the way out, rather than the temporary
// file the write was making.
type StateFullError struct {
	// Root is the state directory.
	Root string
	Err  error
}

// Error names the state directory and what to do.
func (e *StateFullError) Error() string {
	return fmt.Sprintf("shadow's state directory %s is full (%v): free space on its disk, or drop staged changes you do not need with `shadow discard`, then try again",
		e.Root, rootCause(e.Err))
}

func (e *StateFullError) Unwrap() error { return e.Err }

// ExplainFull returns err as a *StateFullError when it is a lack of space (ENOSPC, EDQUOT) met
// while writing under root, the state directory; otherwise err as it is. A lack of space
// elsewhere (the project's disk, during an apply) is left as it is: it names its own path.
func ExplainFull(err error, root string) error {
	if err == nil || root == "" || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return err
	}
	var already *StateFullError
	if errors.As(err, &already) {
		return err
	}
	if p := errPath(err); p != "" && !under(p, root) {
		return err
	}
	if errPath(err) == "" && !strings.Contains(err.Error(), root) {
		return err
	}
	return &StateFullError{Root: root, Err: err}
}

// errPath is the path of the innermost file operation err carries, "" when none.
func errPath(err error) string {
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.New
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}

// rootCause is the system error at the bottom of err ("no space left on device").
func rootCause(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// incompleteFile, in a session's directory, marks a session whose staging layer misses some of a
// run's writes (they could not be staged: the state directory was full); it holds why.
const incompleteFile = "incomplete"

// MarkIncomplete records that a run's writes could not all be staged (reason: the merge's
// error), so that every later look at the session says so. It is made to work on a full disk:
// the marker is an empty file first, and the reason is written into it only where there is room.
func (s *Session) MarkIncomplete(reason string) error {
	if err := s.writable("mark incomplete"); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, incompleteFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return ExplainFull(fmt.Errorf("mark session %s incomplete: %w", s.Meta.ID, err), s.store.Root)
	}
	defer f.Close()
	_, _ = f.WriteString(strings.ReplaceAll(reason, "\n", " ") + "\n")
	return nil
}

// Incomplete says why the session's staging layer misses some of what a run wrote ("" when it
// does not): files may be missing, or cut short, among the staged changes.
func (s *Session) Incomplete() string {
	data, err := os.ReadFile(filepath.Join(s.dir, incompleteFile))
	if err != nil {
		return ""
	}
	var reasons []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			reasons = append(reasons, l)
		}
	}
	if len(reasons) == 0 {
		return "a run's changes could not all be staged (the state directory was full)"
	}
	return "a run's changes could not all be staged: " + strings.Join(reasons, "; ")
}
