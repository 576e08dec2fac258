package diff

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
)

// StatEntry is one file's line counts for a diffstat.
type StatEntry struct {
	Path           string
	Added, Deleted int
	// Binary files are counted in bytes, as git shows them ("Bin 10 -> 12 bytes").
	Binary           bool
	OldSize, NewSize int64
	// Note is shown after the counts (FilePatch.Note).
	Note string
}

// StatOf counts the added and deleted lines of a file patch.
func StatOf(p FilePatch, opts Options) StatEntry {
	path := p.NewPath
	if path == "" {
		path = p.OldPath
	} else if p.OldPath != "" && p.OldPath != p.NewPath {
		path = p.OldPath + " => " + p.NewPath
	}
	e := StatEntry{Path: path, OldSize: int64(len(p.Old)), NewSize: int64(len(p.New)), Note: p.Note}
	if p.TooLarge {
		e.OldSize, e.NewSize = p.OldSize, p.NewSize
	}
	if p.TooLarge || p.Binary || IsBinary(p.Old) || IsBinary(p.New) {
		e.Binary = true
		return e
	}
	// Counting needs only the line diff of what lies between the lines both sides share at
	// their ends, not the hunks and their IDs.
	e.Added, e.Deleted, _ = CountLines(p.Old, p.New, opts.Budget)
	return e
}

// WriteStat writes a git-style diffstat ("path | 12 +++---" lines and a summary line) fitted to
// width columns. Paths are shown visibly escaped.
func WriteStat(w io.Writer, entries []StatEntry, width int) error {
	if width <= 0 {
		width = 80
	}
	bw := bufio.NewWriter(w)
	nameW, maxChange, added, deleted := 0, 0, 0, 0
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = Escape(e.Path)
		nameW = max(nameW, len(names[i]))
		maxChange = max(maxChange, e.Added+e.Deleted)
		added += e.Added
		deleted += e.Deleted
	}
	countW := len(fmt.Sprint(maxChange))
	nameW = min(nameW, max(width/2, 20))
	barW := max(width-nameW-countW-6, 10)
	for i, e := range entries {
		name := names[i]
		if len(name) > nameW {
			name = "..." + name[len(name)-nameW+3:]
		}
		note := ""
		if e.Note != "" {
			note = " (" + EscapeLine(e.Note) + ")"
		}
		if e.Binary {
			fmt.Fprintf(bw, " %-*s | %*s %d -> %d bytes%s\n", nameW, name, countW, "Bin", e.OldSize, e.NewSize, note)
			continue
		}
		plus, minus := e.Added, e.Deleted
		if total := plus + minus; total > barW {
			plus = (plus*barW + total - 1) / total
			minus = min(minus*barW/total, barW-plus)
		}
		bar := strings.Repeat("+", plus) + strings.Repeat("-", minus)
		if bar != "" {
			bar = " " + bar
		}
		fmt.Fprintf(bw, " %-*s | %*d%s%s\n", nameW, name, countW, e.Added+e.Deleted, bar, note)
	}
	fmt.Fprintf(bw, " %s changed", english.Count(len(entries), "file"))
	if added > 0 || deleted == 0 {
		fmt.Fprintf(bw, ", %s(+)", english.Count(added, "insertion"))
	}
	if deleted > 0 || added == 0 {
		fmt.Fprintf(bw, ", %s(-)", english.Count(deleted, "deletion"))
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}
