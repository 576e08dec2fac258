package diffview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
)

func TestColorPatchEscapes(t *testing.T) {
	var patch bytes.Buffer
	if err := diff.WritePatch(&patch, []diff.FilePatch{{NewPath: "x\u202e.txt", NewMode: diff.ModeFile, New: []byte("evil\x1b]52;c;aGk=\x07\n")}}, diff.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ColorPatch(&out, patch.Bytes(), DefaultStyles(false)); err != nil {
		t.Fatal(err)
	}
	plain := ansi.Strip(out.String())
	if !strings.Contains(plain, `+evil\x1b]52;c;aGk=\x07`) {
		t.Errorf("coloured patch does not show the escape visibly:\n%s", plain)
	}
	for _, r := range plain {
		if r != '\n' && quote.Unsafe(r) {
			t.Fatalf("raw %U in coloured patch", r)
		}
	}
}
