package diffview

import (
	"bufio"
	"bytes"
	"io"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// ColorPatch rewrites git-style patch text for a terminal: every line visibly escaped (so no
// byte the agent wrote reaches the terminal raw) and coloured by its kind.
func ColorPatch(w io.Writer, patch []byte, s Styles) error {
	bw := bufio.NewWriter(w)
	for len(patch) > 0 {
		line := patch
		if i := bytes.IndexByte(patch, '\n'); i >= 0 {
			line, patch = patch[:i], patch[i+1:]
		} else {
			patch = nil
		}
		text := diff.EscapeLine(string(line))
		switch {
		case bytes.HasPrefix(line, []byte("diff --git ")), bytes.HasPrefix(line, []byte("index ")),
			bytes.HasPrefix(line, []byte("--- ")), bytes.HasPrefix(line, []byte("+++ ")),
			bytes.HasPrefix(line, []byte("new file")), bytes.HasPrefix(line, []byte("deleted file")),
			bytes.HasPrefix(line, []byte("old mode")), bytes.HasPrefix(line, []byte("new mode")),
			bytes.HasPrefix(line, []byte("rename ")), bytes.HasPrefix(line, []byte("similarity")):
			text = s.FileHeader.Render(text)
		case bytes.HasPrefix(line, []byte("@@")):
			text = s.HunkHeader.Render(text)
		case len(line) > 0 && line[0] == '+':
			text = s.Added.Render(text)
		case len(line) > 0 && line[0] == '-':
			text = s.Removed.Render(text)
		}
		bw.WriteString(text)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
