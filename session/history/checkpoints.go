// Package history keeps a session's steps: the checkpoints a run writes (each a layer of what one
// step changed, with its sums), merged in order into the staging layer; the session's tree at
// any moment and the patches between two moments; the check of a checkpoint against its sums;
// and the revert to a checkpoint, which sets the later steps aside until the next run.
package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
)

// A session's history is its checkpoints (SPEC §12): checkpoints/c<N>/layer holds what changed in
// step N as a layer over the step before, checkpoints/c<N>/meta.json what took it. The staging
// layer (upper/) holds them all merged; checkpoints/merged names the last one it holds. A run
// that died before merging leaves later ones, which the next command that closes it merges.

// Checkpoint is one step of a session's
type Checkpoint = layers.Checkpoint

// checkpointEarlier is what took the checkpoint that stands for the staging layer of a session
// made before checkpoints existed.
const checkpointEarlier = "earlier runs"

// CheckpointDir is the directory PID 1 writes the session's checkpoints in.
func (s *Layers) CheckpointDir() string { return filepath.Join(s.Dir, "checkpoints") }

// RevertedDir holds what the last revert dropped, for `revert --undo`, until the next run.
func (s *Layers) RevertedDir() string { return filepath.Join(s.Dir, "reverted") }

// Checkpoints returns the session's checkpoints, oldest first.
func (s *Layers) Checkpoints() ([]Checkpoint, error) {
	return ReadCheckpoints(s.CheckpointDir())
}

func ReadCheckpoints(dir string) ([]Checkpoint, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	var out []Checkpoint
	for _, e := range entries {
		n, ok := CheckpointNumber(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		out = append(out, readMeta(filepath.Join(dir, e.Name()), n))
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return a.N - b.N })
	return out, nil
}

// CheckpointNumber parses "c<N>".
func CheckpointNumber(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "c")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n > 0 && "c"+strconv.Itoa(n) == name
}

// Checkpointing is what a run's policy needs for its checkpoints: the directory and the number
// of the next one. It first gives a session of the earlier layout (a staging layer and no
// checkpoint) its first checkpoint, standing for all it staged.
func (s *Layers) Checkpointing() (dir string, next int, err error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return "", 0, err
	}
	if len(cps) == 0 {
		if cps, err = s.adoptStagingLayer(); err != nil {
			return "", 0, err
		}
	}
	next = 1
	if len(cps) > 0 {
		next = cps[len(cps)-1].N + 1
	}
	return s.CheckpointDir(), next, nil
}

// adoptStagingLayer makes checkpoint c1 a copy of a staging layer that no checkpoint stands for
// (a session of the earlier layout), so that every later step has a step below it.
func (s *Layers) adoptStagingLayer() ([]Checkpoint, error) {
	if empty, err := projectfs.EmptyDir(s.Upper); err != nil || empty {
		return nil, nil
	}
	c := Checkpoint{ID: "c1", N: 1, Time: s.Created, Trigger: checkpointEarlier}
	if err := WriteCheckpoint(s.CheckpointDir(), c, s.Upper); err != nil {
		return nil, err
	}
	if err := setMerged(s.CheckpointDir(), 1); err != nil {
		return nil, err
	}
	return []Checkpoint{c}, nil
}

// WriteCheckpoint writes checkpoint c with a copy of layer src, durably.
func WriteCheckpoint(dir string, c Checkpoint, src string) error {
	tmp := filepath.Join(dir, c.ID+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "layer"), 0o700); err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	if err := withDirs(src, filepath.Join(tmp, "layer"), func(s, d int) error { return layers.CopyDir(s, d) }); err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	sums, err := sumsOf(filepath.Join(tmp, "layer"))
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	if err := statefile.WriteFileReplace(filepath.Join(tmp, layers.SumsFile), sums, 0o600, true); err != nil {
		return err
	}
	c.Sums = layers.SumOf(sums)
	meta, err := layers.SealMeta(c)
	if err != nil {
		return err
	}
	if err := statefile.WriteFileReplace(filepath.Join(tmp, "meta.json"), meta, 0o600, true); err != nil {
		return err
	}
	if err := statefile.SyncFS(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, c.ID)); err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	return statefile.SyncDir(dir)
}

// Merged returns the number of the last checkpoint the staging layer holds (0: none).
func Merged(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, layers.MergedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read checkpoints: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("read checkpoints: corrupt %s", layers.MergedFile)
	}
	return n, nil
}

func setMerged(dir string, n int) error {
	return statefile.WriteFileReplace(filepath.Join(dir, layers.MergedFile), []byte(strconv.Itoa(n)+"\n"), 0o600, true)
}

// MergeCheckpoints merges into the staging layer the checkpoints a run wrote but did not merge
// before it died, in order: what the run had written when it took its last checkpoint.
func (s *Layers) MergeCheckpoints() (int, error) {
	dir := s.CheckpointDir()
	cps, err := ReadCheckpoints(dir)
	if err != nil || len(cps) == 0 {
		return 0, err
	}
	done, err := Merged(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cps {
		if c.N <= done {
			continue
		}
		// A damaged checkpoint is not merged in part, nor what came after it.
		bad, err := s.checkContents(c)
		if err != nil {
			return n, err
		}
		if len(bad) > 0 {
			d := DamagedStep{ID: c.ID, Paths: bad}
			if err := s.MarkIncomplete(fmt.Sprintf("checkpoint %s is damaged (%s): it and the steps after it are not staged", c.ID, d.Describe())); err != nil {
				return n, err
			}
			break
		}
		if err := mergeLayerInto(filepath.Join(dir, c.ID, "layer"), s.Upper, s.Project); err != nil {
			return n, fmt.Errorf("merge checkpoint %s into the staging layer: %w", c.ID, err)
		}
		n++
		done = c.N
	}
	if n == 0 {
		return 0, nil
	}
	if err := statefile.SyncFS(s.Upper); err != nil {
		return n, err
	}
	return n, setMerged(dir, done)
}

// mergeLayerInto merges layer src into the staging layer dst, over project.
func mergeLayerInto(src, dst, project string) error {
	p, err := unix.Open(project, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", project, err)
	}
	defer unix.Close(p)
	// A checkpoint stays as it is: the staging layer links its files.
	return withDirs(src, dst, func(s, d int) error { return layers.MergeLinked(s, d, p) })
}

// withDirs runs f with the directories src and dst open.
func withDirs(src, dst string, f func(src, dst int) error) error {
	s, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(s)
	d, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dst, err)
	}
	defer unix.Close(d)
	return f(s, d)
}

