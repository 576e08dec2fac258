package changeset

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
	BaseHost    baseKind = "host"    // content is the host file, as long as it still matches Host
	BaseObject  baseKind = "object"  // content captured in base/<Hash> (or Target for a symlink)
	BaseAbsent  baseKind = "absent"  // the path did not exist
	BaseUnknown baseKind = "unknown" // the host changed before the pre-image could be taken
)

type BaseEntry struct {
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

type BaseIndex struct {
	Version int                  `json:"version"`
	Paths   map[string]BaseEntry `json:"paths"`
}

// Bases gives the base of any path: the index, then the manifest, else absent.
type Bases struct {
	Dir      string
	Index    BaseIndex
	Manifest *Manifest
	// Pack receives the pre-images of the capture in progress; nil until the first one. packMu
	// guards it: pre-images are taken on parallel workers.
	Pack   *PackWriter
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

// Close closes the pack files opened for reading.
func (b *Bases) Close() {
	for _, p := range b.packs {
		p.f.Close()
	}
	b.packs = nil
}

// OpenView opens the project root and loads the session's bases: what planning, capturing and
// reading contents work against. The caller closes it.
func (s *Source) OpenView() (*projectfs.Root, *Bases, error) {
	host, err := projectfs.OpenRoot(s.Project)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.LoadBases()
	if err != nil {
		host.Close()
		return nil, nil, err
	}
	return host, b, nil
}

// LoadBases loads the session's bases. The manifest the process recorded, when it made the
// session, serves the first load (the end of the session's first run) and is then dropped: any
// later load reads the manifest from disk, as another command does.
func (s *Source) LoadBases() (*Bases, error) {
	man := s.Manifest
	s.Manifest = nil
	return LoadBases(s.Dir, s.ID, man)
}

// LoadBases loads the bases of the session whose directory is dir, over its manifest man when
// the process has it, else the one read from dir.
func LoadBases(dir, id string, man *Manifest) (*Bases, error) {
	b, err := LoadIndex(dir, id)
	if err != nil {
		return nil, err
	}
	if man == nil {
		if man, err = ReadManifest(filepath.Join(dir, "manifest")); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
	}
	b.Manifest = man
	return b, nil
}

// LoadIndex loads the base index of the session whose directory is dir: its bases without the
// manifest.
func LoadIndex(dir, id string) (*Bases, error) {
	b := &Bases{Dir: BaseDirOf(dir), Index: BaseIndex{Version: 1, Paths: map[string]BaseEntry{}}}
	data, err := os.ReadFile(filepath.Join(b.Dir, "index.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("session %s: read base index: %w", id, err)
	default:
		if err := json.Unmarshal(data, &b.Index); err != nil || b.Index.Paths == nil {
			return nil, fmt.Errorf("session %s: corrupt base/index.json", id)
		}
	}
	return b, nil
}

func (b *Bases) Get(path string) BaseEntry {
	if e, ok := b.Index.Paths[path]; ok {
		return e
	}
	if st, ok := b.Manifest.Lookup(path); ok {
		return BaseEntry{Kind: BaseHost, Type: st.Type, Mode: st.Mode, Host: st}
	}
	return BaseEntry{Kind: BaseAbsent}
}

func (b *Bases) Save() error {
	data, err := b.Index.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode base index: %w", err)
	}
	return statefile.WriteFileAtomic(filepath.Join(b.Dir, "index.json"), data, 0o600)
}

func (b *Bases) ObjectPath(hash string) string { return filepath.Join(b.Dir, hash) }

// PutObject stores content from r as a base object and returns its hash. With sync unset the file
// is not fsynced: the caller batches that.
func (b *Bases) PutObject(r io.Reader, sync bool) (string, error) {
	f, err := os.CreateTemp(b.Dir, ".obj*")
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
	if err := os.Rename(f.Name(), b.ObjectPath(sum)); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("store pre-image: %w", err)
	}
	return sum, nil
}

// SameStat reports whether a host file still looks as it was recorded.
func SameStat(a, b projectfs.FileStat) bool {
	return a.Type == b.Type && a.Mode == b.Mode && a.Size == b.Size && a.Mtime == b.Mtime && a.Ino == b.Ino
}

// CaptureAll takes the pre-image of every path of paths whose base still refers to the host (see
// captureEntry) on up to projectfs.ApplyWorkers goroutines, a directory at a time, each directory opened once
// beneath the root. It returns the new entries by index of paths (Kind "" where nothing was to be
// taken), for the caller to record in the index.
func (b *Bases) CaptureAll(root *projectfs.Root, paths []string) ([]BaseEntry, error) {
	out := make([]BaseEntry, len(paths))
	want := func(i int) bool { return b.Get(paths[i]).Kind == BaseHost }
	err := root.InDirs(projectfs.GroupByDir(paths, want), func(_, dir int, dirErr error, i int) error {
		name := paths[i][strings.LastIndexByte(paths[i], '/')+1:]
		e, err := b.captureAt(dir, dirErr, name, b.Get(paths[i]))
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
func (b *Bases) captureAt(dir int, dirErr error, name string, e BaseEntry) (BaseEntry, error) {
	st, exists, err := projectfs.StatAt(dir, dirErr, name)
	if err != nil {
		return e, err
	}
	if !exists {
		return BaseEntry{Kind: BaseUnknown}, nil // the path is gone
	}
	h := projectfs.HostEntry{Exists: true, Stat: projectfs.StatFromUnix(&st)}
	if h.Stat.Type == 'l' && SameStat(h.Stat, e.Host) {
		var err error
		if h.Target, err = projectfs.Readlinkat(dir, name); err != nil {
			return e, err
		}
	}
	return b.captureEntry(dir, name, h, e)
}

// CaptureSeen is captureEntry for path, whose host entry h was just looked up through root; Kind
// is "" when the base of path does not refer to the host.
func (b *Bases) CaptureSeen(root *projectfs.Root, path string, h projectfs.HostEntry) (BaseEntry, error) {
	e := b.Get(path)
	if e.Kind != BaseHost {
		return BaseEntry{}, nil
	}
	dir, name := -1, ""
	if h.Exists && e.Type == 'f' && SameStat(h.Stat, e.Host) {
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
func (b *Bases) captureEntry(dir int, name string, h projectfs.HostEntry, e BaseEntry) (BaseEntry, error) {
	if !h.Exists {
		return BaseEntry{Kind: BaseUnknown}, nil
	}
	if !SameStat(h.Stat, e.Host) {
		return BaseEntry{Kind: BaseUnknown, Host: h.Stat}, nil
	}
	switch e.Type {
	case 'l':
		return BaseEntry{Kind: BaseObject, Type: 'l', Mode: e.Mode, Target: h.Target, Host: h.Stat}, nil
	case 'f':
		return b.CaptureFile(dir, name, e)
	}
	return BaseEntry{Kind: BaseUnknown, Host: h.Stat}, nil
}

// CaptureFile copies the regular file name of dir, which a stat just found as e recorded it, into
// the run's pack. What was opened is checked against e before it is read (a symlink is never
// followed, a special file swapped in never read), and the path after the copy: a file replaced
// (another inode), or written while it was copied (its size or mtime moved), makes the base
// unknown, and the copy is never referred to.
func (b *Bases) CaptureFile(dir int, name string, e BaseEntry) (BaseEntry, error) {
	fd, st, err := projectfs.OpenRegularAt(dir, name)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP):
		return BaseEntry{Kind: BaseUnknown}, nil // gone, or a symlink now, since the stat
	case errors.Is(err, projectfs.ErrNotRegular):
		return BaseEntry{Kind: BaseUnknown, Host: projectfs.StatFromUnix(&st)}, nil
	case err != nil:
		return e, err
	}
	defer unix.Close(fd)
	before := projectfs.StatFromUnix(&st)
	if !SameStat(before, e.Host) {
		return BaseEntry{Kind: BaseUnknown, Host: before}, nil
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
		return BaseEntry{Kind: BaseUnknown, Host: before}, nil
	default:
		// Too large for one buffer: streamed into the pack, its holes left holes.
		p, err = b.packFile(fd, before.Size)
	}
	projectfs.CopyBuffers.Put(bp)
	if err != nil {
		return e, err
	}
	if PreimageCopied != nil {
		PreimageCopied(dir, name)
	}
	// Looked up by name: the path must still name the file copied, unchanged (the descriptor
	// holds its inode, whose number no other file can take meanwhile).
	st, exists, err := projectfs.StatAt(dir, nil, name)
	if err != nil {
		return e, err
	}
	if !exists {
		return BaseEntry{Kind: BaseUnknown}, nil
	}
	if after := projectfs.StatFromUnix(&st); !SameStat(after, e.Host) {
		return BaseEntry{Kind: BaseUnknown, Host: after}, nil
	}
	return BaseEntry{Kind: BaseObject, Type: 'f', Mode: e.Mode, Hash: p.sum, Host: before,
		Pack: p.pack, Off: p.off, Len: p.n, Bin: p.bin, Holes: projectfs.SparseHoles(p.holes)}, nil
}

// PreimageCopied, when set, is called when a pre-image has been copied, before the file is
// checked again (tests change the file there).
var PreimageCopied func(dir int, name string)

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
func (b *Bases) packBytes(data []byte) (packed, error) {
	p := packed{n: int64(len(data)), sum: projectfs.Sha256Hex(data), bin: diff.IsBinary(data)}
	b.packMu.Lock()
	defer b.packMu.Unlock()
	w, err := b.packWriter()
	if err != nil {
		return packed{}, err
	}
	p.pack, p.off = w.Name, w.off
	_, err = w.Buf.Write(data)
	w.off += int64(len(data)) // bytes written even on error: later entries start after them
	if err != nil {
		return packed{}, fmt.Errorf("store pre-image in %s: %w", w.Name, err)
	}
	return p, nil
}

// packFile appends the regular file fd, size bytes long, to the run's pack, holding it for the
// whole copy.
func (b *Bases) packFile(fd int, size int64) (packed, error) {
	b.packMu.Lock()
	defer b.packMu.Unlock()
	w, err := b.packWriter()
	if err != nil {
		return packed{}, err
	}
	s, off, err := w.AddFile(fd, size)
	if err != nil {
		return packed{}, err
	}
	return packed{pack: w.Name, off: off, n: s.Size, sum: s.Hash, bin: s.Binary, holes: s.Holes}, nil
}

// PackWriter returns the run's pack, created on first use; packMu is held.
func (b *Bases) packWriter() (*PackWriter, error) {
	if b.Pack == nil {
		w, err := newPackWriter(b.Dir)
		if err != nil {
			return nil, err
		}
		b.Pack = w
	}
	return b.Pack, nil
}

// Open returns the base content of a regular-file base for reading.
func (b *Bases) Open(root *projectfs.Root, path string, e BaseEntry) (io.ReadCloser, error) {
	switch e.Kind {
	case BaseObject:
		if e.Pack != "" {
			return b.openPacked(path, e)
		}
		f, err := os.Open(b.ObjectPath(e.Hash))
		if err != nil {
			return nil, fmt.Errorf("read base of %s: %w", quote.Path(path), err)
		}
		return f, nil
	case BaseHost:
		h, err := root.Lstat(path)
		if err != nil {
			return nil, err
		}
		if !h.Exists || !SameStat(h.Stat, e.Host) {
			return nil, fmt.Errorf("read base of %s: the host file changed and no pre-image was taken", quote.Path(path))
		}
		return root.OpenRead(path)
	}
	return nil, fmt.Errorf("read base of %s: no content (%s)", quote.Path(path), e.Kind)
}

// errCorruptBase marks a pre-image that base/ should hold but does not: a base that is lost, not a
// host that moved on.
var errCorruptBase = errors.New("corrupt")

// PackWriter appends the pre-images of one capture to one new pack file. A hole of a file it
// takes is left a hole of the pack: holes says that the pack may end before off, in one.
type PackWriter struct {
	File  *os.File
	Buf   *bufio.Writer
	Name  string
	off   int64
	holes bool
}

func newPackWriter(dir string) (*PackWriter, error) {
	f, err := os.CreateTemp(dir, "pack-*")
	if err != nil {
		return nil, fmt.Errorf("store pre-images: %w", err)
	}
	return &PackWriter{File: f, Buf: bufio.NewWriterSize(f, 1<<16), Name: filepath.Base(f.Name())}, nil
}

// AddFile appends the regular file fd, size bytes long by its stat, and returns what it holds
// (projectfs.FileSum) and where it starts. Only its data segments are written; its holes are skipped over,
// holes of the pack.
func (p *PackWriter) AddFile(fd int, size int64) (projectfs.FileSum, int64, error) {
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
		n, err := p.Buf.Write(b)
		p.off += int64(n) // bytes written even on error: later entries start after them
		return err
	}, func(at, n int64) error {
		s.Binary = s.Binary || at < diff.SniffLen
		s.Holes += n
		h.Zeros(n)
		if err := p.Buf.Flush(); err != nil {
			return err
		}
		if _, err := p.File.Seek(n, io.SeekCurrent); err != nil {
			return err
		}
		p.off += n
		p.holes = true
		return nil
	})
	if err != nil {
		return projectfs.FileSum{}, 0, fmt.Errorf("store pre-image in %s: %w", p.Name, err)
	}
	s.Hash = h.Sum()
	return s, off, nil
}

// extend makes the pack as long as what was added to it, when that ends in a hole.
func (p *PackWriter) extend() error {
	if !p.holes {
		return nil
	}
	return p.File.Truncate(p.off)
}

// Finish makes the pack durable (see seal); a pack that could not be made so is removed.
func (p *PackWriter) Finish() error {
	if err := p.Seal(); err != nil {
		os.Remove(p.File.Name())
		return fmt.Errorf("store pre-images in %s: %w", p.Name, err)
	}
	return nil
}

// Flush writes out what the pack buffers, so that its file can be read; it is not made durable.
func (p *PackWriter) Flush() error {
	err := p.Buf.Flush()
	if err == nil {
		err = p.extend()
	}
	if err != nil {
		return fmt.Errorf("store pre-images in %s: %w", p.Name, err)
	}
	return nil
}

// Seal flushes the pack, fsyncs it once and closes it.
func (p *PackWriter) Seal() error {
	err := p.Buf.Flush()
	if err == nil {
		err = p.extend()
	}
	if err == nil {
		err = statefile.Fsync(p.File)
	}
	if cerr := p.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abandon drops a pack that no index entry will reference.
func (p *PackWriter) Abandon() {
	p.File.Close()
	os.Remove(p.File.Name())
}

// checkPacked reports a packed pre-image that its pack cannot hold (a missing or truncated pack)
// without reading it.
func (b *Bases) checkPacked(path string, e BaseEntry) error {
	rc, err := b.openPacked(path, e)
	if err != nil {
		return err
	}
	return rc.Close()
}

// openPacked returns a reader of a packed pre-image that fails, at the end, when the content does
// not hash to what was captured: a damaged pack never passes for a base.
func (b *Bases) openPacked(path string, e BaseEntry) (io.ReadCloser, error) {
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
func (b *Bases) openPack(name string) (*os.File, int64, error) {
	b.packsMu.Lock()
	defer b.packsMu.Unlock()
	if p, ok := b.packs[name]; ok {
		return p.f, p.size, nil
	}
	f, err := os.Open(filepath.Join(b.Dir, name))
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

// BaseDirOf and apply.JournalDirOf are the base/ and journal/ of the session directory dir.
func BaseDirOf(dir string) string { return filepath.Join(dir, "base") }
