package session

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
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
	Hash   string   `json:"h,omitempty"` // projectfs.ContentSum of the content of a regular file
	Target string   `json:"l,omitempty"`
	// Pack, when set, names the pack file in base/ holding the content at Off, Len bytes long;
	// otherwise the content is the object base/<Hash>.
	Pack string `json:"p,omitempty"`
	Off  int64  `json:"o,omitempty"`
	Len  int64  `json:"n,omitempty"`
	// Bin records, for a packed pre-image, that its first 8000 bytes hold a NUL (the review's
	// binary test), so that a change set needs no read of the pack; Holes its bytes in holes
	// (Side.Holes), which the pack keeps as holes.
	Bin   bool  `json:"b,omitempty"`
	Holes int64 `json:"z,omitempty"`
	// Host is the host file's stat when this base was recorded: a host file that still matches it
	// is unchanged.
	Host projectfs.FileStat `json:"s"`
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
	// pack receives the pre-images of the capture in progress; nil until the first one. packMu
	// guards it: pre-images are taken on parallel workers.
	pack   *packWriter
	packMu sync.Mutex
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
func (s *Session) openView() (*projectfs.Root, *bases, error) {
	host, err := projectfs.OpenRoot(s.Meta.Project)
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

// loadBases loads the session's bases. The manifest the process recorded, when it made the
// session, serves the first load (the end of the session's first run) and is then dropped: any
// later load reads the manifest from disk, as another command does.
func (s *Session) loadBases() (*bases, error) {
	man := s.man
	s.man = nil
	return loadBases(s.dir, s.Meta.ID, man)
}

// loadBases loads the bases of the session whose directory is dir, over its manifest man when
// the process has it, else the one read from dir.
func loadBases(dir, id string, man *manifest) (*bases, error) {
	b, err := loadIndex(dir, id)
	if err != nil {
		return nil, err
	}
	if man == nil {
		if man, err = readManifest(filepath.Join(dir, "manifest")); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
	}
	b.man = man
	return b, nil
}

// loadIndex loads the base index of the session whose directory is dir: its bases without the
// manifest.
func loadIndex(dir, id string) (*bases, error) {
	b := &bases{dir: baseDirOf(dir), index: baseIndex{Version: 1, Paths: map[string]baseEntry{}}}
	data, err := os.ReadFile(filepath.Join(b.dir, "index.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("session %s: read base index: %w", id, err)
	default:
		if err := json.Unmarshal(data, &b.index); err != nil || b.index.Paths == nil {
			return nil, fmt.Errorf("session %s: corrupt base/index.json", id)
		}
	}
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
	data, err := b.index.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode base index: %w", err)
	}
	return statefile.WriteFileAtomic(filepath.Join(b.dir, "index.json"), data, 0o600)
}

func (b *bases) objectPath(hash string) string { return filepath.Join(b.dir, hash) }

// putObject stores content from r as a base object and returns its hash. With sync unset the file
// is not fsynced: the caller batches that.
func (b *bases) putObject(r io.Reader, sync bool) (string, error) {
	f, err := os.CreateTemp(b.dir, ".obj*")
	if err != nil {
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	h := projectfs.NewContentSum()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if err == nil && sync {
		err = statefile.Fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	sum := h.Sum()
	if err := os.Rename(f.Name(), b.objectPath(sum)); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	return sum, nil
}

// sameStat reports whether a host file still looks as it was recorded.
func sameStat(a, b projectfs.FileStat) bool {
	return a.Type == b.Type && a.Mode == b.Mode && a.Size == b.Size && a.Mtime == b.Mtime && a.Ino == b.Ino
}

// captureAll takes the pre-image of every path of paths whose base still refers to the host (see
// captureEntry) on up to projectfs.ApplyWorkers goroutines, a directory at a time, each directory opened once
// beneath the root. It returns the new entries by index of paths (Kind "" where nothing was to be
// taken), for the caller to record in the index.
func (b *bases) captureAll(root *projectfs.Root, paths []string) ([]baseEntry, error) {
	out := make([]baseEntry, len(paths))
	want := func(i int) bool { return b.get(paths[i]).Kind == baseHost }
	err := root.InDirs(projectfs.GroupByDir(paths, want), func(_, dir int, dirErr error, i int) error {
		name := paths[i][strings.LastIndexByte(paths[i], '/')+1:]
		e, err := b.captureAt(dir, dirErr, name, b.get(paths[i]))
		if err != nil {
			return fmt.Errorf("take pre-image of %s: %w", quote.Path(paths[i]), err)
		}
		out[i] = e
		return nil
	})
	return out, err
}

// captureAt is captureEntry for name in the project directory dir (or dirErr, why it could not be
// opened), looked up now.
func (b *bases) captureAt(dir int, dirErr error, name string, e baseEntry) (baseEntry, error) {
	st, exists, err := projectfs.StatAt(dir, dirErr, name)
	if err != nil {
		return e, err
	}
	if !exists {
		return baseEntry{Kind: baseUnknown}, nil // the path is gone
	}
	h := projectfs.HostEntry{Exists: true, Stat: projectfs.StatFromUnix(&st)}
	if h.Stat.Type == 'l' && sameStat(h.Stat, e.Host) {
		var err error
		if h.Target, err = projectfs.Readlinkat(dir, name); err != nil {
			return e, err
		}
	}
	return b.captureEntry(dir, name, h, e)
}

// captureSeen is captureEntry for path, whose host entry h was just looked up through root; Kind
// is "" when the base of path does not refer to the host.
func (b *bases) captureSeen(root *projectfs.Root, path string, h projectfs.HostEntry) (baseEntry, error) {
	e := b.get(path)
	if e.Kind != baseHost {
		return baseEntry{}, nil
	}
	dir, name := -1, ""
	if h.Exists && e.Type == 'f' && sameStat(h.Stat, e.Host) {
		var err error
		// The directory the lookup just went through, from root's cache.
		if dir, name, err = root.OpenParent(path, false); err != nil {
			return e, err
		}
	}
	return b.captureEntry(dir, name, h, e)
}

// captureEntry turns the host-referenced base e of the entry name of dir, which holds h (just
// looked up), into a captured base: a regular file's content appended to the run's pack, a
// symlink's target recorded. When the host no longer matches what e recorded, the base becomes
// "unknown". h is checked before anything is opened: a special file put in place of a regular one
// never is.
func (b *bases) captureEntry(dir int, name string, h projectfs.HostEntry, e baseEntry) (baseEntry, error) {
	if !h.Exists {
		return baseEntry{Kind: baseUnknown}, nil
	}
	if !sameStat(h.Stat, e.Host) {
		return baseEntry{Kind: baseUnknown, Host: h.Stat}, nil
	}
	switch e.Type {
	case 'l':
		return baseEntry{Kind: baseObject, Type: 'l', Mode: e.Mode, Target: h.Target, Host: h.Stat}, nil
	case 'f':
		return b.captureFile(dir, name, e)
	}
	return baseEntry{Kind: baseUnknown, Host: h.Stat}, nil
}

// captureFile copies the regular file name of dir, which a stat just found as e recorded it, into
// the run's pack. What was opened is checked against e before it is read (a symlink is never
// followed, a special file swapped in never read), and the path after the copy: a file replaced
// (another inode), or written while it was copied (its size or mtime moved), makes the base
// unknown, and the copy is never referred to.
func (b *bases) captureFile(dir int, name string, e baseEntry) (baseEntry, error) {
	fd, st, err := projectfs.OpenRegularAt(dir, name)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP):
		return baseEntry{Kind: baseUnknown}, nil // gone, or a symlink now, since the stat
	case errors.Is(err, projectfs.ErrNotRegular):
		return baseEntry{Kind: baseUnknown, Host: projectfs.StatFromUnix(&st)}, nil
	case err != nil:
		return e, err
	}
	defer unix.Close(fd)
	before := projectfs.StatFromUnix(&st)
	if !sameStat(before, e.Host) {
		return baseEntry{Kind: baseUnknown, Host: before}, nil
	}
	var p packed
	bp := projectfs.CopyBuffers.Get().(*[]byte)
	data, whole, err := projectfs.ReadSized(fd, before.Size, *bp)
	switch {
	case err != nil:
	case whole:
		p, err = b.packBytes(data)
	case len(data) > 0:
		// More than its size said: written since the stat.
		projectfs.CopyBuffers.Put(bp)
		return baseEntry{Kind: baseUnknown, Host: before}, nil
	default:
		// Too large for one buffer: streamed into the pack, its holes left holes.
		p, err = b.packFile(fd, before.Size)
	}
	projectfs.CopyBuffers.Put(bp)
	if err != nil {
		return e, err
	}
	if preimageCopied != nil {
		preimageCopied(dir, name)
	}
	// Looked up by name: the path must still name the file copied, unchanged (the descriptor
	// holds its inode, whose number no other file can take meanwhile).
	st, exists, err := projectfs.StatAt(dir, nil, name)
	if err != nil {
		return e, err
	}
	if !exists {
		return baseEntry{Kind: baseUnknown}, nil
	}
	if after := projectfs.StatFromUnix(&st); !sameStat(after, e.Host) {
		return baseEntry{Kind: baseUnknown, Host: after}, nil
	}
	return baseEntry{Kind: baseObject, Type: 'f', Mode: e.Mode, Hash: p.sum, Host: before,
		Pack: p.pack, Off: p.off, Len: p.n, Bin: p.bin, Holes: projectfs.SparseHoles(p.holes)}, nil
}

// preimageCopied, when set, is called when a pre-image has been copied, before the file is
// checked again (tests change the file there).
var preimageCopied func(dir int, name string)

// packed is where a pre-image went: its pack, offset and length, projectfs.ContentSum, whether its first
// 8000 bytes hold a NUL, and its bytes in holes.
type packed struct {
	pack   string
	off, n int64
	sum    string
	bin    bool
	holes  int64
}

// packBytes appends data to the run's pack (created on first use); parallel captures share it.
func (b *bases) packBytes(data []byte) (packed, error) {
	p := packed{n: int64(len(data)), sum: projectfs.Sha256Hex(data), bin: diff.IsBinary(data)}
	b.packMu.Lock()
	defer b.packMu.Unlock()
	w, err := b.packWriter()
	if err != nil {
		return packed{}, err
	}
	p.pack, p.off = w.name, w.off
	_, err = w.w.Write(data)
	w.off += int64(len(data)) // bytes written even on error: later entries start after them
	if err != nil {
		return packed{}, fmt.Errorf("store pre-image in %s: %w", w.name, err)
	}
	return p, nil
}

// packFile appends the regular file fd, size bytes long, to the run's pack, holding it for the
// whole copy.
func (b *bases) packFile(fd int, size int64) (packed, error) {
	b.packMu.Lock()
	defer b.packMu.Unlock()
	w, err := b.packWriter()
	if err != nil {
		return packed{}, err
	}
	s, off, err := w.addFile(fd, size)
	if err != nil {
		return packed{}, err
	}
	return packed{pack: w.name, off: off, n: s.Size, sum: s.Hash, bin: s.Binary, holes: s.Holes}, nil
}

// packWriter returns the run's pack, created on first use; packMu is held.
func (b *bases) packWriter() (*packWriter, error) {
	if b.pack == nil {
		w, err := newPackWriter(b.dir)
		if err != nil {
			return nil, err
		}
		b.pack = w
	}
	return b.pack, nil
}

// open returns the base content of a regular-file base for reading.
func (b *bases) open(root *projectfs.Root, path string, e baseEntry) (io.ReadCloser, error) {
	switch e.Kind {
	case baseObject:
		if e.Pack != "" {
			return b.openPacked(path, e)
		}
		f, err := os.Open(b.objectPath(e.Hash))
		if err != nil {
			return nil, fmt.Errorf("read base of %s: %w", quote.Path(path), err)
		}
		return f, nil
	case baseHost:
		h, err := root.Lstat(path)
		if err != nil {
			return nil, err
		}
		if !h.Exists || !sameStat(h.Stat, e.Host) {
			return nil, fmt.Errorf("read base of %s: the host file changed and no pre-image was taken", quote.Path(path))
		}
		return root.OpenRead(path)
	}
	return nil, fmt.Errorf("read base of %s: no content (%s)", quote.Path(path), e.Kind)
}

// errCorruptBase marks a pre-image that base/ should hold but does not: a base that is lost, not a
// host that moved on.
var errCorruptBase = errors.New("corrupt")

// packWriter appends the pre-images of one capture to one new pack file. A hole of a file it
// takes is left a hole of the pack: holes says that the pack may end before off, in one.
type packWriter struct {
	f     *os.File
	w     *bufio.Writer
	name  string
	off   int64
	holes bool
}

func newPackWriter(dir string) (*packWriter, error) {
	f, err := os.CreateTemp(dir, "pack-*")
	if err != nil {
		return nil, fmt.Errorf("store pre-images: %w", err)
	}
	return &packWriter{f: f, w: bufio.NewWriterSize(f, 1<<16), name: filepath.Base(f.Name())}, nil
}

// addFile appends the regular file fd, size bytes long by its stat, and returns what it holds
// (projectfs.FileSum) and where it starts. Only its data segments are written; its holes are skipped over,
// holes of the pack.
func (p *packWriter) addFile(fd int, size int64) (projectfs.FileSum, int64, error) {
	off := p.off
	bp := projectfs.CopyBuffers.Get().(*[]byte)
	defer projectfs.CopyBuffers.Put(bp)
	h := projectfs.NewContentSum()
	s := projectfs.FileSum{Size: size}
	err := projectfs.ReadSegments(fd, 0, size, *bp, func(at int64, b []byte) error {
		if at < diff.SniffLen && !s.Binary {
			s.Binary = diff.IsBinary(b[:min(int64(len(b)), diff.SniffLen-at)])
		}
		h.Write(b)
		n, err := p.w.Write(b)
		p.off += int64(n) // bytes written even on error: later entries start after them
		return err
	}, func(at, n int64) error {
		s.Binary = s.Binary || at < diff.SniffLen
		s.Holes += n
		h.Zeros(n)
		if err := p.w.Flush(); err != nil {
			return err
		}
		if _, err := p.f.Seek(n, io.SeekCurrent); err != nil {
			return err
		}
		p.off += n
		p.holes = true
		return nil
	})
	if err != nil {
		return projectfs.FileSum{}, 0, fmt.Errorf("store pre-image in %s: %w", p.name, err)
	}
	s.Hash = h.Sum()
	return s, off, nil
}

// extend makes the pack as long as what was added to it, when that ends in a hole.
func (p *packWriter) extend() error {
	if !p.holes {
		return nil
	}
	return p.f.Truncate(p.off)
}

// finish makes the pack durable (see seal); a pack that could not be made so is removed.
func (p *packWriter) finish() error {
	if err := p.seal(); err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("store pre-images in %s: %w", p.name, err)
	}
	return nil
}

