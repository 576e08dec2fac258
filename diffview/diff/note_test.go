package diff

import (
	"bytes"
	"strings"
	"testing"
)

// A file's note (sparse, unreadable) follows its sizes in the diffstat, follows its "differ" line
// in the patch.
func TestFileNote(t *testing.T) {
	note := "sparse file: staged 1.0 TiB apparent, 0 B stored; not shown as text"
	p := FilePatch{NewPath: "huge.img", NewMode: ModeFile, TooLarge: true, NewSize: 1 << 40, Note: note}
	var stat bytes.Buffer
	if err := WriteStat(&stat, []StatEntry{StatOf(p, Options{})}, 120); err != nil {
		t.Fatal(err)
	}
	if want := " huge.img | Bin 0 -> 1099511627776 bytes (" + note + ")\n"; !strings.HasPrefix(stat.String(), want) {
		t.Errorf("stat =\n%q\nwant it to start with\n%q", stat.String(), want)
	}
	var patch bytes.Buffer
	if err := WritePatch(&patch, []FilePatch{p}, PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "Binary files /dev/null and b/huge.img differ\n# " + note + "\n"; !strings.HasSuffix(patch.String(), want) {
		t.Errorf("patch =\n%s\nwant it to end with\n%s", patch.String(), want)
	}
}
