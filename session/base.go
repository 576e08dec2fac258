package session

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The base of a path is what the review diffs against and what partial applies start from: the
// project's content when the session started, then whatever an apply wrote. It is recorded lazily:
// the manifest holds only stats; when a run ends, the pre-image of each path it changed is appended
// to one pack file of that run (base/pack-*, one file and one fsync per run, however many paths)
// and listed in base/index.json with its offset, length and hash. Applies store the content they
// write as content-addressed objects (base/<hash>).

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
	// Pack, when set, names the pack file in base/ holding the content at Off, Len bytes long;
	// otherwise the content is the object base/<Hash>.
	Pack string `json:"p,omitempty"`
	Off  int64  `json:"o,omitempty"`
	Len  int64  `json:"n,omitempty"`
	// Bin records, for a packed pre-image, that its first 8000 bytes hold a NUL (the review's
	// binary test), so that a change set needs no read of the pack.
	Bin bool `json:"b,omitempty"`
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
	// pack receives the pre-images of the capture in progress; nil until the first one.
	pack *packWriter
	// packs are the pack files opened for reading, by name, shared by their readers (packsMu
	// guards the map: a change set is computed on parallel workers).
	packs   map[string]packFile
	packsMu sync.Mutex
}

// packFile is a pack file opened for reading and its size (a finished pack never changes).
type packFile struct {
	f    *os.File
	size int64
}

// close closes the pack files opened for reading.
func (b *bases) close() {
	for _, p := range b.packs {
		p.f.Close()
	}
	b.packs = nil
}

// openView opens the project root and loads the session's bases: what planning, capturing and
// reading contents work against. The caller closes it.
func (s *Session) openView() (*projectRoot, *bases, error) {
	host, err := openRoot(s.Meta.Project)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.loadBases()
	if err != nil {
		host.Close()
		return nil, nil, err
	}
	return host, b, nil
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
		if b.pack == nil {
			if b.pack, err = newPackWriter(b.dir); err != nil {
				return e, false, err
			}
		}
		sum, off, n, bin, err := b.pack.add(f)
		if err != nil {
			return e, false, fmt.Errorf("%s: %w", visible(path), err)
		}
		// The file may have changed while it was copied: then the copy is not a trustworthy base.
		if after, err := root.lstat(path); err != nil || !sameStat(after.stat, e.Host) {
			return baseEntry{Kind: baseUnknown, Host: after.stat}, true, nil
		}
		return baseEntry{Kind: baseObject, Type: 'f', Mode: e.Mode, Hash: sum, Host: h.stat,
			Pack: b.pack.name, Off: off, Len: n, Bin: bin}, true, nil
	}
	return baseEntry{Kind: baseUnknown, Host: h.stat}, true, nil
}

