package diffview

import (
	"slices"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// A file's note heads its view in review; a control character in it is shown escaped.
func TestFileNote(t *testing.T) {
	note := "sparse file: staged 1.0 TiB apparent, 0 B stored; not shown as text"
	fv := newFileView(File{Path: "huge.img", Status: StatusAdded, NewMode: diff.ModeFile, Binary: true, NewSize: 1 << 40, Note: note + "\x1b[2J"})
	if !slices.Contains(fv.notes(), note+`\x1b[2J`) {
		t.Errorf("review notes = %q", fv.notes())
	}
}
