package diff

import (
	"bytes"
	"testing"
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
