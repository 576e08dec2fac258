package history

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// Step diffs (`shadow diff --checkpoint ID`, `--since ID`, `shadow log`): the tree at a moment of
// the history is the session's base under checkpoints 1..k, each a layer over the one before.
// A path is looked up from the newest layer down; a whiteout deletes it, an opaque directory or a
// non-directory above it hides what the layers below hold.

// Moment is a point of a session's history: Base (before the first checkpoint) or the index of a
// checkpoint in Checkpoints' list.
const Base = -1

// momentEntry is what a path is at a moment: absent, or an entry of a layer or of the base.
type momentEntry struct {
	exists bool
	dir    bool
	layer  *projectfs.Root // the layer holding it; nil for the base
	base   changeset.BaseEntry
}

// timeline reads the session's tree at any moment.
type timeline struct {
	s      *Layers
	layers []*projectfs.Root // the layers, oldest first (nil: a layer that could not be opened)
	host   *projectfs.Root
	b      *changeset.Bases
}

func (s *Layers) openTimeline(cps []Checkpoint) (*timeline, error) {
	host, b, err := s.Source().OpenView()
	if err != nil {
		return nil, err
	}
	h := &timeline{s: s, host: host, b: b}
	// Every layer is read beneath a descriptor of its root, a directory at a time: a staged path
	// may be longer than PATH_MAX.
	for _, c := range cps {
		l, err := projectfs.OpenRoot(filepath.Join(s.CheckpointDir(), c.ID, "layer"))
		if err != nil {
			l = nil // holds nothing, as a layer with no such directory did
		}
		h.layers = append(h.layers, l)
	}
	return h, nil
}

func (h *timeline) close() {
	for _, l := range h.layers {
		if l != nil {
			l.Close()
		}
	}
	h.b.Close()
	h.host.Close()
}

// layerStat describes rel in the layer l without following a symlink; ok is false when the layer
// holds nothing there.
func layerStat(l *projectfs.Root, rel string) (st unix.Stat_t, ok bool) {
	if l == nil {
		return st, false
	}
	dir, name, err := l.OpenParent(rel, false)
	st, exists, err := projectfs.StatAt(dir, err, name)
	return st, exists && err == nil
}

// LayerOpaque reports whether the directory rel of the layer l replaces what the layers below
// hold there.
func LayerOpaque(l *projectfs.Root, rel string) bool {
	dir, name, err := l.OpenParent(rel, false)
	return err == nil && opaqueAt(dir, name)
}

// opaqueAt reports whether the entry name of the layer directory dir is marked opaque.
func opaqueAt(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && layers.KindAt(dir, name, &st) == layers.OpaqueDir
}

// LayerWhiteout reports whether rel in the layer l deletes what the layers below hold there.
func LayerWhiteout(l *projectfs.Root, rel string) bool {
	dir, name, err := l.OpenParent(rel, false)
	st, exists, err := projectfs.StatAt(dir, err, name)
	return exists && err == nil && layers.KindAt(dir, name, &st) == layers.Whiteout
}

