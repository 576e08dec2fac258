package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

// A damaged checkpoint (SPEC §12) is detected, reported with what is still good, and never
// merged in part. What is checked, and when: a checkpoint's meta.json, which checks itself,
// whenever the checkpoints are read; its contents against its sums (layers.SumsFile) once per
// command that reads the staged changes or the history, and before it is merged. A file of the
// staging layer shares its inode with the checkpoint it came from: damage to one is damage to
// the other, so the staged changes leave out what a damaged checkpoint holds last.

// readMeta reads the metadata of checkpoint n in directory dir; Damage says what is wrong with
// it, if anything.
func readMeta(dir string, n int) Checkpoint {
	id := filepath.Base(dir)
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	var c Checkpoint
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Damage = "meta.json is missing"
	case err != nil:
		c.Damage = "meta.json cannot be read"
	default:
		if c, err = layers.ReadMeta(data); err != nil {
			c = Checkpoint{Damage: err.Error()}
		}
	}
	c.ID, c.N = id, n
	return c
}

// sumsOf lists the entries of the layer directory dir and their checksums (layers.Sums).
func sumsOf(dir string) ([]byte, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	return layers.Sums(fd)
}

// DamagedStep is a checkpoint found damaged: what is wrong with its metadata (Meta, "" when it is
// good) and the paths of its layer that do not match their checksums.
type DamagedStep struct {
	ID    string
	Meta  string
	Paths []string
}

// Describe says in a few words what is damaged, e.g. "meta.json is cut short or not JSON; 2
// files (a.txt, b.txt)".
func (d DamagedStep) Describe() string {
	var parts []string
	if d.Meta != "" {
		parts = append(parts, d.Meta)
	}
	if len(d.Paths) > 0 {
		shown := d.Paths
		if len(shown) > 3 {
			shown = shown[:3]
		}
		list := strings.Join(shown, ", ")
		if len(d.Paths) > len(shown) {
			list += ", …"
		}
		parts = append(parts, fmt.Sprintf("%s (%s) not as taken", english.Count(len(d.Paths), "file"), list))
	}
	return strings.Join(parts, "; ")
}

// DamagedSteps checks the session's checkpoints and returns those found damaged, oldest first.
func (s *Layers) DamagedSteps() ([]DamagedStep, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	var out []DamagedStep
	for _, c := range cps {
		paths, err := s.checkContents(c)
		if err != nil {
			return nil, err
		}
		if c.Damage != "" || len(paths) > 0 {
			out = append(out, DamagedStep{ID: c.ID, Meta: c.Damage, Paths: paths})
		}
	}
	return out, nil
}

// checkContents returns the paths of checkpoint c's layer that do not match its sums: all of
// them when the sums themselves are damaged. A checkpoint written before checkpoints were checked
// (no sums) is taken as it is.
func (s *Layers) checkContents(c Checkpoint) ([]string, error) {
	if paths, ok := s.checked[c.ID]; ok {
		return paths, nil
	}
	dir := filepath.Join(s.CheckpointDir(), c.ID)
	sums, err := os.ReadFile(filepath.Join(dir, layers.SumsFile))
	if errors.Is(err, fs.ErrNotExist) && c.Sums == "" && c.Damage == "" {
		return nil, nil
	}
	fd, oerr := unix.Open(filepath.Join(dir, "layer"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return nil, fmt.Errorf("check checkpoint %s: %w", c.ID, oerr)
	}
	defer unix.Close(fd)
	// With meta.json damaged, the sums cannot be checked but still tell what is good.
	sumsGood := err == nil && (c.Sums == layers.SumOf(sums) || c.Damage != "")
	var bad []string
	if sumsGood {
		bad, err = layers.Damaged(fd, sums)
	}
	if !sumsGood || err != nil {
		// The list of checksums is itself damaged: nothing of the layer can be vouched for.
		if bad, err = layers.Damaged(fd, nil); err != nil {
			return nil, fmt.Errorf("check checkpoint %s: %w", c.ID, err)
		}
	}
	if s.checked == nil {
		s.checked = map[string][]string{}
	}
	s.checked[c.ID] = bad
	return bad, nil
}

// damagedStaged returns the staged paths whose content comes from a damaged entry of a checkpoint:
// one no later checkpoint holds again.
func (s *Layers) damagedStaged() (map[string]bool, error) {
	steps, err := s.DamagedSteps()
	if err != nil || len(steps) == 0 {
		return nil, err
	}
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	order := map[string]int{}
	for i, c := range cps {
		order[c.ID] = i
	}
	hidden := map[string]bool{}
	for _, d := range steps {
	paths:
		for _, p := range d.Paths {
			for _, later := range cps[order[d.ID]+1:] {
				if _, err := os.Lstat(filepath.Join(s.CheckpointDir(), later.ID, "layer", filepath.FromSlash(p))); err == nil {
					if bad, _ := s.checkContents(later); !containsString(bad, p) {
						continue paths
					}
				}
			}
			hidden[p] = true
		}
	}
	return hidden, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// WithoutDamaged leaves out of the staged entries raw those a damaged checkpoint holds last.
func (s *Layers) WithoutDamaged(raw []changeset.RawEntry) ([]changeset.RawEntry, error) {
	hidden, err := s.damagedStaged()
	if err != nil || len(hidden) == 0 {
		return raw, err
	}
	out := raw[:0:0]
	for _, e := range raw {
		if !hidden[e.Path] {
			out = append(out, e)
		}
	}
	return out, nil
}
