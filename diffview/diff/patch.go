package diff

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Git file modes as they appear in patches.
const (
	ModeFile       uint32 = 0o100644
	ModeExecutable uint32 = 0o100755
	ModeSymlink    uint32 = 0o120000
)

// FilePatch is one changed path for the git patch writer. A side that does
// not exist has mode 0 (OldMode 0: a new file; NewMode 0: a deleted file).
// A symlink (ModeSymlink) carries its target as content, without newline.
// OldPath and NewPath differ for a rename; an empty one takes the other.
type FilePatch struct {
	OldPath, NewPath string
	OldMode, NewMode uint32
	Old, New         []byte
	// Binary forces binary handling; otherwise it is detected as git does
	// (a NUL byte among the first 8000 bytes of either side).
	Binary bool
	// Similarity is the rename's similarity percentage; computed when zero.
	Similarity int
	// TooLarge marks a change whose contents were too large to load: Old and New are empty,
	// OldSize and NewSize give the sizes, and it is written as a binary change without an
	// index line. A binary patch of it is refused.
	TooLarge         bool
	OldSize, NewSize int64
	// Note is a line about a TooLarge file that its diff does not show (a sparse or unreadable
	// file): the diffstat prints it after the sizes, the patch as a "# " line after its header.
	Note string
}

// PatchOptions tune the git patch writer.
type PatchOptions struct {
	// Binary writes binary changes as "GIT binary patch" literals that
	// `git apply` can apply, instead of "Binary files … differ".
	Binary bool
	// FullIndex writes full object ids on "index" lines (always done for
	// binary patches, which git apply requires).
	FullIndex bool
	// Diff tunes the hunks of text changes.
	Diff Options
}

// SniffLen is how much of the start of a content IsBinary looks at.
const SniffLen = 8000

// IsBinary reports whether content looks binary the way git decides it: a
// NUL byte among the first SniffLen bytes.
func IsBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), SniffLen)], 0) >= 0
}

// BlobID is the git object id (SHA-1) of a blob with content b.
func BlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

const nullID = "0000000000000000000000000000000000000000"

