// Package changeset computes what an agent changed: a session's manifest of the project at its
// start, the pre-images of what it touched, the scan of its staging layer, and the change set
// read from them, each change classified (ignored, protected, changed by the host too, and then
// merged three-way or in conflict). It reads; it never writes the project.
package changeset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// Status is a change's git-style letter.
type Status string

// The statuses of a change.
const (
	Added    Status = "A"
	Modified Status = "M"
	Deleted  Status = "D"
	Renamed  Status = "R"
	TypeChg  Status = "T" // a file became a symlink or the reverse
)

// FileKind is what a path holds on one side of a change.
type FileKind string

// The kinds of a side of a change.
const (
	KindNone    FileKind = ""
	KindFile    FileKind = "file"
	KindSymlink FileKind = "symlink"
	KindSpecial FileKind = "special" // FIFO, socket or device: listed, never applied
)

// Side is one side (base or staged) of a change.
type Side struct {
	Kind FileKind `json:"kind,omitempty"`
	// Mode holds the permission bits plus setuid/setgid/sticky (0o7777).
	Mode   uint32 `json:"mode,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Target string `json:"target,omitempty"`
	// Hash names a regular file's content ("" when unknown): its sha256, or for a content with
	// at least 1 MiB of zeros in aligned 4 KiB blocks, "zeros-" and a sha256 that counts those
	// blocks rather than reading them (projectfs.ContentSum).
	Hash string `json:"sha256,omitempty"`
	// Holes is how many bytes of a sparse regular file are holes, when at least 1 MiB are: such
	// a side is never read for a diff, only named, and an apply writes its holes as holes.
	Holes int64 `json:"holes,omitempty"`
}

// Exists reports whether the path exists on this side.
func (s Side) Exists() bool { return s.Kind != KindNone }

// Change is one changed path of a session: what the base held, what the agent staged, and how
// review and apply must treat it.
type Change struct {
	Path string `json:"path"`
	// From is the source path of a rename.
	From   string `json:"from,omitempty"`
	Status Status `json:"status"`
	Old    Side   `json:"old"`
	New    Side   `json:"new"`
	// Binary is set when either side has a NUL byte in its first 8 KiB (git's test).
	Binary bool `json:"binary,omitempty"`
	// ModeOnly is set when only the mode changed.
	ModeOnly bool `json:"mode_only,omitempty"`
	// Ignored: matched by the base's .gitignore rules or .git/info/exclude.
	Ignored bool `json:"ignored,omitempty"`
	// Protected: a path an agent must not change silently (SPEC §4); ProtectedWhy names the tool
	// that reads or runs it (ProtectedPaths), or says the config or a git-shaped directory made it so.
	Protected    bool   `json:"protected,omitempty"`
	ProtectedWhy string `json:"protected_why,omitempty"`
	// Conflict: the host changed the path since the session's view of it, or its base is unknown.
	Conflict bool   `json:"conflict,omitempty"`
	Reason   string `json:"conflict_reason,omitempty"`
	// OutsideLink: a staged symlink whose target resolves outside the project.
	OutsideLink bool `json:"outside_link,omitempty"`
	// Special: the staged entry is a FIFO, socket or device; it is never applied.
	Special bool `json:"special,omitempty"`
	// SetID: the staged mode has setuid, setgid or sticky bits, which apply strips.
	SetID bool `json:"setid,omitempty"`
	// BaseUnknown: the base of this path could not be recorded; Old describes the host instead.
	BaseUnknown bool `json:"base_unknown,omitempty"`
	// Unreadable says why the staged entry could not be read (a file or directory of another
	// owner that its mode closes); it is listed, never applied.
	Unreadable string `json:"unreadable,omitempty"`
	// Host is what the project holds now at a path the host changed since the session's view of
	// it (nil otherwise, or when it holds nothing there); Merge says how the host's change and the
	// agent's combine (SPEC §13; "" when they cannot be merged line by line: Reason says why).
	Host  *Side      `json:"host,omitempty"`
	Merge MergeState `json:"merge,omitempty"`

	shadowed bool      // under an opaque or replaced directory in the upper layer
	base     BaseEntry // the base this change was computed against
	fromBase BaseEntry // the base of From, for renames
}

// ChangeSet is every change a session stages, sorted by path.
type ChangeSet struct {
	Changes []Change `json:"changes"`
}

// Find returns the change at path (or renamed from path).
func (cs *ChangeSet) Find(p string) (*Change, bool) {
	for i := range cs.Changes {
		if cs.Changes[i].Path == p || cs.Changes[i].From == p {
			return &cs.Changes[i], true
		}
	}
	return nil, false
}

// ChangesFrom computes the change set of the upper entries raw, scanned already; protected are
// the session's patterns beyond the built-in list.
func (s *Source) ChangesFrom(b *Bases, host *projectfs.Root, raw []RawEntry, protected []string) (*ChangeSet, error) {
	upper, err := projectfs.OpenRoot(s.Upper)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.ID, err)
	}
	defer upper.Close()
	cs, err := buildChanges(b, host, raw)
	if err != nil {
		return nil, err
	}
	detectRenames(cs)
	if err := s.classify(cs, b, host, upper, protected); err != nil {
		return nil, err
	}
	if err := s.mergeConflicts(cs, b, host); err != nil {
		return nil, err
	}
	return cs, nil
}

// Source is what a change set is computed from: the project, a session's staging layer and its
// pre-images, and the patterns that protect paths beyond the built-in ones.
type Source struct {
	ID           string // the session's, for messages
	Project      string
	Upper        string        // the staging layer
	Dir          string        // the session's directory: its manifest and pre-images
	MaxDiffBytes int64         // the largest text file diffed (and merged) line by line
	DiffBudget   time.Duration // the time a line diff may take
	// Manifest is the session's manifest when the process recorded it; the first load of the bases
	// uses it (see LoadBases).
	Manifest *Manifest
}

// changeChunk is how many upper entries a worker of buildChanges takes at a time: neighbours share
// directories, whose descriptors each worker caches.
const changeChunk = 128

// buildChanges runs buildChange over every upper entry, in order, on up to projectfs.ApplyWorkers goroutines
// when there are many (a base may have to be read and hashed, the host looked at); each worker
// resolves paths through descriptors of its own.
func buildChanges(b *Bases, host *projectfs.Root, raw []RawEntry) (*ChangeSet, error) {
	changes := make([]Change, len(raw))
	changed := make([]bool, len(raw))
	chunks := (len(raw) + changeChunk - 1) / changeChunk
	errs := make([]error, chunks)
	var next atomic.Int64
	work := func(h *projectfs.Root) {
		for {
			k := int(next.Add(1)) - 1
			if k >= chunks {
				return
			}
			for i := k * changeChunk; i < min(len(raw), (k+1)*changeChunk); i++ {
				c, ok, err := buildChange(b, h, raw[i])
				if err != nil {
					errs[k] = err
					break
				}
				changes[i], changed[i] = c, ok
			}
		}
	}
	if workers := min(projectfs.ApplyWorkers, chunks); workers <= 1 {
		work(host)
	} else {
		var wg sync.WaitGroup
		for range workers {
			h, err := host.Clone()
			if err != nil {
				next.Store(int64(chunks)) // the workers started stop after their chunk
				wg.Wait()
				return nil, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer h.Close()
				work(h)
			}()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// Unchanged entries are dropped in place: a change set of thousands is not copied again.
	out := changes[:0]
	for i := range changes {
		if changed[i] {
			out = append(out, changes[i])
		}
	}
	clear(changes[len(out):])
	return &ChangeSet{Changes: out}, nil
}

func kindOf(t byte) FileKind {
	switch t {
	case 'f':
		return KindFile
	case 'l':
		return KindSymlink
	case 0:
		return KindNone
	}
	return KindSpecial
}

// buildChange compares one upper entry with its base; changed is false for a copied-up file that is
// identical to its base in content and mode.
func buildChange(b *Bases, host *projectfs.Root, r RawEntry) (Change, bool, error) {
	c := Change{Path: r.Path, shadowed: r.shadowed}
	if r.readErr != nil {
		c.Unreadable = r.readErr.Error()
	}
	e := b.Get(r.Path)
	c.base = e
	var oldBinary bool
	switch e.Kind {
	case BaseAbsent:
	case BaseUnknown:
		c.BaseUnknown = true
		h, err := host.Lstat(r.Path)
		if err != nil {
			return c, false, err
		}
		if h.Exists && h.Stat.Type != 'd' {
			c.Old = Side{Kind: kindOf(h.Stat.Type), Mode: h.Stat.Mode, Size: h.Stat.Size, Target: h.Target}
		}
	default:
		c.Old = Side{Kind: kindOf(e.Type), Mode: e.Mode, Size: e.Host.Size, Target: e.Target, Hash: e.Hash}
		if e.Type == 'f' && e.Kind == BaseHost && e.Hash != "" && r.Kind == 'f' && r.hash == e.Hash {
			// An applied file whose staged copy is what was applied: nothing to read on the host.
			c.Old.Size, c.Old.Holes = r.stat.Size, projectfs.SparseHoles(r.holes)
		} else if e.Type == 'f' && e.Kind == BaseObject && e.Pack != "" {
			// A packed pre-image: its hash, size and binary test were recorded when it was
			// taken; its content is read (and checked against the hash) only when shown.
			if err := b.checkPacked(r.Path, e); err != nil {
				return c, false, fmt.Errorf("session %s: %w", filepath.Base(filepath.Dir(b.Dir)), err)
			}
			c.Old.Size, c.Old.Holes, oldBinary = e.Len, e.Holes, e.Bin
		} else if e.Type == 'f' {
			rc, err := b.Open(host, r.Path, e)
			if errors.Is(err, errCorruptBase) {
				return c, false, fmt.Errorf("session %s: %w", filepath.Base(filepath.Dir(b.Dir)), err)
			}
			if err != nil {
				// The host moved on without a pre-image: review treats it as a conflict.
				c.BaseUnknown = true
			} else {
				sum, err := projectfs.SumReader(rc)
				rc.Close()
				if err != nil {
					return c, false, fmt.Errorf("read base of %s: %w", quote.Path(r.Path), err)
				}
				c.Old.Hash, c.Old.Size, c.Old.Holes, oldBinary = sum.Hash, sum.Size, projectfs.SparseHoles(sum.Holes), sum.Binary
			}
		}
	}
	switch r.Kind {
	case 'w':
	case 'f':
		c.New = Side{Kind: KindFile, Mode: r.stat.Mode, Size: r.size, Hash: r.hash, Holes: projectfs.SparseHoles(r.holes)}
		if r.readErr != nil {
			c.New.Size = r.stat.Size
		}
		c.Binary = r.binary || oldBinary
	case 'u':
		// Not looked at: listed, with the reason, and never applied.
		c.New = Side{Kind: KindSpecial}
	case 'l':
		c.New = Side{Kind: KindSymlink, Mode: 0o777, Target: r.target}
	default:
		c.New = Side{Kind: KindSpecial, Mode: r.stat.Mode}
		c.Special = true
	}
	if c.Old.Kind == KindFile && c.New.Kind == KindFile {
		c.Binary = c.Binary || oldBinary
	} else if c.Old.Kind == KindFile && !c.New.Exists() {
		c.Binary = oldBinary
	}
	switch {
	case !c.Old.Exists() && !c.New.Exists():
		return c, false, nil
	case !c.Old.Exists():
		c.Status = Added
	case !c.New.Exists():
		c.Status = Deleted
	case c.Old.Kind != c.New.Kind:
		c.Status = TypeChg
	default:
		c.Status = Modified
		same := false
		switch c.New.Kind {
		case KindFile:
			same = c.Old.Hash != "" && c.Old.Hash == c.New.Hash
		case KindSymlink:
			same = c.Old.Target == c.New.Target
		}
		if same && !c.BaseUnknown {
			if c.New.Kind == KindSymlink || c.Old.Mode == c.New.Mode {
				return c, false, nil
			}
			c.ModeOnly = true
		}
	}
	c.SetID = c.New.Kind == KindFile && c.New.Mode&0o7000 != 0
	reason, err := conflictReason(b, host, c.Path, c.base)
	if err != nil {
		return c, false, err
	}
	c.Reason = reason
	return c, true, nil
}

// detectRenames pairs a deleted and an added regular file with the same content into one rename,
// like git's exact rename detection; a basename match is preferred among equal contents.
func detectRenames(cs *ChangeSet) {
	added := map[string][]int{}
	for i, c := range cs.Changes {
		if c.Status == Added && c.New.Kind == KindFile && c.New.Hash != "" && c.New.Size > 0 {
			added[c.New.Hash] = append(added[c.New.Hash], i)
		}
	}
	if len(added) == 0 {
		return
	}
	drop := map[int]bool{}
	for i, c := range cs.Changes {
		if c.Status != Deleted || c.Old.Kind != KindFile || c.Old.Hash == "" || c.BaseUnknown {
			continue
		}
		cands := added[c.Old.Hash]
		if len(cands) == 0 {
			continue
		}
		pick := 0
		for k, j := range cands {
			if path.Base(cs.Changes[j].Path) == path.Base(c.Path) {
				pick = k
				break
			}
		}
		j := cands[pick]
		added[c.Old.Hash] = append(cands[:pick:pick], cands[pick+1:]...)
		a := &cs.Changes[j]
		a.Status, a.From, a.Old, a.fromBase = Renamed, c.Path, c.Old, c.base
		if a.Reason == "" {
			a.Reason = c.Reason // the host changed the source
		}
		a.Binary = a.Binary || c.Binary
		a.shadowed = a.shadowed || c.shadowed
		drop[i] = true
	}
	out := cs.Changes[:0]
	for i, c := range cs.Changes {
		if !drop[i] {
			out = append(out, c)
		}
	}
	cs.Changes = out
}

// Summary is the short account of a change set that `shadow run` prints when the command ends.
type Summary struct {
	Added, Modified, Deleted, Renamed, Other int
	Ignored, Protected, Conflicts            int
	// Lines are up to Limit "STATUS path" lines, most relevant first (non-ignored before ignored).
	Lines []string
	// More is how many changes were left out of Lines.
	More int
}

// Summarize counts a change set and lists up to limit of its changes.
func Summarize(cs *ChangeSet, limit int) Summary {
	var s Summary
	var main, ign []string
	for _, c := range cs.Changes {
		switch c.Status {
		case Added:
			s.Added++
		case Modified:
			s.Modified++
		case Deleted:
			s.Deleted++
		case Renamed:
			s.Renamed++
		default:
			s.Other++
		}
		var flags []string
		if c.Protected {
			s.Protected++
			flags = append(flags, "protected")
		}
		if c.Conflict {
			s.Conflicts++
			flags = append(flags, "conflict")
		} else if c.Merge == MergeClean {
			flags = append(flags, "changed on the host too: merges cleanly")
		}
		if c.Special {
			flags = append(flags, "special file, not applied")
		}
		if c.Unreadable != "" {
			flags = append(flags, "cannot be read, not applied")
		} else if c.New.Holes > 0 {
			flags = append(flags, "sparse: "+projectfs.HumanSize(c.New.Size)+" apparent, "+projectfs.HumanSize(c.New.Size-c.New.Holes)+" stored")
		}
		name := quote.Path(c.Path)
		if c.From != "" {
			name = quote.Path(c.From) + " -> " + name
		}
		line := string(c.Status) + " " + name
		if len(flags) > 0 {
			line += " (" + strings.Join(flags, ", ") + ")"
		}
		if c.Ignored {
			s.Ignored++
			ign = append(ign, line+" (ignored)")
			continue
		}
		main = append(main, line)
	}
	all := append(main, ign...)
	if limit >= 0 && len(all) > limit {
		s.More = len(all) - limit
		all = all[:limit]
	}
	s.Lines = all
	return s
}

// Total is the number of changes summarised.
func (s Summary) Total() int { return s.Added + s.Modified + s.Deleted + s.Renamed + s.Other }

// Headline is a one-line count such as "3 added, 1 modified, 0 deleted".
func (s Summary) Headline() string {
	h := fmt.Sprintf("%d added, %d modified, %d deleted", s.Added, s.Modified, s.Deleted)
	if s.Renamed > 0 {
		h += fmt.Sprintf(", %d renamed", s.Renamed)
	}
	if s.Other > 0 {
		h += ", " + english.Count(s.Other, "type change")
	}
	if s.Ignored+s.Protected+s.Conflicts > 0 {
		h += fmt.Sprintf(" (%d ignored, %d protected, %s)", s.Ignored, s.Protected, english.Count(s.Conflicts, "conflict"))
	}
	return h
}

// visible quotes a path for a one-line message when it holds control characters, invalid UTF-8 or
// spaces at its ends, so that a file name can never inject terminal escapes or fake lines.

// Select returns the changes at or below the given project-relative paths (all when none given).
func (cs *ChangeSet) Select(paths []string) []*Change {
	var out []*Change
	for i := range cs.Changes {
		if len(paths) == 0 || Selected(&cs.Changes[i], paths) {
			out = append(out, &cs.Changes[i])
		}
	}
	return out
}

// Note is a line about a change that its diff does not show: why the staged entry could not be
// read, or that a side is sparse (its size, and the bytes it stores), which is never read for a
// diff. It is "" for any other change.
func (c *Change) Note() string {
	if c.Unreadable != "" {
		return c.Unreadable + "; listed, not applied"
	}
	var sides []string
	for _, s := range []struct {
		name string
		side Side
	}{{"base", c.Old}, {"staged", c.New}} {
		if s.side.Holes > 0 {
			sides = append(sides, fmt.Sprintf("%s %s apparent, %s stored", s.name,
				projectfs.HumanSize(s.side.Size), projectfs.HumanSize(s.side.Size-s.side.Holes)))
		}
	}
	if len(sides) == 0 {
		return ""
	}
	return "sparse file: " + strings.Join(sides, "; ") + "; not shown as text"
}

// DecisionBase is what a decision about c records as its base: the base content, or for a merged
// change the base and the host's content both, so that a decision made on the merge against one
// host file does not hold against another.
func (c *Change) DecisionBase() string {
	if c.Merge == "" || c.Host == nil {
		return ContentKey(c.Old)
	}
	return MergeKey(c.Old, c.Host.Hash)
}

func (s *Source) Contents(b *Bases, host *projectfs.Root, c *Change, limit int64) (old, new []byte, err error) {
	read := func(r io.Reader, size int64, what string) ([]byte, error) {
		if limit > 0 {
			r = io.LimitReader(r, limit+1)
		}
		// Sized from the change set, a large file is read into one buffer rather than one
		// that doubles as it fills (a 200 MB file allocated about twice over, and copied at
		// each doubling); the room for one more read tells a file that grew since.
		var buf bytes.Buffer
		if size > 0 && (limit <= 0 || size <= limit) {
			buf.Grow(int(size) + bytes.MinRead)
		}
		if _, err := buf.ReadFrom(r); err != nil {
			return nil, err
		}
		if limit > 0 && int64(buf.Len()) > limit {
			return nil, fmt.Errorf("%s of %s is larger than %d bytes", what, quote.Path(c.Path), limit)
		}
		return buf.Bytes(), nil
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
			rc, err = b.Open(host, p, e)
		}
		if err != nil {
			return nil, nil, err
		}
		old, err = read(rc, c.Old.Size, "the base")
		rc.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read base of %s: %w", quote.Path(p), err)
		}
	}
	if c.New.Kind == KindFile {
		f, err := s.OpenStaged(c.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("read staged %s: %w", quote.Path(c.Path), err)
		}
		new, err = read(f, c.New.Size, "the staged file")
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read staged %s: %w", quote.Path(c.Path), err)
		}
	}
	return old, new, nil
}

// OpenStaged opens the staged regular file p beneath the upper layer, as projectfs.OpenRegularAt does (a
// file closed to its owner by its mode is opened all the same).
func (s *Source) OpenStaged(p string) (*os.File, error) {
	upper, err := projectfs.OpenRoot(s.Upper)
	if err != nil {
		return nil, err
	}
	defer upper.Close()
	return upper.OpenRead(p)
}

// ContentKey is the hash a decision records for one side of a change: the content's sha256, the
// symlink target, or "" when the side does not exist.
func ContentKey(s Side) string {
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

// Selected reports whether change c is named by the PATH arguments.
func Selected(c *Change, paths []string) bool {
	for _, p := range paths {
		p = strings.Trim(filepath.ToSlash(filepath.Clean(p)), "/")
		if p == "" || p == "." {
			return true
		}
		for _, q := range []string{c.Path, c.From} {
			if q != "" && (q == p || strings.HasPrefix(q, p+"/")) {
				return true
			}
		}
	}
	return false
}

// ShortHash is the first 12 hex digits of a content hash.
func ShortHash(h string) string {
	h = strings.TrimPrefix(h, "zeros-")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Skipped is a change an apply or an export leaves out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// MaxPatchBytes bounds each side of a file put into a patch (it is held in memory).
const MaxPatchBytes = 256 << 20
