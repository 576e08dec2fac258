package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// A file's apparent size can be far larger than what it stores: `truncate -s 1T` makes a terabyte
// that takes no block. Whatever shadow does with a large file (hash it, take its pre-image, copy
// it into the project, keep it for a rollback) goes by its data segments (SEEK_DATA, SEEK_HOLE)
// and steps over its holes, so that the cost is bounded by the bytes stored, and what is written
// keeps the holes.

const (
	// zeroBlock is the unit in which a content's zeros are counted: aligned blocks of this size
	// that hold only zeros, stored or not (a hole is a whole number of them on any filesystem
	// with blocks of 4 KiB or more).
	zeroBlock = 4 << 10
	// sparseMin is how many bytes of zero blocks make a content named by its zero-run form (see
	// contentSum), and how many bytes of holes make a side of a change sparse for review.
	sparseMin = 1 << 20
	// zeroRunPrefix starts the name of a content in its zero-run form: it never equals a sha256.
	zeroRunPrefix = "zeros-"
)

// zeroPage is zeros to hash and compare with.
var zeroPage [64 << 10]byte

// contentSum names a content, as the session records it (Side.Hash, the bases, decisions and
// journal). It is the sha256 of the bytes, except for a content holding at least sparseMin bytes
// in all-zero zeroBlock blocks: that one is named zeroRunPrefix and the sha256 of its bytes
// without those blocks, followed by where they were. The rule depends on the content only, not on
// how a file stores it: a sparse file and a dense copy of it get one name. The zero blocks of a
// hole are counted without being hashed (Zeros), so naming a terabyte of holes costs nothing;
// the sha256 of every byte is kept up only while the content may still be below sparseMin, so at
// most that many unstored zeros are hashed.
type contentSum struct {
	// lit hashes the bytes outside zero blocks: all of them until the first zero block, so that
	// it is also the sha256 of the bytes until then.
	lit hash.Hash
	// plain, from the first zero block on, hashes every byte, until zeros reaches sparseMin.
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

func newContentSum() *contentSum { return &contentSum{lit: sha256.New()} }

// Write adds stored bytes.
func (h *contentSum) Write(p []byte) (int, error) {
	n := len(p)
	h.n += int64(n)
	if len(h.part) > 0 {
		k := min(len(p), zeroBlock-len(h.part))
		h.part = append(h.part, p[:k]...)
		p = p[k:]
		if len(h.part) < zeroBlock {
			return n, nil
		}
		h.blocks(h.part)
		h.part = h.part[:0]
	}
	full := len(p) &^ (zeroBlock - 1)
	h.blocks(p[:full])
	h.part = append(h.part, p[full:]...)
	return n, nil
}

// Zeros adds n zero bytes that are not stored (a hole): whole zero blocks are only counted.
func (h *contentSum) Zeros(n int64) {
	if len(h.part) > 0 {
		k := min(n, int64(zeroBlock-len(h.part)))
		h.Write(zeroPage[:k])
		n -= k
	}
	if full := n &^ (zeroBlock - 1); full > 0 {
		h.n += full
		h.zeroRun(full, nil)
		n -= full
	}
	h.Write(zeroPage[:n])
}

// blocks classifies p, whole blocks.
func (h *contentSum) blocks(p []byte) {
	start := 0
	for i := 0; i < len(p); i += zeroBlock {
		if !isZero(p[i : i+zeroBlock]) {
			continue
		}
		h.data(p[start:i])
		j := i + zeroBlock
		for j < len(p) && isZero(p[j:j+zeroBlock]) {
			j += zeroBlock
		}
		h.zeroRun(int64(j-i), p[i:j])
		start, i = j, j-zeroBlock
	}
	h.data(p[start:])
}

func isZero(b []byte) bool { return string(b) == string(zeroPage[:len(b)]) }

// data adds bytes that are not a zero block.
func (h *contentSum) data(p []byte) {
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
func (h *contentSum) zeroRun(n int64, stored []byte) {
	if !h.forked {
		c, err := h.lit.(hash.Cloner).Clone()
		if err != nil {
			panic(err) // crypto/sha256 clones
		}
		h.plain, h.runs, h.forked = c, sha256.New(), true
	}
	if h.runLen == 0 {
		h.runStart = h.done / zeroBlock
	}
	h.runLen += n / zeroBlock
	h.done += n
	if h.plain != nil {
		feed := min(n, sparseMin-h.zeros)
		for fed := int64(0); fed < feed; {
			k := min(feed-fed, int64(len(zeroPage)))
			h.plain.Write(zeroPage[:k])
			fed += k
		}
	}
	h.zeros += n
	if h.zeros >= sparseMin {
		h.plain = nil
	}
}

func (h *contentSum) endRun() {
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
func (h *contentSum) Sum() string {
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
	return zeroRunPrefix + hex.EncodeToString(h.lit.Sum(nil))
}

// contentName is the contentSum of b.
func contentName(b []byte) string {
	if len(b) < sparseMin {
		return sha256Hex(b)
	}
	h := newContentSum()
	h.Write(b)
	return h.Sum()
}

// fileSum is what reading a regular file tells: its contentSum, its length, whether it looks
// binary (diff.IsBinary) and how many of its bytes are holes.
type fileSum struct {
	hash   string
	size   int64
	binary bool
	holes  int64
}

// sparseHoles is what a side of a change records of holes: those of a file with at least
// sparseMin bytes of them, which review does not read; 0 otherwise.
func sparseHoles(holes int64) int64 {
	if holes < sparseMin {
		return 0
	}
	return holes
}

// errShrank is the error of a file that ends before its stat said, read while it was cut.
var errShrank = errors.New("the file shrank while it was read")

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

// readSegments calls data with the stored bytes of the file fd within [from, to), in order and in
// pieces of buf, and hole with the length of each hole between them (and up to to). Offsets are
// relative to from.
func readSegments(fd int, from, to int64, buf []byte, data func(off int64, p []byte) error, hole func(off, n int64) error) error {
	pos := from
	err := segments(fd, from, to, func(off, end int64) error {
		if off > pos {
			if err := hole(pos-from, off-pos); err != nil {
				return err
			}
		}
		for off < end {
			n, err := pread(fd, buf[:min(int64(len(buf)), end-off)], off)
			if err != nil {
				return err
			}
			if n == 0 {
				return errShrank
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

func pread(fd int, p []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, p, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// sumFD reads the regular file fd, size bytes long by its stat, by its data segments: its holes
// are counted, not read.
func sumFD(fd int, size int64) (fileSum, error) {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	h := newContentSum()
	s := fileSum{size: size}
	err := readSegments(fd, 0, size, *bp, func(off int64, p []byte) error {
		if off < diff.SniffLen && !s.binary {
			s.binary = diff.IsBinary(p[:min(int64(len(p)), diff.SniffLen-off)])
		}
		h.Write(p)
		return nil
	}, func(off, n int64) error {
		s.binary = s.binary || off < diff.SniffLen
		s.holes += n
		h.Zeros(n)
		return nil
	})
	if err != nil {
		return fileSum{}, err
	}
	s.hash = h.Sum()
	return s, nil
}

// sumReader is headHash with the holes: a regular file that r reads from its start (an *os.File
// or fdIO) of at least sparseMin bytes is read by its data segments; anything else is read whole.
func sumReader(r io.Reader) (fileSum, error) {
	fd := -1
	switch f := r.(type) {
	case *os.File:
		fd = int(f.Fd())
	case fdIO:
		fd = int(f)
	}
	var st unix.Stat_t
	if fd >= 0 && unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size >= sparseMin {
		return sumFD(fd, st.Size)
	}
	h := newContentSum()
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	head := buf[:diff.SniffLen]
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return fileSum{}, err
	}
	h.Write(head[:n])
	s := fileSum{size: int64(n), binary: diff.IsBinary(head[:n])}
	if err == nil {
		rest, err := copyPooled(h, r, buf)
		if err != nil {
			return fileSum{}, err
		}
		s.size += rest
	}
	s.hash = h.Sum()
	return s, nil
}

// copySparse copies [off, off+n) of the file src into the new, empty file dst, holes left holes:
// dst is made n bytes long and only the data segments are written. It returns what it copied
// (sum, with the holes).
func copySparse(dst, src int, off, n int64) (fileSum, error) {
	if err := unix.Ftruncate(dst, n); err != nil {
		return fileSum{}, err
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	h := newContentSum()
	s := fileSum{size: n}
	err := readSegments(src, off, off+n, *bp, func(at int64, p []byte) error {
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
		s.holes += n
		h.Zeros(n)
		return nil
	})
	if err != nil {
		return fileSum{}, err
	}
	s.hash = h.Sum()
	return s, nil
}

// humanSize is n bytes in binary units, for a note ("1.0 TiB", "12 KiB", "512 B").
func humanSize(n int64) string {
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
