package diffview

import (
	"io"
	"time"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// The pure core (line diff, hunks, words, patches, the three-way merge, escaping) is the package
// diffview/diff, which session imports without linking the terminal. The names below forward to
// it for code still written against diffview's spelling.

type (
	Conflict     = diff.Conflict
	Decision     = diff.Decision
	FileDiff     = diff.FileDiff
	FilePatch    = diff.FilePatch
	Hunk         = diff.Hunk
	Line         = diff.Line
	Merged       = diff.Merged
	Op           = diff.Op
	Options      = diff.Options
	PatchOptions = diff.PatchOptions
	Piece        = diff.Piece
	Segment      = diff.Segment
	StatEntry    = diff.StatEntry
	Verdict      = diff.Verdict
)

const (
	ModeFile       = diff.ModeFile
	ModeExecutable = diff.ModeExecutable
	ModeSymlink    = diff.ModeSymlink
	Context        = diff.Context
	Delete         = diff.Delete
	Insert         = diff.Insert
	Undecided      = diff.Undecided
	Accepted       = diff.Accepted
	Rejected       = diff.Rejected
	DefaultBudget  = diff.DefaultBudget
	DefaultContext = diff.DefaultContext
	SniffLen       = diff.SniffLen
	TabWidth       = diff.TabWidth
)

var ErrEmptyEdit = diff.ErrEmptyEdit

func Apply(base []byte, hunks []Hunk, decisions map[string]Decision) ([]byte, error) {
	return diff.Apply(base, hunks, decisions)
}
func BlobID(b []byte) string        { return diff.BlobID(b) }
func EditText(h Hunk) string        { return diff.EditText(h) }
func Escape(s string) string        { return diff.Escape(s) }
func EscapeLine(s string) string    { return diff.EscapeLine(s) }
func EscapePieces(s string) []Piece { return diff.EscapePieces(s) }
func IsBinary(b []byte) bool        { return diff.IsBinary(b) }
func Pairs(lines []Line) [][2]int   { return diff.Pairs(lines) }
func QuotePath(p string) string     { return diff.QuotePath(p) }
func SplitLines(b []byte) []string  { return diff.SplitLines(b) }
func Compute(path string, old, new []byte, opts Options) FileDiff {
	return diff.Compute(path, old, new, opts)
}
func Group(path string, lines []Line, ctx int) []Hunk  { return diff.Group(path, lines, ctx) }
func ParseEdit(h Hunk, text string) (Hunk, error)      { return diff.ParseEdit(h, text) }
func SelectLines(h Hunk, selected []int) (Hunk, error) { return diff.SelectLines(h, selected) }
func Split(h Hunk) []Hunk                              { return diff.Split(h) }
func StatOf(p FilePatch, opts Options) StatEntry       { return diff.StatOf(p, opts) }
func Resolve(hunks []Hunk, decisions map[string]Decision) ([]Hunk, []Decision) {
	return diff.Resolve(hunks, decisions)
}
func WritePatch(w io.Writer, patches []FilePatch, opts PatchOptions) error {
	return diff.WritePatch(w, patches, opts)
}
func WriteStat(w io.Writer, entries []StatEntry, width int) error {
	return diff.WriteStat(w, entries, width)
}
func DiffLines(old, new []byte, budget time.Duration) ([]Line, bool) {
	return diff.DiffLines(old, new, budget)
}
func Merge3(path string, base, host, agent []byte, opts Options) Merged {
	return diff.Merge3(path, base, host, agent, opts)
}
func WordDiff(old, new string) ([]Segment, []Segment) { return diff.WordDiff(old, new) }
