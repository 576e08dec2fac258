package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
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
	// Hash is the sha256 of a regular file's content ("" when unknown).
	Hash string `json:"sha256,omitempty"`
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
	// Protected: a path an agent must not change silently (SPEC §4).
	Protected bool `json:"protected,omitempty"`
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

	shadowed bool      // under an opaque or replaced directory in the upper layer
	base     baseEntry // the base this change was computed against
	fromBase baseEntry // the base of From, for renames
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

// rawEntry is one path the upper layer touches: a staged file, symlink or special file, or a
// deletion (a whiteout, or a host file hidden by an opaque or replaced directory).
type rawEntry struct {
	path     string
	kind     byte // 'f' file, 'l' symlink, 'o' special, 'w' deleted
	stat     fileStat
	target   string
	shadowed bool
}

// isWhiteout reports whether an upper entry is an overlay whiteout: a 0/0 character device, or a
// zero-size file carrying the overlay.whiteout xattr (nested overlays).
func isWhiteout(p string, st *unix.Stat_t) bool {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		return st.Rdev == 0
	case unix.S_IFREG:
		return st.Size == 0 && hasXattr(p, "overlay.whiteout")
	}
	return false
}

// hasXattr checks both the user. (userxattr mounts) and trusted. namespaces.
func hasXattr(p, name string) bool {
	for _, ns := range []string{"user.", "trusted."} {
		if _, err := unix.Lgetxattr(p, ns+name, nil); err == nil {
			return true
		}
	}
	return false
}