// flush writes out what the pack buffers, so that its file can be read; it is not made durable.
func (p *packWriter) flush() error {
	err := p.w.Flush()
	if err == nil {
		err = p.extend()
	}
	if err != nil {
		return fmt.Errorf("store pre-images in %s: %w", p.name, err)
	}
	return nil
}

// seal flushes the pack, fsyncs it once and closes it.
func (p *packWriter) seal() error {
	err := p.w.Flush()
	if err == nil {
		err = p.extend()
	}
	if err == nil {
		err = statefile.Fsync(p.f)
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
		return nil, fmt.Errorf("read base of %s: base/index.json is %w (bad pack reference %q)", quote.Path(path), errCorruptBase, e.Pack)
	}
	f, size, err := b.openPack(e.Pack)
	if err != nil {
		return nil, fmt.Errorf("read base of %s: base/%s is %w: %w", quote.Path(path), e.Pack, errCorruptBase, err)
	}
	if size < e.Off+e.Len {
		return nil, fmt.Errorf("read base of %s: base/%s is %w (truncated: %d bytes, the pre-image ends at %d)",
			quote.Path(path), e.Pack, errCorruptBase, size, e.Off+e.Len)
	}
	return &packedReader{r: io.NewSectionReader(f, e.Off, e.Len), h: projectfs.NewContentSum(), want: e.Hash,
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
	h          *projectfs.ContentSum
	want       string
	path, pack string
}

func (p *packedReader) Read(buf []byte) (int, error) {
	n, err := p.r.Read(buf)
	p.h.Write(buf[:n])
	if err == io.EOF && p.want != "" && p.h.Sum() != p.want {
		return n, fmt.Errorf("base/%s is %w (the pre-image of %s does not match its hash)", p.pack, errCorruptBase, quote.Path(p.path))
	}
	return n, err
}

// Close does nothing: the pack file is shared, and closed with the bases.
func (p *packedReader) Close() error { return nil }
