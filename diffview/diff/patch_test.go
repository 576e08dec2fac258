package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a file tree for patch tests: path → entry.
type entry struct {
	mode    uint32
	content string
}

// writeTree creates the tree under dir.
func writeTree(t *testing.T, dir string, tree map[string]entry) {
	t.Helper()
	for p, e := range tree {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if e.mode == ModeSymlink {
			if err := os.Symlink(e.content, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		perm := os.FileMode(0o644)
		if e.mode == ModeExecutable {
			perm = 0o755
		}
		if err := os.WriteFile(full, []byte(e.content), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, perm); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every file and symlink under dir.
func readTree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = entry{ModeSymlink, target}
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			mode := ModeFile
			if info.Mode()&0o100 != 0 {
				mode = ModeExecutable
			}
			out[rel] = entry{mode, string(b)}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// patchesFor lists the file patches that turn old into new, with the given
// renames (old path → new path).
func patchesFor(old, new map[string]entry, renames map[string]string) []FilePatch {
	var ps []FilePatch
	renamedTo := map[string]bool{}
	for from, to := range renames {
		renamedTo[to] = true
		ps = append(ps, FilePatch{OldPath: from, NewPath: to, OldMode: old[from].mode, NewMode: new[to].mode,
			Old: []byte(old[from].content), New: []byte(new[to].content)})
	}
	for p, o := range old {
		if _, ok := renames[p]; ok {
			continue
		}
		n, ok := new[p]
		fp := FilePatch{OldPath: p, NewPath: p, OldMode: o.mode, Old: []byte(o.content)}
		if ok {
			if n == o {
				continue
			}
			fp.NewMode, fp.New = n.mode, []byte(n.content)
		}
		ps = append(ps, fp)
	}
	for p, n := range new {
		if _, ok := old[p]; ok || renamedTo[p] {
			continue
		}
		ps = append(ps, FilePatch{NewPath: p, NewMode: n.mode, New: []byte(n.content)})
	}
	return ps
}

func sameTree(t *testing.T, tool string, got, want map[string]entry) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: %q missing", tool, p)
		} else if g != w {
			t.Errorf("%s: %q = %o %q, want %o %q", tool, p, g.mode, g.content, w.mode, w.content)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %q left over", tool, p)
		}
	}
}

func run(t *testing.T, dir string, stdin []byte, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s\npatch:\n%s", name, strings.Join(args, " "), err, out, stdin)
	}
}

func TestWritePatchApplies(t *testing.T) {
	old := map[string]entry{
		"keep.txt":      {ModeFile, "same\n"},
		"edit.txt":      {ModeFile, "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"},
		"gone.txt":      {ModeFile, "bye\n"},
		"noeol.txt":     {ModeFile, "a\nb"},
		"crlf.txt":      {ModeFile, "a\r\nb\r\n"},
		"run.sh":        {ModeFile, "#!/bin/sh\necho hi\n"},
		"old name.txt":  {ModeFile, "moved\ncontent\nhere\n"},
		"renamed.go":    {ModeFile, "package a\n\nfunc A() {}\n\nfunc B() {}\n\nfunc C() {}\n"},
		"link":          {ModeSymlink, "keep.txt"},
		"empty-gone":    {ModeFile, ""},
		"dir/sub/x.txt": {ModeFile, "x\n"},
		"tab\there.txt": {ModeFile, "tab\n"},
		"quote\"d.txt":  {ModeFile, "q\n"},
		"ünï.txt":       {ModeFile, "u\n"},
		"became-link":   {ModeFile, "file\n"},
	}
	new := map[string]entry{
		"keep.txt":      {ModeFile, "same\n"},
		"edit.txt":      {ModeFile, "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nNINE\nten\neleven\n"},
		"noeol.txt":     {ModeFile, "a\nb\n"},
		"crlf.txt":      {ModeFile, "a\r\nB\r\n"},
		"run.sh":        {ModeExecutable, "#!/bin/sh\necho hi\n"},
		"new name.txt":  {ModeFile, "moved\ncontent\nhere\n"},
		"moved.go":      {ModeFile, "package a\n\nfunc A() {}\n\nfunc B2() {}\n\nfunc C() {}\n"},
		"link":          {ModeSymlink, "dir/sub/x.txt"},
		"newlink":       {ModeSymlink, "../outside"},
		"empty-new":     {ModeFile, ""},
		"dir/sub/x.txt": {ModeFile, "x\ny\n"},
		"dir/new.txt":   {ModeFile, "fresh\n"},
		"tab\there.txt": {ModeFile, "tab\ntab\n"},
		"quote\"d.txt":  {ModeFile, "q\nq\n"},
		"ünï.txt":       {ModeFile, "u\nu\n"},
		"new\nline":     {ModeFile, "nl\n"},
		"became-link":   {ModeSymlink, "keep.txt"},
	}
	renames := map[string]string{"old name.txt": "new name.txt", "renamed.go": "moved.go"}
	var patch bytes.Buffer
	if err := WritePatch(&patch, patchesFor(old, new, renames), PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"diff --git \"a/tab\\there.txt\" \"b/tab\\there.txt\"\n",
		"diff --git \"a/\\303\\274n\\303\\257.txt\" \"b/\\303\\274n\\303\\257.txt\"\n",
		"old mode 100644\nnew mode 100755\n",
		"similarity index 100%\nrename from old name.txt\nrename to new name.txt\n",
		"new file mode 120000\n",
		"+../outside\n\\ No newline at end of file\n",
		"deleted file mode 100644\nindex e69de29..0000000\n",
		"diff --git a/became-link b/became-link\ndeleted file mode 100644\n",
	} {
		if !strings.Contains(patch.String(), want) {
			t.Errorf("patch lacks %q", want)
		}
	}
	t.Run("git apply", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, old)
		run(t, dir, patch.Bytes(), "git", "apply", "--unsafe-paths", "-")
		sameTree(t, "git apply", readTree(t, dir), new)
	})
	t.Run("patch -p1", func(t *testing.T) {
		if _, err := exec.LookPath("patch"); err != nil {
			t.Fatal("GNU patch is not installed (Debian package patch)")
		}
		// GNU patch does not create a file from a patch without hunks
		// (an empty new file) nor turn a file into a symlink in one go;
		// those are git-only features, so leave them out here.
		oldP, newP := copyTree(old), copyTree(new)
		delete(newP, "empty-new")
		delete(oldP, "became-link")
		delete(newP, "became-link")
		var p bytes.Buffer
		if err := WritePatch(&p, patchesFor(oldP, newP, renames), PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeTree(t, dir, oldP)
		run(t, dir, p.Bytes(), "patch", "-p1", "-f")
		sameTree(t, "patch -p1", readTree(t, dir), newP)
	})
}

