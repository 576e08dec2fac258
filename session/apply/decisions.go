package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
)

// FileDecision is what review decided about one path. It holds only while the base and staged
// content still hash to BaseHash and StagedHash: a decision made on other content is stale, and
// its hunks are undecided again.
type FileDecision struct {
	BaseHash   string `json:"base"`
	StagedHash string `json:"staged"`
	// File is a whole-file verdict; it wins over hunk decisions.
	File diff.Verdict `json:"file,omitempty"`
	// Hunks are per-hunk decisions (with selected lines or an edit), keyed by hunk id.
	Hunks map[string]diff.Decision `json:"hunks,omitempty"`
}

// Decisions is the content of a session's decisions.json.
type Decisions struct {
	Version int                     `json:"version"`
	Files   map[string]FileDecision `json:"files"`
}

func (s *Session) decisionsPath() string { return filepath.Join(s.Dir, "decisions.json") }

// LoadDecisions reads decisions.json (an empty set when it does not exist).
func (s *Session) LoadDecisions() (*Decisions, error) {
	d := &Decisions{Version: 1, Files: map[string]FileDecision{}}
	data, err := os.ReadFile(s.decisionsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read decisions of session %s: %w", s.ID, err)
	}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("session %s: corrupt decisions.json: %v", s.ID, err)
	}
	if d.Files == nil {
		d.Files = map[string]FileDecision{}
	}
	return d, nil
}

func (s *Session) SaveDecisions(d *Decisions) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode decisions: %w", err)
	}
	return statefile.WriteFileAtomic(s.decisionsPath(), data, 0o600)
}

// For returns the decision about change c, or an empty (undecided) one when none was made or the
// one made is stale.
func (d *Decisions) For(c *changeset.Change) FileDecision {
	fd, ok := d.Files[c.Path]
	if !ok || fd.BaseHash != c.DecisionBase() || fd.StagedHash != changeset.ContentKey(c.New) {
		return FileDecision{}
	}
	return fd
}

// Decide records a decision about change c and saves it at once: with hunkID "" a whole-file
// verdict (Undecided clears every decision of the file), otherwise the decision of that hunk.
func (s *Session) Decide(c *changeset.Change, hunkID string, dec diff.Decision) error {
	unlock, err := s.StateLock(true)
	if err != nil {
		return err
	}
	defer unlock()
	d, err := s.LoadDecisions()
	if err != nil {
		return err
	}
	fd := d.For(c)
	fd.BaseHash, fd.StagedHash = c.DecisionBase(), changeset.ContentKey(c.New)
	if hunkID == "" {
		fd.File = dec.Verdict
		if dec.Verdict == diff.Undecided {
			fd.Hunks = nil
		}
	} else {
		if fd.Hunks == nil {
			fd.Hunks = map[string]diff.Decision{}
		}
		if dec.Verdict == diff.Undecided {
			delete(fd.Hunks, hunkID)
		} else {
			fd.Hunks[hunkID] = dec
		}
	}
	if fd.File == diff.Undecided && len(fd.Hunks) == 0 {
		delete(d.Files, c.Path)
	} else {
		d.Files[c.Path] = fd
	}
	return s.SaveDecisions(d)
}

// Contents returns the base and staged content of a regular-file change (nil for a side that does
// not exist or is not a regular file). A side larger than limit bytes (when limit > 0) is an error.
func (s *Session) Contents(c *changeset.Change, limit int64) (old, new []byte, err error) {
	host, b, err := s.Source().OpenView()
	if err != nil {
		return nil, nil, err
	}
	defer host.Close()
	defer b.Close()
	return s.Source().Contents(b, host, c, limit)
}

// Diff is the hunk-level diff of a text change: its hunks, whether the line diff finished in time
// (Exact) and its line counts. Binary, symlink, special and mode-only changes, which are decided
// as whole files, have no hunks.
func (s *Session) Diff(c *changeset.Change) (diff.FileDiff, error) {
	if !s.Hunkable(c) {
		return diff.FileDiff{Path: c.Path, Exact: true}, nil
	}
	host, b, err := s.Source().OpenView()
	if err != nil {
		return diff.FileDiff{}, err
	}
	defer host.Close()
	defer b.Close()
	return s.DiffIn(b, host, c)
}

// DiffIn is Diff against bases already loaded and the open project root.
func (s *Session) DiffIn(b *changeset.Bases, host *projectfs.Root, c *changeset.Change) (diff.FileDiff, error) {
	if !s.Hunkable(c) {
		return diff.FileDiff{Path: c.Path, Exact: true}, nil
	}
	old, new, err := s.Source().Contents(b, host, c, s.MaxDiffBytes)
	if err != nil {
		return diff.FileDiff{}, err
	}
	return diff.Compute(c.Path, old, new, diff.Options{Context: -1, Budget: s.DiffBudget}), nil
}

// Hunkable reports whether a change is decided hunk by hunk rather than as a whole file.
func (s *Session) Hunkable(c *changeset.Change) bool {
	return textChange(c) && !s.TooLargeToDiff(c)
}

// textChange reports whether a change could be diffed as text: regular files on both sides (or
// one side missing), not binary, sparse, unreadable, special, a rename or a mode change only.
func textChange(c *changeset.Change) bool {
	if c.Binary || c.Special || c.ModeOnly || c.From != "" || c.Unreadable != "" || c.Old.Holes > 0 || c.New.Holes > 0 {
		return false
	}
	return (c.Old.Kind == changeset.KindFile || c.Old.Kind == changeset.KindNone) && (c.New.Kind == changeset.KindFile || c.New.Kind == changeset.KindNone)
}

// TooLargeToDiff reports whether a text change has a side larger than the store's MaxDiffBytes:
// it is never read for a diff, shows no hunks and is decided (and applied) as a whole file.
func (s *Session) TooLargeToDiff(c *changeset.Change) bool {
	if !textChange(c) {
		return false
	}
	limit := s.MaxDiffBytes
	return c.Old.Size > limit || c.New.Size > limit
}

// hunkCore is a hunk's changed lines (first to last change), the part that identifies it whatever
// its position: used to carry a rejection over to the hunks computed on a new base.
func hunkCore(h diff.Hunk) string {
	first, last := -1, -1
	for i, l := range h.Lines {
		if l.Op != diff.Context {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return ""
	}
	var b bytes.Buffer
	for _, l := range h.Lines[first : last+1] {
		b.WriteByte(byte(l.Op))
		b.WriteString(l.Text)
		b.WriteByte(0)
	}
	return b.String()
}
