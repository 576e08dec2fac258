package changeset

import (
	"fmt"
	"io"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// MergeState says how the host's change to a path and the agent's combine.
type MergeState string

// The merge states of a path both sides changed.
const (
	// MergeClean: no line changed on both sides; the agent's changes apply as hunks on the host's file.
	MergeClean MergeState = "clean"
	// MergeConflict: some lines changed on both sides; those hunks are resolved in review (take
	// the host's, take the agent's, or edit) before apply writes them.
	MergeConflict MergeState = "conflict"
)

// mergeConflicts looks again at every change the host changed too (Reason set): it records what
// the host holds now (Host), merges the two changes where it can (Merge; Conflict is then set only
// when some lines conflict), drops a change whose outcome the project already holds (the host
// made the same change, or an apply wrote it), and says in Reason why a path cannot be merged.
func (s *Source) mergeConflicts(cs *ChangeSet, b *Bases, host *projectfs.Root) error {
	out := cs.Changes[:0]
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if c.Reason == "" {
			out = append(out, *c)
			continue
		}
		keep, err := s.mergeOne(b, host, c)
		if err != nil {
			return err
		}
		if keep {
			out = append(out, *c)
		}
	}
	clear(cs.Changes[len(out):])
	cs.Changes = out
	return nil
}

// mergeOne does mergeConflicts' work for one change; keep is false when the project already has
// its outcome.
func (s *Source) mergeOne(b *Bases, host *projectfs.Root, c *Change) (keep bool, err error) {
	h, err := host.Lstat(c.Path)
	if err != nil {
		return false, err
	}
	if h.Exists && h.Stat.Type != 'd' {
		c.Host = &Side{Kind: kindOf(h.Stat.Type), Mode: h.Stat.Mode, Size: h.Stat.Size, Target: h.Target}
	}
	var cur []byte
	if c.Host != nil && c.Host.Kind == KindFile {
		f, err := host.OpenRead(c.Path)
		if err != nil {
			return false, fmt.Errorf("read %s on the host: %w", quote.Path(c.Path), err)
		}
		if c.Host.Size <= s.MergeLimit() {
			cur, err = io.ReadAll(io.LimitReader(f, s.MergeLimit()+1))
			c.Host.Hash = projectfs.ContentName(cur)
		} else {
			var sum projectfs.FileSum
			sum, err = projectfs.SumReader(f)
			c.Host.Hash, c.Host.Holes = sum.Hash, projectfs.SparseHoles(sum.Holes)
		}
		f.Close()
		if err != nil {
			return false, fmt.Errorf("read %s on the host: %w", quote.Path(c.Path), err)
		}
	}
	if sameOutcome(c) {
		return false, nil
	}
	c.Conflict = true
	if !s.mergeable(c) || c.Host.Holes > 0 || int64(len(cur)) > s.MergeLimit() {
		return true, nil
	}
	base, agent, err := s.mergeSides(b, host, c)
	if err != nil {
		return false, err
	}
	if diff.IsBinary(base) || diff.IsBinary(cur) || diff.IsBinary(agent) {
		c.Reason = fmt.Sprintf("both changed it and it is binary: yours is %s (sha256 %s), the agent's %s (sha256 %s)",
			projectfs.HumanSize(c.Host.Size), ShortHash(c.Host.Hash), projectfs.HumanSize(c.New.Size), ShortHash(c.New.Hash))
		return true, nil
	}
	m := diff.Merge3(c.Path, base, cur, agent, diff.Options{Context: -1, Budget: s.DiffBudget})
	if len(m.Diff.Hunks) == 0 {
		return false, nil // every change of the agent's is in the host's file already
	}
	c.Merge, c.Conflict = MergeClean, false
	if !m.Clean() {
		c.Merge, c.Conflict = MergeConflict, true
	}
	return true, nil
}

// sameOutcome reports whether the host holds exactly what the agent staged (the same change made
// on both sides, or one an apply or the developer copied over): nothing is left to apply.
func sameOutcome(c *Change) bool {
	if c.From != "" {
		return false
	}
	hs := Side{}
	if c.Host != nil {
		hs = *c.Host
	}
	if hs.Kind != c.New.Kind {
		return false
	}
	switch hs.Kind {
	case KindNone:
		return true
	case KindFile:
		return hs.Hash != "" && hs.Hash == c.New.Hash && hs.Mode&0o7777 == c.New.Mode&0o7777
	case KindSymlink:
		return hs.Target == c.New.Target
	}
	return false
}

// mergeable reports whether a change the host changed too can be merged line by line: a regular
// file on the three sides (or no base at all: both added it), a known pre-image, no rename,
// nothing too large or sparse to read.
func (s *Source) mergeable(c *Change) bool {
	if c.From != "" || c.Special || c.Unreadable != "" || c.BaseUnknown || c.Host == nil || c.Host.Kind != KindFile {
		return false
	}
	if c.New.Kind != KindFile || c.New.Holes > 0 || c.New.Size > s.MergeLimit() {
		return false
	}
	switch c.base.Kind {
	case BaseAbsent:
		return true
	case BaseObject:
		return c.base.Type == 'f' && c.Old.Holes == 0 && c.Old.Size <= s.MergeLimit()
	}
	return false
}

// mergeSides reads the base (empty when the path had none) and the agent's staged file of a
// mergeable change.
func (s *Source) mergeSides(b *Bases, host *projectfs.Root, c *Change) (base, agent []byte, err error) {
	base, agent, err = s.Contents(b, host, c, s.MergeLimit())
	if err != nil {
		return nil, nil, err
	}
	return base, agent, nil
}

// MergeInputs reads the three sides of a merged change and merges them. The host's file must
// still be what the change set saw.
func (s *Source) MergeInputs(b *Bases, host *projectfs.Root, c *Change) (base, cur, agent []byte, m diff.Merged, err error) {
	if base, agent, err = s.mergeSides(b, host, c); err != nil {
		return
	}
	f, err := host.OpenRead(c.Path)
	if err != nil {
		return
	}
	cur, err = io.ReadAll(io.LimitReader(f, s.MergeLimit()+1))
	f.Close()
	if err != nil {
		return
	}
	if projectfs.ContentName(cur) != c.Host.Hash {
		err = fmt.Errorf("%s changed on the host again while it was being merged; try again", quote.Path(c.Path))
		return
	}
	m = diff.Merge3(c.Path, base, cur, agent, diff.Options{Context: -1, Budget: s.DiffBudget})
	return
}

func MergeKey(base Side, hostHash string) string {
	return "merge:" + ContentKey(base) + ":" + hostHash
}

// MergeLimit bounds each side of a file merged line by line (the store's diff limit): a larger
// one is a conflict that is settled as a whole file.
func (s *Source) MergeLimit() int64 { return s.MaxDiffBytes }