// WritePatch writes the patches as git-style unified diff text, in order,
// that `git apply` (and, for text changes, `patch -p1`) applies to the old
// tree to yield the new one.
func WritePatch(w io.Writer, patches []FilePatch, opts PatchOptions) error {
	var b strings.Builder
	for _, p := range patches {
		if p.OldPath == "" {
			p.OldPath = p.NewPath
		}
		if p.NewPath == "" {
			p.NewPath = p.OldPath
		}
		if p.OldPath == "" {
			return fmt.Errorf("write patch: file patch without a path")
		}
		if p.TooLarge && opts.Binary {
			return fmt.Errorf("write patch: %s is too large for a binary patch (%d bytes)", QuotePath(p.NewPath), max(p.OldSize, p.NewSize))
		}
		if p.OldMode != 0 && p.NewMode != 0 && IsLink(p.OldMode) != IsLink(p.NewMode) {
			// A file replaced by a symlink (or the reverse) is a deletion
			// and a creation, as git writes it.
			del, add := p, p
			del.NewMode, del.New, del.NewPath = 0, nil, p.OldPath
			add.OldMode, add.Old, add.OldPath = 0, nil, p.NewPath
			writeFile(&b, del, opts)
			writeFile(&b, add, opts)
		} else {
			writeFile(&b, p, opts)
		}
		if b.Len() > 1<<20 {
			if _, err := io.WriteString(w, b.String()); err != nil {
				return fmt.Errorf("write patch of %s: %w", p.NewPath, err)
			}
			b.Reset()
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write patch: %w", err)
	}
	return nil
}

// IsLink reports whether a git mode is a symlink's.
func IsLink(mode uint32) bool { return mode&0o170000 == 0o120000 }

// writeFile writes one file's extended header and its hunks or binary body.
func writeFile(b *strings.Builder, p FilePatch, opts PatchOptions) {
	isNew, isDeleted := p.OldMode == 0, p.NewMode == 0
	if isNew {
		p.Old = nil
	}
	if isDeleted {
		p.New = nil
	}
	renamed := !isNew && !isDeleted && p.OldPath != p.NewPath
	fmt.Fprintf(b, "diff --git %s %s\n", gitLineName("a/"+p.OldPath, renamed), gitLineName("b/"+p.NewPath, renamed))
	switch {
	case isNew:
		fmt.Fprintf(b, "new file mode %06o\n", p.NewMode)
	case isDeleted:
		fmt.Fprintf(b, "deleted file mode %06o\n", p.OldMode)
	case p.OldMode != p.NewMode:
		fmt.Fprintf(b, "old mode %06o\nnew mode %06o\n", p.OldMode, p.NewMode)
	}
	same := bytes.Equal(p.Old, p.New)
	if renamed {
		sim := p.Similarity
		if sim <= 0 || sim > 100 {
			sim = similarity(p.Old, p.New)
		}
		fmt.Fprintf(b, "similarity index %d%%\nrename from %s\nrename to %s\n", sim, QuotePath(p.OldPath), QuotePath(p.NewPath))
	}
	if p.TooLarge {
		oldName, newName := QuotePath("a/"+p.OldPath), QuotePath("b/"+p.NewPath)
		if isNew {
			oldName = "/dev/null"
		}
		if isDeleted {
			newName = "/dev/null"
		}
		fmt.Fprintf(b, "Binary files %s and %s differ\n", oldName, newName)
		if p.Note != "" {
			// After the "differ" line, where git apply takes it for text between patches.
			b.WriteString("# " + strings.ReplaceAll(p.Note, "\n", " ") + "\n")
		}
		return
	}
	if same && !isNew && !isDeleted {
		return
	}
	binary := p.Binary || IsBinary(p.Old) || IsBinary(p.New)
	oldID, newID := nullID, nullID
	if !isNew {
		oldID = BlobID(p.Old)
	}
	if !isDeleted {
		newID = BlobID(p.New)
	}
	if !(binary && opts.Binary) && !opts.FullIndex {
		oldID, newID = oldID[:7], newID[:7]
	}
	b.WriteString("index " + oldID + ".." + newID)
	if !isNew && !isDeleted && p.OldMode == p.NewMode {
		fmt.Fprintf(b, " %06o", p.OldMode)
	}
	b.WriteString("\n")
	oldName, newName := QuotePath("a/"+p.OldPath), QuotePath("b/"+p.NewPath)
	if isNew {
		oldName = "/dev/null"
	}
	if isDeleted {
		newName = "/dev/null"
	}
	if binary {
		if !opts.Binary {
			fmt.Fprintf(b, "Binary files %s and %s differ\n", oldName, newName)
			return
		}
		b.WriteString("GIT binary patch\n")
		writeLiteral(b, p.New)
		writeLiteral(b, p.Old)
		return
	}
	if len(p.Old) == 0 && len(p.New) == 0 {
		return
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", oldName, newName)
	fd := Compute(p.NewPath, p.Old, p.New, opts.Diff)
	for _, h := range fd.Hunks {
		b.WriteString(h.Text())
	}
}

// similarity estimates how much of a renamed file's content survived, in
// percent, from the bytes of its unchanged lines.
func similarity(old, new []byte) int {
	if bytes.Equal(old, new) {
		return 100
	}
	total := max(len(old), len(new))
	if total == 0 {
		return 100
	}
	if IsBinary(old) || IsBinary(new) {
		return 0
	}
	lines, _ := DiffLines(old, new, DefaultBudget)
	kept := 0
	for _, l := range lines {
		if l.Op == Context {
			kept += len(l.Text)
		}
	}
	return kept * 100 / total
}

// writeLiteral writes data as a git binary patch "literal" hunk: zlib
// deflated, then in lines of at most 52 bytes, each prefixed by its length
// ('A'..'Z' for 1..26, 'a'..'z' for 27..52) and base85 encoded.
func writeLiteral(b *strings.Builder, data []byte) {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(data)
	zw.Close()
	fmt.Fprintf(b, "literal %d\n", len(data))
	deflated := z.Bytes()
	for len(deflated) > 0 {
		n := min(len(deflated), 52)
		if n <= 26 {
			b.WriteByte(byte('A' + n - 1))
		} else {
			b.WriteByte(byte('a' + n - 27))
		}
		b.WriteString(encode85(deflated[:n]))
		b.WriteByte('\n')
		deflated = deflated[n:]
	}
	b.WriteByte('\n')
}

// base85 is git's base85 alphabet.
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// encode85 encodes data in git's base85: each 4 bytes (the last group
// zero-padded), big-endian, as 5 digits most significant first.
func encode85(data []byte) string {
	var b strings.Builder
	for len(data) > 0 {
		var acc uint32
		for i := 0; i < 4; i++ {
			acc <<= 8
			if i < len(data) {
				acc |= uint32(data[i])
			}
		}
		var digits [5]byte
		for i := 4; i >= 0; i-- {
			digits[i] = base85[acc%85]
			acc /= 85
		}
		b.Write(digits[:])
		data = data[min(4, len(data)):]
	}
	return b.String()
}

// gitLineName is a name on the "diff --git" line. Git leaves spaces
// unquoted there; for a rename that makes the line ambiguous to GNU patch
// (which then refuses it), so such names are quoted, which git accepts too.
func gitLineName(name string, renamed bool) string {
	q := QuotePath(name)
	if renamed && q == name && strings.ContainsRune(name, ' ') {
		return `"` + name + `"`
	}
	return q
}

// QuotePath quotes a path the way git does when it has to: a path holding a
// control character, '"', '\', DEL or any non-ASCII byte is written in
// double quotes with C-style escapes (\t, \n, \", \\, octal \303 for other
// bytes); any other path is returned unchanged.
func QuotePath(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				b.WriteString(`\` + strconv.FormatInt(int64(c)|0o1000, 8)[1:])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