// Revert drops every staged change made after checkpoint id (see Session.Revert); applies are
// the session's, none of which may have come after that checkpoint.
func (s *Layers) Revert(id string, applies []store.ApplyRecord) ([]Checkpoint, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	i, err := FindCheckpoint(cps, id)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.ID, err)
	}
	drop := cps[i+1:]
	if len(drop) == 0 {
		return nil, nil
	}
	// An apply moved the base past the checkpoint: the staged tree of that moment would now
	// read as undoing what was applied.
	for _, a := range applies {
		if !a.RolledBack && a.Time.After(cps[i].Time) {
			return nil, fmt.Errorf("session %s: apply %s came after %s; roll it back first (shadow apply --rollback) to revert past it", s.ID, a.ID, id)
		}
	}
	// Build the new staging layer beside the old one, then swap: a crash leaves one or the other.
	fresh := s.Upper + ".revert"
	if err := os.RemoveAll(fresh); err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	if err := os.Mkdir(fresh, 0o700); err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	for _, c := range cps[:i+1] {
		if err := mergeLayerInto(filepath.Join(s.CheckpointDir(), c.ID, "layer"), fresh, s.Project); err != nil {
			return nil, fmt.Errorf("revert: rebuild the staging layer at %s: %w", c.ID, err)
		}
	}
	if err := statefile.SyncFS(fresh); err != nil {
		return nil, err
	}
	aside := s.RevertedDir()
	if err := os.RemoveAll(aside); err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(aside, "checkpoints"), 0o700); err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	for _, c := range drop {
		if err := os.Rename(filepath.Join(s.CheckpointDir(), c.ID), filepath.Join(aside, "checkpoints", c.ID)); err != nil {
			return nil, fmt.Errorf("revert: %w", err)
		}
	}
	if err := os.Rename(s.Upper, filepath.Join(aside, "upper")); err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	if err := os.Rename(fresh, s.Upper); err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	if err := setMerged(s.CheckpointDir(), cps[i].N); err != nil {
		return nil, err
	}
	return drop, statefile.SyncDir(s.Dir)
}

// RevertUndo puts back what the last revert dropped (see Session.RevertUndo).
func (s *Layers) RevertUndo() ([]Checkpoint, error) {
	aside := s.RevertedDir()
	back, err := ReadCheckpoints(filepath.Join(aside, "checkpoints"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(aside, "upper")); err != nil || len(back) == 0 {
		return nil, fmt.Errorf("session %s: nothing to undo (a revert can be undone until the next run)", s.ID)
	}
	for _, c := range back {
		if err := os.Rename(filepath.Join(aside, "checkpoints", c.ID), filepath.Join(s.CheckpointDir(), c.ID)); err != nil {
			return nil, fmt.Errorf("revert --undo: %w", err)
		}
	}
	old := s.Upper + ".reverted"
	if err := os.RemoveAll(old); err != nil {
		return nil, fmt.Errorf("revert --undo: %w", err)
	}
	if err := os.Rename(s.Upper, old); err != nil {
		return nil, fmt.Errorf("revert --undo: %w", err)
	}
	if err := os.Rename(filepath.Join(aside, "upper"), s.Upper); err != nil {
		return nil, fmt.Errorf("revert --undo: %w", err)
	}
	if err := setMerged(s.CheckpointDir(), back[len(back)-1].N); err != nil {
		return nil, err
	}
	if err := statefile.SyncDir(s.Dir); err != nil {
		return nil, err
	}
	OpenDirs(old)
	if err := os.RemoveAll(old); err != nil {
		return nil, fmt.Errorf("revert --undo: %w", err)
	}
	return back, os.RemoveAll(aside)
}

// DropReverted forgets what the last revert dropped: a run starts from what is staged now.
func (s *Layers) DropReverted() error {
	aside := s.RevertedDir()
	if _, err := os.Stat(aside); err != nil {
		return nil
	}
	OpenDirs(aside)
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("drop what the last revert kept aside: %w", err)
	}
	return nil
}

// OpenDirs gives the owner access to every directory below dir again (a staged directory may be
// closed to its owner), so that it can be removed.
func OpenDirs(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}

// Layers is a session's history on disk: its checkpoints (each a layer of one step), the
// staging layer they merge into, and what the last revert set aside. It knows the session by its
// directories and its project only.
type Layers struct {
	ID      string // the session's, for messages
	Dir     string // the session's directory
	Upper   string // the staging layer
	Project string
	Created time.Time
	// source is what the pre-images are read from (the history's first moment).
	Source func() *changeset.Source
	// MarkIncomplete records that the staging layer misses some of what a run wrote.
	MarkIncomplete func(reason string) error
	// checked holds, by checkpoint, the paths found damaged when its contents were checked
	// against its sums (see damage.go): once per command.
	checked map[string][]string
}
