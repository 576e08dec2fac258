package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/history"
)

// Take stages in s what other, another open session of the project, staged at paths (a path
// or a directory above changed paths): keeping the better of two agents' work, file by file.
// It is a step of s like a run's, with its own checkpoint (trigger "take", named for other), so
// `shadow log` shows it, `revert` to the checkpoint before undoes it, and its pre-images are
// taken as a run's are. A path other did not change, or whose staged entry is special or could
// not be read, is refused before anything is written. It returns the paths taken.
func (s *Session) Take(other *Session, paths []string) ([]string, error) {
	if err := s.writable("take"); err != nil {
		return nil, err
	}
	switch {
	case other.Meta.ID == s.Meta.ID:
		return nil, fmt.Errorf("take: %s is the session itself", other.Label())
	case other.Meta.Project != s.Meta.Project:
		return nil, fmt.Errorf("take: session %s is of project %s, not %s", other.Label(), other.Meta.Project, s.Meta.Project)
	case other.Meta.State != StateOpen:
		return nil, fmt.Errorf("take: session %s is %s", other.Label(), other.Meta.State)
	case len(paths) == 0:
		return nil, errors.New("take: name the paths to take")
	}
	cs, err := other.Changes()
	if err != nil {
		return nil, err
	}
	var picked []*changeset.Change
	for _, p := range paths {
		n := len(picked)
		for i := range cs.Changes {
			c := &cs.Changes[i]
			if changeset.Selected(c, []string{p}) && !slices.Contains(picked, c) {
				picked = append(picked, c)
			}
		}
		if len(picked) == n {
			return nil, fmt.Errorf("take: session %s did not change %s", other.Label(), quote.Path(p))
		}
	}
	for _, c := range picked {
		if c.Special || c.Unreadable != "" {
			return nil, fmt.Errorf("take: %s in session %s is a special file or could not be read; it is never taken", quote.Path(c.Path), other.Label())
		}
	}
	argv := append([]string{"shadow", "take", "--from", other.Label(), "--"}, paths...)
	return s.takeStep(other, picked, nil, argv)
}

// TakeHunks stages in s the hunks pick (numbered from 1, in order) of the diff from s's version
// of path to other's, both sessions having changed it as text: the rest of s's version stays.
// It is a step like Take's; it returns how many hunks the diff has.
func (s *Session) TakeHunks(other *Session, path string, pick []int) (int, error) {
	if err := s.writable("take"); err != nil {
		return 0, err
	}
	if other.Meta.ID == s.Meta.ID || other.Meta.Project != s.Meta.Project {
		return 0, fmt.Errorf("take: %s is not another session of project %s", other.Label(), s.Meta.Project)
	}
	mine, theirs, err := textSides(s, other, path)
	if err != nil {
		return 0, err
	}
	fd := diff.Compute(path, mine.data, theirs.data, diff.Options{Budget: s.store.diffBudget()})
	decisions := map[string]diff.Decision{}
	for _, n := range pick {
		if n < 1 || n > len(fd.Hunks) {
			return len(fd.Hunks), fmt.Errorf("take: the diff of %s from %s to %s has %s; there is no hunk %d", quote.Path(path), s.Label(), other.Label(), english.Count(len(fd.Hunks), "hunk"), n)
		}
		decisions[fd.Hunks[n-1].ID] = diff.Decision{Verdict: diff.Accepted}
	}
	if len(decisions) == 0 {
		return len(fd.Hunks), errors.New("take: name the hunks to take")
	}
	merged, err := diff.Apply(mine.data, fd.Hunks, decisions)
	if err != nil {
		return len(fd.Hunks), fmt.Errorf("take: %w", err)
	}
	nums := make([]string, len(pick))
	for i, n := range pick {
		nums[i] = strconv.Itoa(n)
	}
	argv := []string{"shadow", "take", "--from", other.Label(), "--hunks", strings.Join(nums, ","), "--", path}
	c := *mine.c
	c.From = "" // only the path's bytes change: a rename s staged stays as it is
	_, err = s.takeStep(other, []*changeset.Change{&c}, map[string][]byte{path: merged}, argv)
	return len(fd.Hunks), err
}

// textSide is one session's staged text file at a path: its change and content.
type textSide struct {
	c    *changeset.Change
	data []byte
}

// textSides are s's and other's staged versions of path, each a text file both changed.
func textSides(s, other *Session, path string) (mine, theirs textSide, err error) {
	for i, x := range []*Session{s, other} {
		cs, err := x.Changes()
		if err != nil {
			return mine, theirs, err
		}
		c, ok := cs.Find(path)
		if !ok || c.Path != path || c.New.Kind != changeset.KindFile || c.Binary || c.New.Holes > 0 || x.TooLargeToDiff(c) {
			return mine, theirs, fmt.Errorf("take: session %s has no staged text file at %s: hunks are taken only between two sessions' text versions of a file (take the whole file instead)", x.Label(), quote.Path(path))
		}
		_, data, err := x.Contents(c, 0)
		if err != nil {
			return mine, theirs, err
		}
		side := textSide{c: c, data: data}
		if i == 0 {
			mine = side
		} else {
			theirs = side
		}
	}
	return mine, theirs, nil
}

