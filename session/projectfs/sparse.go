package projectfs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// A file's apparent size can be far larger than what it stores: `truncate -s 1T` makes a terabyte
// that takes no block. Whatever shadow does with a large file (hash it, take its pre-image, copy
// it into the project, keep it for a rollback) goes by its data segments (SEEK_DATA, SEEK_HOLE)
// and steps over its holes, so that the cost is bounded by the bytes stored, and what is written
// keeps the holes.

const (
	// ZeroBlock is the unit in which a content's zeros are counted: aligned blocks of this size
	// that hold only zeros, stored or not (a hole is a whole number of them on any filesystem
	// with blocks of 4 KiB or more).
	ZeroBlock = 4 << 10
	// SparseMin is how many bytes of zero blocks make a content named by its zero-run form (see
	// ContentSum), and how many bytes of holes make a side of a change sparse for review.
	SparseMin = 1 << 20
	// ZeroRunPrefix starts the name of a content in its zero-run form: it never equals a sha256.
	ZeroRunPrefix = "zeros-"
)

// zeroPage is zeros to hash and compare with.
var zeroPage [64 << 10]byte

// ContentSum names a content, as the session records it (Side.Hash, the bases, decisions and
// journal). It is the sha256 of the bytes, except for a content holding at least SparseMin bytes
// in all-zero ZeroBlock blocks: that one is named ZeroRunPrefix and the sha256 of its bytes
// without those blocks, followed by where they were. The rule depends on the content only, not on
// how a file stores it: a sparse file and a dense copy of it get one name. The zero blocks of a
// hole are counted without being hashed (Zeros), so naming a terabyte of holes costs nothing;
// the sha256 of every byte is kept up only while the content may still be below SparseMin, so at
// most that many unstored zeros are hashed.
type ContentSum struct {
	// lit hashes the bytes outside zero blocks: all of them until the first zero block, so that
	// it is also the sha256 of the bytes until then.
	lit hash.Hash
	// plain, from the first zero block on, hashes every byte, until zeros reaches SparseMin.
	plain  hash.Hash
	forked bool
	// runs hashes each run of zero blocks as its first block and its length (in blocks).
	runs             hash.Hash
	nruns            uint64
	runStart, runLen int64
	zeros            int64  // bytes in zero blocks so far
	n                int64  // bytes so far
	done             int64  // bytes classified (n less the partial block)
	part             []byte // the bytes of a block not complete yet
}

func NewContentSum() *ContentSum { return &ContentSum{lit: sha256.New()} }

// Write adds stored bytes.
func (h *ContentSum) Write(p []byte) (int, error) {
	n := len(p)
	h.n += int64(n)
	if len(h.part) > 0 {
		k := min(len(p), ZeroBlock-len(h.part))
		h.part = append(h.part, p[:k]...)
		p = p[k:]
		if len(h.part) < ZeroBlock {
			return n, nil
		}
		h.blocks(h.part)
		h.part = h.part[:0]
	}
	full := len(p) &^ (ZeroBlock - 1)
	h.blocks(p[:full])
	h.part = append(h.part, p[full:]...)
	return n, nil
}

// Zeros adds n zero bytes that are not stored (a hole): whole zero blocks are only counted.
func (h *ContentSum) Zeros(n int64) {
	if len(h.part) > 0 {
		k := min(n, int64(ZeroBlock-len(h.part)))
		h.Write(zeroPage[:k])
		n -= k
	}
	if full := n &^ (ZeroBlock - 1); full > 0 {
		h.n += full
		h.zeroRun(full, nil)
		n -= full
	}
	h.Write(zeroPage[:n])
}

// blocks classifies p, whole blocks.
func (h *ContentSum) blocks(p []byte) {
	start := 0
	for i := 0; i < len(p); i += ZeroBlock {
		if !IsZero(p[i : i+ZeroBlock]) {
			continue
		}
		h.data(p[start:i])
		j := i + ZeroBlock
		for j < len(p) && IsZero(p[j:j+ZeroBlock]) {
			j += ZeroBlock
		}
		h.zeroRun(int64(j-i), p[i:j])
		start, i = j, j-ZeroBlock
	}
	h.data(p[start:])
}

func IsZero(b []byte) bool { return string(b) == string(zeroPage[:len(b)]) }

// data adds bytes that are not a zero block.
func (h *ContentSum) data(p []byte) {
	if len(p) == 0 {
		return
	}
	h.endRun()
	h.lit.Write(p)
	if h.plain != nil {
		h.plain.Write(p)
	}
	h.done += int64(len(p))
}