// open returns the base content of a regular-file base for reading.
func (b *bases) open(root *projectRoot, path string, e baseEntry) (io.ReadCloser, error) {
	switch e.Kind {
	case baseObject:
		if e.Pack != "" {
			return b.openPacked(path, e)
		}
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

// errCorruptBase marks a pre-image that base/ should hold but does not: a base that is lost, not a
// host that moved on.
var errCorruptBase = errors.New("corrupt")

// packWriter appends the pre-images of one capture to one new pack file.
type packWriter struct {
	f    *os.File
	w    *bufio.Writer
	name string
	off  int64
}

func newPackWriter(dir string) (*packWriter, error) {
	f, err := os.CreateTemp(dir, "pack-*")
	if err != nil {
		return nil, fmt.Errorf("store pre-images: %w", err)
	}
	return &packWriter{f: f, w: bufio.NewWriterSize(f, 1<<16), name: filepath.Base(f.Name())}, nil
}

// add appends r's content and returns its sha256, offset, length and whether its first 8000 bytes
// hold a NUL.
func (p *packWriter) add(r io.Reader) (sum string, off, n int64, bin bool, err error) {
	h := sha256.New()
	sniff := &nulSniffer{left: 8000}
	bp := copyBuffers.Get().(*[]byte)
	n, err = copyPooled(io.MultiWriter(p.w, h, sniff), r, *bp)
	copyBuffers.Put(bp)
	off = p.off
	p.off += n // bytes written even on error: later entries start after them
	if err != nil {
		return "", 0, 0, false, fmt.Errorf("store pre-image in %s: %w", p.name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), off, n, sniff.found, nil
}

// nulSniffer looks for a NUL in the first left bytes written to it.
type nulSniffer struct {
	left  int
	found bool
}

func (s *nulSniffer) Write(b []byte) (int, error) {
	if s.left > 0 && !s.found {
		head := b[:min(len(b), s.left)]
		s.found = bytes.IndexByte(head, 0) >= 0
		s.left -= len(head)
	}
	return len(b), nil
}

// finish makes the pack durable (see seal); a pack that could not be made so is removed.
func (p *packWriter) finish() error {
	if err := p.seal(); err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("store pre-images in %s: %w", p.name, err)
	}
	return nil
}

// seal flushes the pack, fsyncs it once and closes it.
func (p *packWriter) seal() error {
	err := p.w.Flush()
	if err == nil {
		err = fsync(p.f)
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abandon drops a pack that no index entry will reference.
func (p *packWriter) abandon() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// checkPacked reports a packed pre-image that its pack cannot hold (a missing or truncated pack)
// without reading it.
func (b *bases) checkPacked(path string, e baseEntry) error {
	rc, err := b.openPacked(path, e)
	if err != nil {
		return err
	}
	return rc.Close()
}

// openPacked returns a reader of a packed pre-image that fails, at the end, when the content does
// not hash to what was captured: a damaged pack never passes for a base.
func (b *bases) openPacked(path string, e baseEntry) (io.ReadCloser, error) {
	if strings.ContainsAny(e.Pack, "/\\") || !strings.HasPrefix(e.Pack, "pack-") || e.Off < 0 || e.Len < 0 {
		return nil, fmt.Errorf("read base of %s: base/index.json is %w (bad pack reference %q)", visible(path), errCorruptBase, e.Pack)
	}
	f, size, err := b.openPack(e.Pack)
	if err != nil {
		return nil, fmt.Errorf("read base of %s: base/%s is %w: %w", visible(path), e.Pack, errCorruptBase, err)
	}
	if size < e.Off+e.Len {
		return nil, fmt.Errorf("read base of %s: base/%s is %w (truncated: %d bytes, the pre-image ends at %d)",
			visible(path), e.Pack, errCorruptBase, size, e.Off+e.Len)
	}
	return &packedReader{r: io.NewSectionReader(f, e.Off, e.Len), h: sha256.New(), want: e.Hash,
		path: path, pack: e.Pack}, nil
}

// openPack returns the named pack file, opened once for all the pre-images read from it, and its
// size.
func (b *bases) openPack(name string) (*os.File, int64, error) {
	b.packsMu.Lock()
	defer b.packsMu.Unlock()
	if p, ok := b.packs[name]; ok {
		return p.f, p.size, nil
	}
	f, err := os.Open(filepath.Join(b.dir, name))
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if b.packs == nil {
		b.packs = map[string]packFile{}
	}
	b.packs[name] = packFile{f: f, size: fi.Size()}
	return f, fi.Size(), nil
}

// packedReader reads one pre-image from a pack and checks its hash at the end.
type packedReader struct {
	r          *io.SectionReader
	h          hash.Hash
	want       string
	path, pack string
}

func (p *packedReader) Read(buf []byte) (int, error) {
	n, err := p.r.Read(buf)
	p.h.Write(buf[:n])
	if err == io.EOF && p.want != "" && hex.EncodeToString(p.h.Sum(nil)) != p.want {
		return n, fmt.Errorf("base/%s is %w (the pre-image of %s does not match its hash)", p.pack, errCorruptBase, visible(p.path))
	}
	return n, err
}

// Close does nothing: the pack file is shared, and closed with the bases.
func (p *packedReader) Close() error { return nil }