// takeStep records the take of picked (content, when set, replacing a path's staged bytes) as a
// run of s with one checkpoint.
func (s *Session) takeStep(other *Session, picked []*changeset.Change, content map[string][]byte, argv []string) ([]string, error) {
	if err := s.BeginRun(argv); err != nil {
		return nil, err
	}
	taken, err := s.takeInto(other, picked, content, argv)
	code := 0
	if err != nil {
		code = 1
	}
	if endErr := s.EndRun(code); err == nil {
		err = endErr
	}
	return taken, err
}

// takeInto writes the picked changes of other as a layer, makes it s's next checkpoint and merges
// it into the staging layer.
func (s *Session) takeInto(other *Session, picked []*changeset.Change, content map[string][]byte, argv []string) ([]string, error) {
	src := filepath.Join(s.dir, "take.tmp")
	if err := os.RemoveAll(src); err != nil {
		return nil, fmt.Errorf("take: %w", err)
	}
	defer os.RemoveAll(src)
	var taken []string
	for _, c := range picked {
		if c.From != "" {
			if err := stageWhiteout(src, c.From); err != nil {
				return nil, err
			}
			taken = append(taken, c.From)
		}
		if data, ok := content[c.Path]; ok {
			if err := stageBytes(src, c.Path, data, c.New.Mode); err != nil {
				return nil, err
			}
		} else if err := stageSide(src, other, c); err != nil {
			return nil, err
		}
		taken = append(taken, c.Path)
	}
	dir, next, err := s.Checkpointing()
	if err != nil {
		return nil, err
	}
	cp := history.Checkpoint{ID: fmt.Sprintf("c%d", next), N: next, Time: time.Now().UTC(), Trigger: layers.CheckpointTake,
		Argv: argv, Paths: taken, Prompt: "from " + other.Label()}
	if err := history.WriteCheckpoint(dir, cp, src); err != nil {
		return nil, err
	}
	if _, err := s.layers().MergeCheckpoints(); err != nil {
		return nil, err
	}
	return taken, nil
}

// stageSide writes into the layer at root what change c of other stages at its path: the staged
// file's bytes and mode (read without following a symlink), a symlink, or a deletion.
func stageSide(root string, other *Session, c *changeset.Change) error {
	dst := filepath.Join(root, filepath.FromSlash(c.Path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("take %s: %w", quote.Path(c.Path), err)
	}
	switch c.New.Kind {
	case changeset.KindNone:
		return stageWhiteout(root, c.Path)
	case changeset.KindSymlink:
		if err := os.Symlink(c.New.Target, dst); err != nil {
			return fmt.Errorf("take %s: %w", quote.Path(c.Path), err)
		}
		return nil
	case changeset.KindFile:
		in, err := other.OpenStaged(c.Path)
		if err != nil {
			return fmt.Errorf("take %s: %w", quote.Path(c.Path), err)
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("take %s: %w", quote.Path(c.Path), err)
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return fmt.Errorf("take %s: %w", quote.Path(c.Path), err)
		}
		if err := out.Chmod(os.FileMode(c.New.Mode & 0o777)); err != nil {
			out.Close()
			return fmt.Errorf("take %s: %w", quote.Path(c.Path), err)
		}
		return out.Close()
	}
	return fmt.Errorf("take %s: a special file is never taken", quote.Path(c.Path))
}

// stageBytes writes data as the file p of the layer at root, with mode.
func stageBytes(root, p string, data []byte, mode uint32) error {
	dst := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("take %s: %w", quote.Path(p), err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return fmt.Errorf("take %s: %w", quote.Path(p), err)
	}
	if err := os.Chmod(dst, os.FileMode(mode&0o777)); err != nil {
		return fmt.Errorf("take %s: %w", quote.Path(p), err)
	}
	return nil
}

// stageWhiteout writes into the layer at root the deletion of p, as overlay writes one (a 0/0
// character device), which needs CAP_MKNOD: elsewhere a deletion cannot be taken.
func stageWhiteout(root, p string) error {
	dst := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("take the deletion of %s: %w", quote.Path(p), err)
	}
	if err := unix.Mknod(dst, unix.S_IFCHR|0o600, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("take the deletion of %s: making the deletion's mark needs root here; delete the file in the session's next run instead", quote.Path(p))
		}
		return fmt.Errorf("take the deletion of %s: %w", quote.Path(p), err)
	}
	return nil
}