func isDirStat(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// at returns what path p is after checkpoint k (Base: in the base).
func (h *timeline) at(k int, p string) momentEntry {
layers:
	for j := k; j >= 0; j-- {
		l := h.layers[j]
		for i := strings.IndexByte(p, '/'); i > 0; {
			d := p[:i]
			st, ok := layerStat(l, d)
			if !ok {
				continue layers // the layer holds nothing at or below p
			}
			if !isDirStat(&st) {
				return momentEntry{} // a whiteout or a file above p: p is gone
			}
			if LayerOpaque(l, d) {
				return entryIn(l, p) // nothing below this layer shows there
			}
			next := strings.IndexByte(p[i+1:], '/')
			if next < 0 {
				break
			}
			i += 1 + next
		}
		st, ok := layerStat(l, p)
		if !ok {
			continue
		}
		if LayerWhiteout(l, p) {
			return momentEntry{}
		}
		return momentEntry{exists: true, dir: isDirStat(&st), layer: l}
	}
	e := h.b.Get(p)
	switch e.Kind {
	case changeset.BaseAbsent:
		// A directory of the project is not in the manifest's files: ask the host.
		if hs, err := h.host.Lstat(p); err == nil && hs.Exists && hs.Stat.Type == 'd' {
			return momentEntry{exists: true, dir: true, base: changeset.BaseEntry{Kind: changeset.BaseHost, Type: 'd'}}
		}
		return momentEntry{}
	case changeset.BaseUnknown:
		return momentEntry{exists: true, base: e}
	}
	return momentEntry{exists: true, dir: e.Type == 'd', base: e}
}

// entryIn is p in layer l alone.
func entryIn(l *projectfs.Root, p string) momentEntry {
	st, ok := layerStat(l, p)
	if !ok || LayerWhiteout(l, p) {
		return momentEntry{}
	}
	return momentEntry{exists: true, dir: isDirStat(&st), layer: l}
}

// touched lists the paths that the layers after moment from up to moment to may have changed:
// what they hold, and what was below a directory they delete or replace at moment from.
func (h *timeline) touched(from, to int) []string {
	set := map[string]bool{}
	for j := from + 1; j <= to; j++ {
		l := h.layers[j]
		if l == nil {
			continue
		}
		_ = projectfs.WalkAt(l.FD, "", func(rel string, dir int, name string, st *unix.Stat_t) error {
			replaced := !isDirStat(st) || opaqueAt(dir, name)
			if !isDirStat(st) {
				set[rel] = true
			}
			if replaced {
				for _, q := range h.below(from, rel) {
					set[q] = true
				}
			}
			return nil
		})
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// below lists the non-directory paths under directory dir at moment k.
func (h *timeline) below(k int, dir string) []string {
	if e := h.at(k, dir); !e.exists || !e.dir {
		return nil
	}
	cands := map[string]bool{}
	for j := 0; j <= k; j++ {
		l := h.layers[j]
		if l == nil {
			continue
		}
		fd, err := projectfs.Openat(l.FD, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if err != nil {
			continue
		}
		_ = projectfs.WalkAt(fd, dir, func(rel string, _ int, _ string, st *unix.Stat_t) error {
			if !isDirStat(st) {
				cands[rel] = true
			}
			return nil
		})
		unix.Close(fd)
	}
	for _, p := range h.b.Manifest.Paths {
		if strings.HasPrefix(p, dir+"/") {
			cands[p] = true
		}
	}
	var out []string
	for p := range cands {
		if e := h.at(k, p); e.exists && !e.dir {
			out = append(out, p)
		}
	}
	return out
}

// side reads what entry e is, as a patch side: git mode and content.
func (h *timeline) side(p string, e momentEntry) (mode uint32, data []byte, note string, size int64, err error) {
	if !e.exists || e.dir {
		return 0, nil, "", 0, nil
	}
	if e.layer != nil {
		dir, name, err := e.layer.OpenParent(p, false)
		if err != nil {
			return 0, nil, "", 0, err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return 0, nil, "", 0, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			t, err := projectfs.Readlinkat(dir, name)
			return diff.ModeSymlink, []byte(t), "", int64(len(t)), err
		case unix.S_IFREG:
		default:
			return 0, nil, "", 0, nil // special files have no git form
		}
		mode = diff.ModeFile
		if st.Mode&0o100 != 0 {
			mode = diff.ModeExecutable
		}
		if n := tooLargeToShow(st.Size, st.Blocks); n != "" {
			return mode, nil, n, st.Size, nil
		}
		fd, _, err := projectfs.OpenRegularAt(dir, name)
		if err != nil {
			return 0, nil, "", 0, err
		}
		defer unix.Close(fd)
		data, err = io.ReadAll(io.LimitReader(projectfs.FdIO(fd), changeset.MaxPatchBytes+1))
		return mode, data, "", st.Size, err
	}
	b := e.base
	switch b.Type {
	case 'l':
		t := b.Target
		if b.Kind == changeset.BaseHost {
			hs, err := h.host.Lstat(p)
			if err != nil {
				return 0, nil, "", 0, err
			}
			t = hs.Target
		}
		return diff.ModeSymlink, []byte(t), "", int64(len(t)), nil
	case 'f':
		mode = diff.ModeFile
		if b.Mode&0o100 != 0 {
			mode = diff.ModeExecutable
		}
		if b.Holes > 0 || b.Host.Size > changeset.MaxPatchBytes {
			return mode, nil, "not shown: too large or sparse", b.Host.Size, nil
		}
		var rc io.ReadCloser
		if b.Kind == changeset.BaseUnknown {
			rc, err = h.host.OpenRead(p)
		} else {
			rc, err = h.b.Open(h.host, p, b)
		}
		if err != nil {
			return 0, nil, "", 0, err
		}
		defer rc.Close()
		data, err = io.ReadAll(io.LimitReader(rc, changeset.MaxPatchBytes))
		return mode, data, "", int64(len(data)), err
	}
	return 0, nil, "", 0, nil
}

// tooLargeToShow says why a staged file is not read for a diff: larger than a patch holds, or
// sparse.
func tooLargeToShow(size, blocks int64) string {
	if size > changeset.MaxPatchBytes {
		return "not shown: too large"
	}
	if size-blocks*512 >= 1<<20 {
		return "not shown: sparse"
	}
	return ""
}

// HistoryPatches are the changes from moment from to moment to of the session's history (Base,
// or an index in cps, which is what Checkpoints returned), as git patches.
func (s *Layers) HistoryPatches(cps []Checkpoint, from, to int) ([]diff.FilePatch, error) {
	if from < Base || to >= len(cps) || from > to {
		return nil, fmt.Errorf("session %s: no such span of its history", s.ID)
	}
	h, err := s.openTimeline(cps)
	if err != nil {
		return nil, err
	}
	defer h.close()
	var out []diff.FilePatch
	for _, p := range h.touched(from, to) {
		oldMode, old, oldNote, oldSize, err := h.side(p, h.at(from, p))
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", quote.Path(p), err)
		}
		newMode, new, newNote, newSize, err := h.side(p, h.at(to, p))
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", quote.Path(p), err)
		}
		if oldMode == newMode && oldNote == "" && newNote == "" && bytes.Equal(old, new) {
			continue
		}
		fp := diff.FilePatch{OldPath: p, NewPath: p, OldMode: oldMode, NewMode: newMode, Old: old, New: new}
		if note := strings.TrimSpace(oldNote + " " + newNote); note != "" {
			fp.TooLarge, fp.Binary, fp.Old, fp.New, fp.OldSize, fp.NewSize, fp.Note = true, true, nil, nil, oldSize, newSize, note
		}
		out = append(out, fp)
	}
	return out, nil
}

// StepStat is what one checkpoint changed: files, and lines added and removed.
type StepStat struct {
	Checkpoint
	Files, Added, Removed int
}

// Log returns the session's checkpoints with what each step changed.
func (s *Layers) Log() ([]StepStat, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	out := make([]StepStat, 0, len(cps))
	for i, c := range cps {
		patches, err := s.HistoryPatches(cps, i-1, i)
		if err != nil {
			return nil, err
		}
		st := StepStat{Checkpoint: c}
		st.Files, st.Added, st.Removed = CountStep(patches)
		out = append(out, st)
	}
	return out, nil
}

// CountStep is what a step's patches (HistoryPatches of it) changed, as `shadow log` and the
// review's timeline say it: the files (a moved file once) and the lines added and removed.
func CountStep(patches []diff.FilePatch) (files, added, removed int) {
	patches = pairRenames(slices.Clone(patches))
	for _, p := range patches {
		e := diff.StatOf(p, diff.Options{})
		added += e.Added
		removed += e.Deleted
	}
	return len(patches), added, removed
}

// pairRenames makes a deleted and an added file of the same mode and content one rename, as the
// change set's rename detection does: a step that moved a file changed one file, no lines.
func pairRenames(patches []diff.FilePatch) []diff.FilePatch {
	added := map[string][]int{}
	for i, p := range patches {
		if p.OldMode == 0 && p.NewMode != 0 && len(p.New) > 0 && !p.TooLarge {
			k := string(p.New)
			added[k] = append(added[k], i)
		}
	}
	drop := map[int]bool{}
	for i, p := range patches {
		if p.NewMode != 0 || p.OldMode == 0 || len(p.Old) == 0 || p.TooLarge {
			continue
		}
		for k, j := range added[string(p.Old)] {
			if patches[j].NewMode != p.OldMode {
				continue
			}
			cands := added[string(p.Old)]
			added[string(p.Old)] = append(cands[:k:k], cands[k+1:]...)
			patches[j].OldPath, patches[j].OldMode, patches[j].Old = p.OldPath, p.OldMode, p.Old
			drop[i] = true
			break
		}
	}
	out := patches[:0]
	for i, p := range patches {
		if !drop[i] {
			out = append(out, p)
		}
	}
	return out
}

// FindCheckpoint returns the index of checkpoint id in cps: its id ("c3") or its number alone
// ("3"), as `shadow log` lists them.
func FindCheckpoint(cps []Checkpoint, id string) (int, error) {
	want := id
	if n, err := strconv.Atoi(id); err == nil && n > 0 {
		want = "c" + strconv.Itoa(n)
	}
	if i := slices.IndexFunc(cps, func(c Checkpoint) bool { return c.ID == want }); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("no checkpoint %q (`shadow log` lists them)", id)
}
