package layers

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A checkpoint is checked (SPEC §12: a torn or damaged checkpoint is detected, reported and never
// merged in part). SumsFile, beside its layer, lists every entry of the layer with what it is and,
// for a file or a symlink, the SHA-256 of its contents; meta.json, written after it, holds the
// SHA-256 of SumsFile and ends with the SHA-256 of the rest of itself. Whatever holds the step's
// contents later (a pack), the record is the same: metadata that checks itself and names the
// checksum of a list of entries, each with its own.

// SumsFile is the name of a checkpoint's list of entries and their checksums.
const SumsFile = "sums"

// sumEntry is one line of SumsFile: kind, mode, checksum ("-" for none), path (quoted).
type sumEntry struct {
	kind byte // 'f' file, 'l' symlink, 'd' directory, 'o' opaque directory, 'w' whiteout, 'n' other
	mode uint32
	sum  string
}

// Sums lists the entries below directory fd (a checkpoint's layer) and their checksums, in the
// form of SumsFile.
func Sums(fd int) ([]byte, error) { return sumsKnown(fd, nil) }

// sumsKnown is Sums, taking the checksum of a file at a path of known from there rather than
// reading the file (what a delta wrote, it summed as it wrote it).
func sumsKnown(fd int, known map[string]string) ([]byte, error) {
	entries := map[string]sumEntry{}
	if err := sumTree(fd, entries, known); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b bytes.Buffer
	for _, p := range paths {
		e := entries[p]
		fmt.Fprintf(&b, "%c %o %s %s\n", e.kind, e.mode, e.sum, strconv.Quote(p))
	}
	return b.Bytes(), nil
}

// sumTree records every entry below directory root and its checksum. Like scanState, it goes
// depth first through a dirChain, holding a bounded number of descriptors however deep the
// layer is.
func sumTree(root int, out map[string]sumEntry, known map[string]string) error {
	chain := &dirChain{root: root}
	defer chain.close()
	stack := []string{""}
	for len(stack) > 0 {
		rel := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fd, _, err := chain.parent(joinRel(rel, "-"))
		if err != nil {
			return err
		}
		subdirs, err := sumDir(fd, rel, out, known)
		unix.Close(fd)
		if err != nil {
			return err
		}
		stack = append(stack, subdirs...)
	}
	return nil
}

// sumDir records the entries of directory fd (rel below the root) and their checksums, and
// returns the paths of its subdirectories.
func sumDir(fd int, rel string, out map[string]sumEntry, known map[string]string) ([]string, error) {
	names, err := readDirNames(fd)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", visiblePath(rel), err)
	}
	var subdirs []string
	for _, name := range names {
		p := joinRel(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, fmt.Errorf("stat %s: %w", visiblePath(p), err)
		}
		e := sumEntry{kind: 'n', mode: st.Mode &^ unix.S_IFMT, sum: "-"}
		kind := KindAt(fd, name, &st)
		switch {
		case kind == Whiteout:
			e.kind, e.mode = 'w', 0
		case kind == File:
			e.kind = 'f'
			if sum, ok := known[p]; ok {
				e.sum = sum
			} else if e.sum, err = fileSum(fd, name); err != nil {
				return nil, fmt.Errorf("read %s: %w", visiblePath(p), err)
			}
		case kind == Symlink:
			e.kind = 'l'
			target, err := readlinkAt(fd, name)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", visiblePath(p), err)
			}
			h := sha256.Sum256([]byte(target))
			e.sum = hex.EncodeToString(h[:])
		case kind == Dir || kind == OpaqueDir:
			e.kind = 'd'
			if kind == OpaqueDir {
				e.kind = 'o'
			}
			subdirs = append(subdirs, p)
		}
		out[p] = e
	}
	return subdirs, nil
}

