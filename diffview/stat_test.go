package diffview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestWriteStat(t *testing.T) {
	entries := []StatEntry{
		StatOf(FilePatch{OldPath: "a.txt", NewPath: "a.txt", Old: []byte("1\n2\n3\n"), New: []byte("1\nx\n3\n4\n")}, Options{}),
		StatOf(FilePatch{NewPath: "new\x1b[2J.txt", New: []byte("n\n")}, Options{}),
		StatOf(FilePatch{OldPath: "img.png", NewPath: "img.png", Old: []byte("\x00ab"), New: []byte("\x00abcd")}, Options{}),
		StatOf(FilePatch{OldPath: "old.go", NewPath: "new.go", Old: []byte("a\n"), New: []byte("a\n")}, Options{}),
	}
	var b bytes.Buffer
	if err := WriteStat(&b, entries, 80); err != nil {
		t.Fatal(err)
	}
	want := " a.txt            | 3 ++-\n" +
		" new\\x1b[2J.txt   | 1 +\n" +
		" img.png          | Bin 3 -> 5 bytes\n" +
		" old.go => new.go | 0\n" +
		" 4 files changed, 3 insertions(+), 1 deletion(-)\n"
	if b.String() != want {
		t.Errorf("stat =\n%q\nwant\n%q", b.String(), want)
	}
}

func TestColorPatchEscapes(t *testing.T) {
	var patch bytes.Buffer
	if err := WritePatch(&patch, []FilePatch{{NewPath: "x\u202e.txt", NewMode: ModeFile, New: []byte("evil\x1b]52;c;aGk=\x07\n")}}, PatchOptions{}); err != nil {
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
		if r != '\n' && (r < 0x20 || invisible(r)) {
			t.Fatalf("raw %U in coloured patch", r)
		}
	}
}
