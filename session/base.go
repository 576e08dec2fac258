package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The base of a path is what the review diffs against and what partial applies start from: the
// project's content when the session started, then whatever an apply wrote. It is recorded lazily:
// the manifest holds only stats; when a run ends, the pre-image of each path it changed is copied
// into base/ (content-addressed objects) and listed in base/index.json.

type baseKind string

const (
	baseHost    baseKind = "host"    // content is the host file, as long as it still matches Host
	baseObject  baseKind = "object"  // content captured in base/<Hash> (or Target for a symlink)
	baseAbsent  baseKind = "absent"  // the path did not exist
	baseUnknown baseKind = "unknown" // the host changed before the pre-image could be taken
)

type baseEntry struct {
	Kind   baseKind `json:"k"`
	Type   byte     `json:"t,omitempty"` // 'f', 'l' or 'o'
	Mode   uint32   `json:"m,omitempty"`
	Hash   string   `json:"h,omitempty"` // sha256 of the content of a regular file
	Target string   `json:"l,omitempty"`
	// Host is the host file's stat when this base was recorded: a host file that still matches it
	// is unchanged.
	Host fileStat `json:"s"`
}

type baseIndex struct {
	Version int                  `json:"version"`
	Paths   map[string]baseEntry `json:"paths"`
}

// bases gives the base of any path: the index, then the manifest, else absent.
type bases struct {
	dir   string
	index baseIndex
	man   *manifest
}

func (s *Session) loadBases() (*bases, error) {
	b := &bases{dir: s.baseDir(), index: baseIndex{Version: 1, Paths: map[string]baseEntry{}}}
	data, err := os.ReadFile(filepath.Join(b.dir, "index.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("session %s: read base index: %w", s.Meta.ID, err)
	default:
		if err := json.Unmarshal(data, &b.index); err != nil || b.index.Paths == nil {
			return nil, fmt.Errorf("session %s: corrupt base/index.json", s.Meta.ID)
		}
	}
	m, err := readManifest(filepath.Join(s.dir, "manifest"))
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.Meta.ID, err)
	}
	b.man = m
	return b, nil
}

func (b *bases) get(path string) baseEntry {
	if e, ok := b.index.Paths[path]; ok {
		return e
	}
	if st, ok := b.man.lookup(path); ok {
		return baseEntry{Kind: baseHost, Type: st.Type, Mode: st.Mode, Host: st}
	}
	return baseEntry{Kind: baseAbsent}
}

func (b *bases) save() error {
	data, err := json.Marshal(b.index)
	if err != nil {
		return fmt.Errorf("encode base index: %w", err)
	}
	return writeFileAtomic(filepath.Join(b.dir, "index.json"), data, 0o600)
}

func (b *bases) objectPath(hash string) string { return filepath.Join(b.dir, hash) }

// putObject stores content from r as a base object and returns its hash. With sync unset the file
// is not fsynced: the caller batches that.
func (b *bases) putObject(r io.Reader, sync bool) (string, error) {
	f, err := os.CreateTemp(b.dir, ".obj*")
	if err != nil {
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if err == nil && sync {
		err = fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := os.Rename(f.Name(), b.objectPath(sum)); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	return sum, nil
}

// sameStat reports whether a host file still looks as it was recorded.
func sameStat(a, b fileStat) bool {
	return a.Type == b.Type && a.Mode == b.Mode && a.Size == b.Size && a.Mtime == b.Mtime && a.Ino == b.Ino
}

// capture turns a host-referenced base into a captured one (content copied into base/), or into
// "unknown" when the host no longer matches what was recorded. Other kinds are returned as they are.
func (b *bases) capture(root *projectRoot, path string) (baseEntry, bool, error) {
	e := b.get(path)
	if e.Kind != baseHost {
		return e, false, nil
	}
	h, err := root.lstat(path)
	if err != nil {
		return e, false, err
	}
	if !h.exists || !sameStat(h.stat, e.Host) {
		return baseEntry{Kind: baseUnknown, Host: h.stat}, true, nil
	}
	switch e.Type {
	case 'l':
		return baseEntry{Kind: baseObject, Type: 'l', Mode: e.Mode, Target: h.target, Host: h.stat}, true, nil
	case 'f':
		f, err := root.openRead(path)
		if err != nil {
			return e, false, err
		}
		defer f.Close()
		sum, err := b.putObject(f, false)
		if err != nil {
			return e, false, fmt.Errorf("%s: %w", visible(path), err)
		}
		// The file may have changed while it was copied: then the copy is not a trustworthy base.
		if after, err := root.lstat(path); err != nil || !sameStat(after.stat, e.Host) {
			return baseEntry{Kind: baseUnknown, Host: after.stat}, true, nil
		}
		return baseEntry{Kind: baseObject, Type: 'f', Mode: e.Mode, Hash: sum, Host: h.stat}, true, nil
	}
	return baseEntry{Kind: baseUnknown, Host: h.stat}, true, nil
}

// open returns the base content of a regular-file base for reading.
func (b *bases) open(root *projectRoot, path string, e baseEntry) (io.ReadCloser, error) {
	switch e.Kind {
	case baseObject:
		f, err := os.Open(b.objectPath(e.Hash))
		if err != nil {
			return nil, fmt.Errorf("read base of %s: %w", visible(path), err)
		}
		return f, nil
	case baseHost:
		h, err := root.lstat(path)
		if err != nil {
			return nil, err
		}
		if !h.exists || !sameStat(h.stat, e.Host) {
			return nil, fmt.Errorf("read base of %s: the host file changed and no pre-image was taken", visible(path))
		}
		return root.openRead(path)
	}
	return nil, fmt.Errorf("read base of %s: no content (%s)", visible(path), e.Kind)
}