// zeroRun adds n bytes of zero blocks: stored (held in stored), or a hole (stored nil).
func (h *ContentSum) zeroRun(n int64, stored []byte) {
	if !h.forked {
		c, err := h.lit.(hash.Cloner).Clone()
		if err != nil {
			panic(err) // crypto/sha256 clones
		}
		h.plain, h.runs, h.forked = c, sha256.New(), true
	}
	if h.runLen == 0 {
		h.runStart = h.done / ZeroBlock
	}
	h.runLen += n / ZeroBlock
	h.done += n
	if h.plain != nil {
		feed := min(n, SparseMin-h.zeros)
		for fed := int64(0); fed < feed; {
			k := min(feed-fed, int64(len(zeroPage)))
			h.plain.Write(zeroPage[:k])
			fed += k
		}
	}
	h.zeros += n
	if h.zeros >= SparseMin {
		h.plain = nil
	}
}

func (h *ContentSum) endRun() {
	if h.runLen == 0 {
		return
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(h.runStart))
	binary.BigEndian.PutUint64(b[8:], uint64(h.runLen))
	h.runs.Write(b[:])
	h.nruns++
	h.runLen = 0
}

// Sum is the content's name; the hash takes nothing more afterwards.
func (h *ContentSum) Sum() string {
	h.data(h.part) // a last, partial block is never a zero block
	h.part = nil
	h.endRun()
	switch {
	case !h.forked:
		return hex.EncodeToString(h.lit.Sum(nil))
	case h.plain != nil:
		return hex.EncodeToString(h.plain.Sum(nil))
	}
	var t [48]byte
	copy(t[:32], h.runs.Sum(nil))
	binary.BigEndian.PutUint64(t[32:40], uint64(h.n))
	binary.BigEndian.PutUint64(t[40:], h.nruns)
	h.lit.Write(t[:])
	return ZeroRunPrefix + hex.EncodeToString(h.lit.Sum(nil))
}

// ContentName is the ContentSum of b.
func ContentName(b []byte) string {
	if len(b) < SparseMin {
		return Sha256Hex(b)
	}
	h := NewContentSum()
	h.Write(b)
	return h.Sum()
}

// FileSum is what reading a regular file tells: its ContentSum, its length, whether it looks
// binary (diff.IsBinary) and how many of its bytes are holes.
type FileSum struct {
	Hash   string
	Size   int64
	Binary bool
	Holes  int64
}

// SparseHoles is what a side of a change records of holes: those of a file with at least
// SparseMin bytes of them, which review does not read; 0 otherwise.
func SparseHoles(holes int64) int64 {
	if holes < SparseMin {
		return 0
	}
	return holes
}

// ErrShrank is the error of a file that ends before its stat said, read while it was cut.
var ErrShrank = errors.New("the file shrank while it was read")

// segments calls fn with each data segment [off, end) of the file fd within [from, to), in order;
// what lies between them is a hole. Where the filesystem cannot tell (no SEEK_DATA), the whole
// range is one segment.
func segments(fd int, from, to int64, fn func(off, end int64) error) error {
	for from < to {
		d, err := unix.Seek(fd, from, unix.SEEK_DATA)
		if err == unix.ENXIO {
			return nil // holes to the end of the file
		}
		if err != nil {
			return fn(from, to)
		}
		if d >= to {
			return nil
		}
		e, err := unix.Seek(fd, d, unix.SEEK_HOLE)
		if err != nil || e > to {
			e = to
		}
		if err := fn(d, e); err != nil {
			return err
		}
		from = e
	}
	return nil
}

// ReadSegments calls data with the stored bytes of the file fd within [from, to), in order and in
// pieces of buf, and hole with the length of each hole between them (and up to to). Offsets are
// relative to from.
func ReadSegments(fd int, from, to int64, buf []byte, data func(off int64, p []byte) error, hole func(off, n int64) error) error {
	pos := from
	err := segments(fd, from, to, func(off, end int64) error {
		if off > pos {
			if err := hole(pos-from, off-pos); err != nil {
				return err
			}
		}
		for off < end {
			n, err := Pread(fd, buf[:min(int64(len(buf)), end-off)], off)
			if err != nil {
				return err
			}
			if n == 0 {
				return ErrShrank
			}
			if err := data(off-from, buf[:n]); err != nil {
				return err
			}
			off += int64(n)
		}
		pos = end
		return nil
	})
	if err == nil && pos < to {
		err = hole(pos-from, to-pos)
	}
	return err
}

