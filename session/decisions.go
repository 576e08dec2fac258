package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
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

// contentKey is the hash a decision records for one side of a change: the content's sha256, the
// symlink target, or "" when the side does not exist.
func contentKey(s Side) string {
	switch s.Kind {
	case KindFile:
		return s.Hash
	case KindSymlink:
		return "symlink:" + s.Target
	case KindSpecial:
		return "special"
	}
	return ""
}

func (s *Session) decisionsPath() string { return filepath.Join(s.dir, "decisions.json") }

// LoadDecisions reads decisions.json (an empty set when it does not exist).
func (s *Session) LoadDecisions() (*Decisions, error) {
	d := &Decisions{Version: 1, Files: map[string]FileDecision{}}
	data, err := os.ReadFile(s.decisionsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read decisions of session %s: %w", s.Meta.ID, err)
	}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("session %s: corrupt decisions.json: %v", s.Meta.ID, err)
	}
	if d.Files == nil {
		d.Files = map[string]FileDecision{}
	}
	return d, nil
}

func (s *Session) saveDecisions(d *Decisions) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode decisions: %w", err)
	}
	return statefile.WriteFileAtomic(s.decisionsPath(), data, 0o600)
}

// For returns the decision about change c, or an empty (undecided) one when none was made or the
// one made is stale.
func (d *Decisions) For(c *Change) FileDecision {
	fd, ok := d.Files[c.Path]
	if !ok || fd.BaseHash != c.decisionBase() || fd.StagedHash != contentKey(c.New) {
		return FileDecision{}
	}
	return fd
}

// Decide records a decision about change c and saves it at once: with hunkID "" a whole-file
// verdict (Undecided clears every decision of the file), otherwise the decision of that hunk.
func (s *Session) Decide(c *Change, hunkID string, dec diff.Decision) error {
	unlock, err := s.store.stateLock(s.Meta.Project, true)
	if err != nil {
		return err
	}
	defer unlock()
	d, err := s.LoadDecisions()
	if err != nil {
		return err
	}
	fd := d.For(c)
	fd.BaseHash, fd.StagedHash = c.decisionBase(), contentKey(c.New)
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
	return s.saveDecisions(d)
}

// Contents returns the base and staged content of a regular-file change (nil for a side that does
// not exist or is not a regular file). A side larger than limit bytes (when limit > 0) is an error.
func (s *Session) Contents(c *Change, limit int64) (old, new []byte, err error) {
	host, b, err := s.openView()
	if err != nil {
		return nil, nil, err
	}
	defer host.Close()
	defer b.close()
	return s.contents(b, host, c, limit)
}

func (s *Session) contents(b *bases, host *projectfs.Root, c *Change, limit int64) (old, new []byte, err error) {
	read := func(r io.Reader, what string) ([]byte, error) {
		if limit <= 0 {
			return io.ReadAll(r)
		}
		data, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err == nil && int64(len(data)) > limit {
			return nil, fmt.Errorf("%s of %s is larger than %d bytes", what, quote.Path(c.Path), limit)
		}
		return data, err
	}
	if c.Old.Kind == KindFile {
		e := c.base
		p := c.Path
		if c.From != "" {
			e, p = c.fromBase, c.From
		}
		var rc io.ReadCloser
		if c.BaseUnknown {
			rc, err = host.OpenRead(p)
		} else {
			rc, err = b.open(host, p, e)
		}
		if err != nil {
			return nil, nil, err
		}
		old, err = read(rc, "the base")
		rc.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read base of %s: %w", quote.Path(p), err)
		}
	}
	if c.New.Kind == KindFile {
		f, err := s.openStaged(c.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("read staged %s: %w", quote.Path(c.Path), err)
		}
		new, err = read(f, "the staged file")
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read staged %s: %w", quote.Path(c.Path), err)
		}
	}
	return old, new, nil
}

// Diff is the hunk-level diff of a text change: its hunks, whether the line diff finished in time
// (Exact) and its line counts. Binary, symlink, special and mode-only changes, which are decided
// as whole files, have no hunks.
func (s *Session) Diff(c *Change) (diff.FileDiff, error) {
	if !s.hunkable(c) {
		return diff.FileDiff{Path: c.Path, Exact: true}, nil
	}
	host, b, err := s.openView()
	if err != nil {
		return diff.FileDiff{}, err
	}
	defer host.Close()
	defer b.close()
	return s.diff(b, host, c)
}

// diff is Diff against bases already loaded and the open project root.
func (s *Session) diff(b *bases, host *projectfs.Root, c *Change) (diff.FileDiff, error) {
	if !s.hunkable(c) {
		return diff.FileDiff{Path: c.Path, Exact: true}, nil
	}
	old, new, err := s.contents(b, host, c, s.store.maxDiffBytes())
	if err != nil {
		return diff.FileDiff{}, err
	}
	return diff.Compute(c.Path, old, new, diff.Options{Context: -1, Budget: diffBudget}), nil
}

// diffBudget is the time a line diff may take (diffview's default when zero); tests shorten it.
var diffBudget time.Duration

// openStaged opens the staged regular file p beneath the upper layer, as projectfs.OpenRegularAt does (a
// file closed to its owner by its mode is opened all the same).
func (s *Session) openStaged(p string) (*os.File, error) {
	upper, err := projectfs.OpenRoot(s.UpperDir())
	if err != nil {
		return nil, err
	}
	defer upper.Close()
	return upper.OpenRead(p)
}

// hunkable reports whether a change is decided hunk by hunk rather than as a whole file.
func (s *Session) hunkable(c *Change) bool {
	return textChange(c) && !s.TooLargeToDiff(c)
}

// textChange reports whether a change could be diffed as text: regular files on both sides (or
// one side missing), not binary, sparse, unreadable, special, a rename or a mode change only.
func textChange(c *Change) bool {
	if c.Binary || c.Special || c.ModeOnly || c.From != "" || c.Unreadable != "" || c.Old.Holes > 0 || c.New.Holes > 0 {
		return false
	}
	return (c.Old.Kind == KindFile || c.Old.Kind == KindNone) && (c.New.Kind == KindFile || c.New.Kind == KindNone)
}

// TooLargeToDiff reports whether a text change has a side larger than the store's MaxDiffBytes:
// it is never read for a diff, shows no hunks and is decided (and applied) as a whole file.
func (s *Session) TooLargeToDiff(c *Change) bool {
	if !textChange(c) {
		return false
	}
	limit := s.store.maxDiffBytes()
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