// isOpaque reports whether an upper directory replaces the lower one (overlay.opaque = "y").
func isOpaque(p string) bool {
	buf := make([]byte, 8)
	for _, ns := range []string{"user.", "trusted."} {
		n, err := unix.Lgetxattr(p, ns+"overlay.opaque", buf)
		if err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// scanUpper lists every path the upper layer changes. It reads the upper layer only, plus the
// host directories an opaque directory or whiteout hides: its cost grows with the change.
func scanUpper(upper string, host *projectRoot) ([]rawEntry, error) {
	var out []rawEntry
	seen := map[string]bool{}
	hidden := map[string]bool{}
	hideHost := func(rel string) error {
		h, err := host.lstat(rel)
		if err != nil || !h.exists {
			return err
		}
		if h.stat.Type != 'd' {
			hidden[rel] = true
			return nil
		}
		return filepath.WalkDir(filepath.Join(host.path, rel), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			r, _ := filepath.Rel(host.path, p)
			hidden[filepath.ToSlash(r)] = true
			return nil
		})
	}
	var walk func(rel string, shadowed bool) error
	walk = func(rel string, shadowed bool) error {
		dir := filepath.Join(upper, filepath.FromSlash(rel))
		d, err := os.Open(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rel != "" {
				return nil // removed while a run is going
			}
			return fmt.Errorf("scan staged changes: %w", err)
		}
		defer d.Close()
		ents, err := d.ReadDir(-1)
		if err != nil {
			return fmt.Errorf("scan staged changes: %w", err)
		}
		// Entries are described relative to the open directory, not by looking up their whole
		// path again.
		dfd := int(d.Fd())
		for _, e := range ents {
			child := e.Name()
			if rel != "" {
				child = rel + "/" + e.Name()
			}
			p := filepath.Join(dir, e.Name())
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				h, err := host.lstat(child)
				if err != nil {
					return err
				}
				sub := shadowed
				if isOpaque(p) || (h.exists && h.stat.Type != 'd') {
					if err := hideHost(child); err != nil {
						return err
					}
					sub = true
				}
				if err := walk(child, sub); err != nil {
					return err
				}
				continue
			}
			if isWhiteout(p, &st) {
				if err := hideHost(child); err != nil {
					return err
				}
				continue
			}
			r := rawEntry{path: child, stat: statFromUnix(&st), shadowed: shadowed}
			switch r.stat.Type {
			case 'f':
				r.kind = 'f'
			case 'l':
				r.kind = 'l'
				if r.target, err = readlinkat(dfd, e.Name()); err != nil {
					continue
				}
			default:
				r.kind = 'o'
			}
			// A file replacing a host directory hides everything in it.
			if h, err := host.lstat(child); err == nil && h.exists && h.stat.Type == 'd' {
				if err := hideHost(child); err != nil {
					return err
				}
			}
			seen[child] = true
			out = append(out, r)
		}
		return nil
	}
	if err := walk("", false); err != nil {
		return nil, err
	}
	for p := range hidden {
		if !seen[p] {
			out = append(out, rawEntry{path: p, kind: 'w', shadowed: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// Changes computes the session's change set from its upper layer, classified (ignored, protected,
// conflict). It works while a run is going.
func (s *Session) Changes() (*ChangeSet, error) {
	unlock, err := s.store.stateLock(s.Meta.Project, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.changes(nil)
}

// extraProtected is the session's own protected patterns plus more.
func (s *Session) extraProtected(more []string) []string {
	return append(append([]string(nil), s.protected...), more...)
}

// changes computes the change set; extraProtected extends the protected patterns.
func (s *Session) changes(extraProtected []string) (*ChangeSet, error) {
	if s.Meta.State == StateDiscarded {
		return nil, fmt.Errorf("session %s was discarded: its staged changes are gone", s.Meta.ID)
	}
	host, err := openRoot(s.Meta.Project)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	if empty, err := emptyDir(s.UpperDir()); err == nil && empty {
		return &ChangeSet{}, nil // nothing staged: no need for the bases and the manifest
	}
	b, err := s.loadBases()
	if err != nil {
		return nil, err
	}
	defer b.close()
	return s.changesIn(b, host, extraProtected)
}

// changesIn computes the change set against bases already loaded and the open project root.
func (s *Session) changesIn(b *bases, host *projectRoot, extraProtected []string) (*ChangeSet, error) {
	if s.Meta.State == StateDiscarded {
		return nil, fmt.Errorf("session %s was discarded: its staged changes are gone", s.Meta.ID)
	}
	upper, err := openRoot(s.UpperDir())
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.Meta.ID, err)
	}
	defer upper.Close()
	raw, err := scanUpper(s.UpperDir(), host)
	if err != nil {
		return nil, err
	}
	cs, err := buildChanges(b, host, upper, raw)
	if err != nil {
		return nil, err
	}
	detectRenames(cs)
	if err := s.classify(cs, b, host, upper, s.extraProtected(extraProtected)); err != nil {
		return nil, err
	}
	return cs, nil
}

// changeChunk is how many upper entries a worker of buildChanges takes at a time: neighbours share
// directories, whose descriptors each worker caches.
const changeChunk = 128

// buildChanges runs buildChange over every upper entry, in order, on up to applyWorkers goroutines
// when there are many (reading and hashing thousands of small files is mostly per-file kernel work);
// each worker resolves paths through descriptors of its own.
func buildChanges(b *bases, host, upper *projectRoot, raw []rawEntry) (*ChangeSet, error) {
	type result struct {
		c       Change
		changed bool
	}
	results := make([]result, len(raw))
	chunks := (len(raw) + changeChunk - 1) / changeChunk
	errs := make([]error, chunks)
	var next atomic.Int64
	work := func(h, u *projectRoot) {
		for {
			k := int(next.Add(1)) - 1
			if k >= chunks {
				return
			}
			for i := k * changeChunk; i < min(len(raw), (k+1)*changeChunk); i++ {
				c, changed, err := buildChange(b, h, u, raw[i])
				if err != nil {
					errs[k] = err
					break
				}
				results[i] = result{c, changed}
			}
		}
	}
	if workers := min(applyWorkers, chunks); workers <= 1 {
		work(host, upper)
	} else {
		var wg sync.WaitGroup
		for range workers {
			h, err := host.clone()
			if err != nil {
				return nil, err
			}
			u, err := upper.clone()
			if err != nil {
				h.Close()
				return nil, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer h.Close()
				defer u.Close()
				work(h, u)
			}()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	cs := &ChangeSet{}
	for _, r := range results {
		if r.changed {
			cs.Changes = append(cs.Changes, r.c)
		}
	}
	return cs, nil
}

// headHash reads r fully, returning its sha256, its size and whether its first 8 KiB hold a NUL.
func headHash(r io.Reader) (string, int64, bool, error) {
	h := sha256.New()
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	head := buf[:8000]
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", 0, false, err
	}
	h.Write(head[:n])
	binary := bytes.IndexByte(head[:n], 0) >= 0
	if err != nil {
		// r ended within the head: no need to read it again to see that.
		return hex.EncodeToString(h.Sum(nil)), int64(n), binary, nil
	}
	rest, err := copyPooled(h, r, buf)
	if err != nil {
		return "", 0, false, err
	}
	return hex.EncodeToString(h.Sum(nil)), int64(n) + rest, binary, nil
}

// copyBuffers hold the buffers of copyPooled: one change set reads thousands of small files, and
// io.Copy from an *os.File would allocate (and clear) 32 KiB for each.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled copies r to w through buf (never through r's WriteTo, which allocates its own).
func copyPooled(w io.Writer, r io.Reader, buf []byte) (int64, error) {
	return io.CopyBuffer(w, struct{ io.Reader }{r}, buf)
}

// fileHash is the sha256 of the regular file p under root, the staged layer or the project
// ("" when unreadable).
func fileHash(upper *projectRoot, p string) string {
	fd, err := upper.openReadFD(p)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	sum, _, _, err := headHash(fdIO(fd))
	if err != nil {
		return ""
	}
	return sum
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
func buildChange(b *bases, host, upper *projectRoot, r rawEntry) (Change, bool, error) {
	c := Change{Path: r.path, shadowed: r.shadowed}
	e := b.get(r.path)
	c.base = e
	var oldBinary bool
	switch e.Kind {
	case baseAbsent:
	case baseUnknown:
		c.BaseUnknown = true
		h, err := host.lstat(r.path)
		if err != nil {
			return c, false, err
		}
		if h.exists && h.stat.Type != 'd' {
			c.Old = Side{Kind: kindOf(h.stat.Type), Mode: h.stat.Mode, Size: h.stat.Size, Target: h.target}
		}
	default:
		c.Old = Side{Kind: kindOf(e.Type), Mode: e.Mode, Size: e.Host.Size, Target: e.Target, Hash: e.Hash}
		if e.Type == 'f' && e.Kind == baseHost && e.Hash != "" && r.kind == 'f' && fileHash(upper, r.path) == e.Hash {
			// An applied file whose staged copy is what was applied: nothing to read on the host.
			c.Old.Size = r.stat.Size
		} else if e.Type == 'f' && e.Kind == baseObject && e.Pack != "" {
			// A packed pre-image: its hash, size and binary test were recorded when it was
			// taken; its content is read (and checked against the hash) only when shown.
			if err := b.checkPacked(r.path, e); err != nil {
				return c, false, fmt.Errorf("session %s: %w", filepath.Base(filepath.Dir(b.dir)), err)
			}
			c.Old.Size, oldBinary = e.Len, e.Bin
		} else if e.Type == 'f' {
			rc, err := b.open(host, r.path, e)
			if errors.Is(err, errCorruptBase) {
				return c, false, fmt.Errorf("session %s: %w", filepath.Base(filepath.Dir(b.dir)), err)
			}
			if err != nil {
				// The host moved on without a pre-image: review treats it as a conflict.
				c.BaseUnknown = true
			} else {
				sum, size, bin, err := headHash(rc)
				rc.Close()
				if err != nil {
					return c, false, fmt.Errorf("read base of %s: %w", visible(r.path), err)
				}
				c.Old.Hash, c.Old.Size, oldBinary = sum, size, bin
			}
		}
	}
	switch r.kind {
	case 'w':
	case 'f':
		fd, err := upper.openReadFD(r.path)
		if errors.Is(err, fs.ErrNotExist) {
			return c, false, nil
		}
		if err != nil {
			return c, false, fmt.Errorf("read staged %s: %w", visible(r.path), err)
		}
		sum, size, bin, err := headHash(fdIO(fd))
		unix.Close(fd)
		if err != nil {
			return c, false, fmt.Errorf("read staged %s: %w", visible(r.path), err)
		}
		c.New = Side{Kind: KindFile, Mode: r.stat.Mode, Size: size, Hash: sum}
		c.Binary = bin || oldBinary
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
		}
		if c.Special {
			flags = append(flags, "special file, not applied")
		}
		name := visible(c.Path)
		if c.From != "" {
			name = visible(c.From) + " -> " + name
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
		h += fmt.Sprintf(", %d type changes", s.Other)
	}
	if s.Ignored+s.Protected+s.Conflicts > 0 {
		h += fmt.Sprintf(" (%d ignored, %d protected, %d conflicts)", s.Ignored, s.Protected, s.Conflicts)
	}
	return h
}

// visible quotes a path for a one-line message when it holds control characters, invalid UTF-8 or
// spaces at its ends, so that a file name can never inject terminal escapes or fake lines.
func visible(p string) string {
	if !utf8.ValidString(p) || strings.TrimSpace(p) != p {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return strconv.Quote(p)
		}
	}
	return p
}