func Pread(fd int, p []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, p, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// sumFD reads the regular file fd, size bytes long by its stat, by its data segments: its holes
// are counted, not read.
func sumFD(fd int, size int64) (FileSum, error) {
	bp := CopyBuffers.Get().(*[]byte)
	defer CopyBuffers.Put(bp)
	h := NewContentSum()
	s := FileSum{Size: size}
	err := ReadSegments(fd, 0, size, *bp, func(off int64, p []byte) error {
		if off < diff.SniffLen && !s.Binary {
			s.Binary = diff.IsBinary(p[:min(int64(len(p)), diff.SniffLen-off)])
		}
		h.Write(p)
		return nil
	}, func(off, n int64) error {
		s.Binary = s.Binary || off < diff.SniffLen
		s.Holes += n
		h.Zeros(n)
		return nil
	})
	if err != nil {
		return FileSum{}, err
	}
	s.Hash = h.Sum()
	return s, nil
}

// SumReader is HeadHash with the holes: a regular file that r reads from its start (an *os.File
// or FdIO) of at least SparseMin bytes is read by its data segments; anything else is read whole.
func SumReader(r io.Reader) (FileSum, error) {
	fd := -1
	switch f := r.(type) {
	case *os.File:
		fd = int(f.Fd())
	case FdIO:
		fd = int(f)
	}
	var st unix.Stat_t
	if fd >= 0 && unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size >= SparseMin {
		return sumFD(fd, st.Size)
	}
	h := NewContentSum()
	bp := CopyBuffers.Get().(*[]byte)
	defer CopyBuffers.Put(bp)
	buf := *bp
	head := buf[:diff.SniffLen]
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return FileSum{}, err
	}
	h.Write(head[:n])
	s := FileSum{Size: int64(n), Binary: diff.IsBinary(head[:n])}
	if err == nil {
		rest, err := copyPooled(h, r, buf)
		if err != nil {
			return FileSum{}, err
		}
		s.Size += rest
	}
	s.Hash = h.Sum()
	return s, nil
}

// CopySparse copies [off, off+n) of the file src into the new, empty file dst, holes left holes:
// dst is made n bytes long and only the data segments are written. It returns what it copied
// (sum, with the holes).
func CopySparse(dst, src int, off, n int64) (FileSum, error) {
	if err := unix.Ftruncate(dst, n); err != nil {
		return FileSum{}, err
	}
	bp := CopyBuffers.Get().(*[]byte)
	defer CopyBuffers.Put(bp)
	h := NewContentSum()
	s := FileSum{Size: n}
	err := ReadSegments(src, off, off+n, *bp, func(at int64, p []byte) error {
		h.Write(p)
		for len(p) > 0 {
			w, err := unix.Pwrite(dst, p, at)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			p, at = p[w:], at+int64(w)
		}
		return nil
	}, func(_, n int64) error {
		s.Holes += n
		h.Zeros(n)
		return nil
	})
	if err != nil {
		return FileSum{}, err
	}
	s.Hash = h.Sum()
	return s, nil
}

// HumanSize is n bytes in binary units, for a note ("1.0 TiB", "12 KiB", "512 B").
func HumanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v >= 10 {
		return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}

// Sha256Hex is the sha256 of b in hex: how the session names a content smaller than SparseMin
// (ContentSum).
func Sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// HeadHash reads r fully, returning its ContentSum, its size and whether it looks binary
// (diff.IsBinary); a large regular file is read by its data segments (SumReader).
func HeadHash(r io.Reader) (string, int64, bool, error) {
	s, err := SumReader(r)
	return s.Hash, s.Size, s.Binary, err
}

// ReadSized reads the regular file open as fd, which its stat says is size bytes long, into buf
// when it fits, in one read where the file is as said: a read short of what was asked is, for a
// regular file, its end. whole reports that data is the whole file; otherwise data is empty when
// the file does not fit (nothing was read), or holds size+1 bytes when it grew since the stat.
func ReadSized(fd int, size int64, buf []byte) (data []byte, whole bool, err error) {
	if size >= int64(len(buf)) {
		return nil, false, nil
	}
	want, n := int(size)+1, 0
	for n < want {
		m, err := unix.Read(fd, buf[n:want])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if m == 0 {
			return buf[:n], true, nil
		}
		n += m
		if n == int(size) {
			return buf[:n], true, nil
		}
	}
	return buf[:n], false, nil
}

// SumRegular is SumReader of the regular file open as fd, which its stat says is size bytes long.
// A file smaller than SparseMin is read whole, in one read when it fits a buffer; a larger one by
// its data segments (sumFD).
func SumRegular(fd int, size int64) (FileSum, error) {
	if size >= SparseMin {
		return sumFD(fd, size)
	}
	bp := CopyBuffers.Get().(*[]byte)
	defer CopyBuffers.Put(bp)
	data, whole, err := ReadSized(fd, size, *bp)
	if err != nil {
		return FileSum{}, err
	}
	if whole {
		return FileSum{Hash: Sha256Hex(data), Size: int64(len(data)), Binary: diff.IsBinary(data)}, nil
	}
	if len(data) > 0 {
		if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
			return FileSum{}, err
		}
	}
	return SumReader(FdIO(fd))
}

// CopyBuffers hold the buffers of copyPooled: one change set reads thousands of small files, and
// io.Copy from an *os.File would allocate (and clear) 32 KiB for each.
var CopyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled copies r to w through buf (never through r's WriteTo, which allocates its own).
func copyPooled(w io.Writer, r io.Reader, buf []byte) (int64, error) {
	return io.CopyBuffer(w, struct{ io.Reader }{r}, buf)
}

// FileHash is the sha256 of the regular file p under root, the staged layer or the project
// ("" when unreadable).
func FileHash(upper *Root, p string) string {
	fd, err := upper.OpenReadFD(p)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	sum, _, _, err := HeadHash(FdIO(fd))
	if err != nil {
		return ""
	}
	return sum
}