func copyTree(m map[string]entry) map[string]entry {
	out := make(map[string]entry, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestWritePatchBinary(t *testing.T) {
	big := make([]byte, 5000)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	old := map[string]entry{
		"img.bin":  {ModeFile, "\x00\x01\x02old"},
		"gone.bin": {ModeFile, "\x00gone"},
		"big.bin":  {ModeFile, string(big)},
	}
	big2 := append([]byte{}, big...)
	big2[100] = 0
	new := map[string]entry{
		"img.bin":   {ModeFile, "\x00\x01\x02new and longer"},
		"added.bin": {ModeFile, "\x00"},
		"big.bin":   {ModeFile, string(big2)},
		"empty.bin": {ModeFile, ""},
	}
	var text bytes.Buffer
	if err := WritePatch(&text, patchesFor(old, new, nil), PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Binary files a/img.bin and b/img.bin differ\n") ||
		!strings.Contains(text.String(), "Binary files /dev/null and b/added.bin differ\n") ||
		!strings.Contains(text.String(), "Binary files a/gone.bin and /dev/null differ\n") {
		t.Errorf("text patch lacks the Binary files lines:\n%s", text.String())
	}
	var bin bytes.Buffer
	if err := WritePatch(&bin, patchesFor(old, new, nil), PatchOptions{Binary: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bin.String(), "GIT binary patch\nliteral ") {
		t.Fatalf("binary patch lacks a literal:\n%s", bin.String())
	}
	dir := t.TempDir()
	writeTree(t, dir, old)
	run(t, dir, bin.Bytes(), "git", "apply", "-")
	sameTree(t, "git apply --binary", readTree(t, dir), new)
}

func TestQuotePath(t *testing.T) {
	tests := map[string]string{
		"plain/path.go":  "plain/path.go",
		"with space":     "with space",
		"tab\t":          `"tab\t"`,
		"nl\n":           `"nl\n"`,
		`q"`:             `"q\""`,
		`back\slash`:     `"back\\slash"`,
		"esc\x1b[31m":    `"esc\033[31m"`,
		"é":              `"\303\251"`,
		"del\x7f":        `"del\177"`,
		"bidi\u202e.txt": `"bidi\342\200\256.txt"`,
	}
	for in, want := range tests {
		if got := QuotePath(in); got != want {
			t.Errorf("QuotePath(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestEncode85(t *testing.T) {
	// git's base85 of 4 zero bytes is "00000", of 0xffffffff "|NsC0".
	if got := encode85([]byte{0, 0, 0, 0}); got != "00000" {
		t.Errorf("encode85(0) = %q", got)
	}
	if got := encode85([]byte{0xff, 0xff, 0xff, 0xff}); got != "|NsC0" {
		t.Errorf("encode85(ffffffff) = %q", got)
	}
}

func TestBlobID(t *testing.T) {
	if got := BlobID(nil); got != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" {
		t.Errorf("BlobID(empty) = %s", got)
	}
	if got := BlobID([]byte("hello\n")); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("BlobID(hello) = %s", got)
	}
}

func TestWritePatchRandomAppliesWithGit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	old, new := map[string]entry{}, map[string]entry{}
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("f%02d.txt", i)
		o, n := randomText(r), randomText(r)
		switch r.IntN(6) {
		case 0:
			if len(n) > 0 { // new file
				new[name] = entry{ModeFile, string(n)}
			}
			continue
		case 1:
			if len(o) > 0 { // deleted file
				old[name] = entry{ModeFile, string(o)}
			}
			continue
		}
		if len(o) == 0 && len(n) == 0 {
			continue
		}
		old[name] = entry{ModeFile, string(o)}
		new[name] = entry{ModeFile, string(n)}
	}
	for _, ctx := range []int{1, 3} {
		var patch bytes.Buffer
		if err := WritePatch(&patch, patchesFor(old, new, nil), PatchOptions{Diff: Options{Context: ctx}}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeTree(t, dir, old)
		run(t, dir, patch.Bytes(), "git", "apply", "-")
		sameTree(t, fmt.Sprintf("git apply (context %d)", ctx), readTree(t, dir), new)
	}
}