// fileSum is the checksum of a regular file's content: SHA-256 over each 4 KiB block, at its
// offset, that holds a byte other than zero, then the size. Holes and blocks of zeros count
// alike, so the sum is the content's however the file lays it out, and a sparse file (a
// `truncate -s 1T`) costs what it stores, not a read of its terabyte.
func fileSum(dir int, name string) (string, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	const block = 4 << 10
	h := sha256.New()
	buf := make([]byte, 64<<10)
	var at [8]byte
	done := int64(0) // every block below is summed
	for off := int64(0); off < st.Size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			data = off // no SEEK_DATA here: read it all
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			hole = st.Size
		}
		for pos := max(data-data%block, done); pos < hole; {
			n, err := unix.Pread(fd, buf[:min(int64(len(buf)), hole-pos+block-1)/block*block], pos)
			if err != nil {
				return "", err
			}
			if n == 0 {
				break
			}
			for b := 0; b < n; b += block {
				chunk := buf[b:min(b+block, n)]
				if !allZero(chunk) {
					binary.BigEndian.PutUint64(at[:], uint64(pos)+uint64(b))
					h.Write(at[:])
					h.Write(chunk)
				}
			}
			pos += int64(n)
			done = pos
		}
		off = max(hole, done)
	}
	binary.BigEndian.PutUint64(at[:], uint64(st.Size))
	h.Write(at[:])
	return hex.EncodeToString(h.Sum(nil)), nil
}

// denseSum is fileSum of a file that holds data, all of it read.
func denseSum(data []byte) string {
	const block = 4 << 10
	h := sha256.New()
	var at [8]byte
	for b := 0; b < len(data); b += block {
		chunk := data[b:min(b+block, len(data))]
		if !allZero(chunk) {
			binary.BigEndian.PutUint64(at[:], uint64(b))
			h.Write(at[:])
			h.Write(chunk)
		}
	}
	binary.BigEndian.PutUint64(at[:], uint64(len(data)))
	h.Write(at[:])
	return hex.EncodeToString(h.Sum(nil))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// SumOf is the SHA-256 of data, in hex: what meta.json holds of SumsFile.
func SumOf(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// Damaged compares the layer below fd with its SumsFile, sums, and returns the paths that do not
// match it: changed, cut short, gone, or not listed; sorted. A directory's damage is that of
// what it holds.
func Damaged(fd int, sums []byte) ([]string, error) {
	want := map[string]sumEntry{}
	for _, line := range strings.Split(string(sums), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 || len(f[0]) != 1 {
			return nil, fmt.Errorf("the list of entries is damaged")
		}
		mode, err := strconv.ParseUint(f[1], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("the list of entries is damaged")
		}
		p, err := strconv.Unquote(f[3])
		if err != nil {
			return nil, fmt.Errorf("the list of entries is damaged")
		}
		want[p] = sumEntry{kind: f[0][0], mode: uint32(mode), sum: f[2]}
	}
	got := map[string]sumEntry{}
	if err := sumTree(fd, got, nil); err != nil {
		return nil, err
	}
	var bad []string
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			bad = append(bad, p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, p)
		}
	}
	sort.Strings(bad)
	return bad, nil
}

// checkMember is how meta.json ends: the SHA-256 of all that comes before it, closed as an
// object.
var checkMember = regexp.MustCompile(`,"check":"([0-9a-f]{64})"\}\s*$`)

// SealMeta encodes checkpoint c as meta.json: its JSON, ending with the checksum of the rest.
func SealMeta(c Checkpoint) ([]byte, error) {
	c.Damage = ""
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("encode checkpoint %s", c.ID)
	}
	return append(b[:len(b)-1], `,"check":"`+SumOf(b)+`"}`...), nil
}

// ReadMeta decodes meta.json. An error says it is damaged: cut short, changed, or not JSON. One
// written before checkpoints were checked (no checksum) is taken as it is.
func ReadMeta(data []byte) (Checkpoint, error) {
	var c Checkpoint
	if m := checkMember.FindSubmatchIndex(data); m != nil {
		rest := append(append([]byte(nil), data[:m[0]]...), '}')
		if SumOf(rest) != string(data[m[2]:m[3]]) {
			return c, fmt.Errorf("meta.json does not match its checksum")
		}
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("meta.json is cut short or not JSON")
	}
	c.Damage = ""
	return c, nil
}
