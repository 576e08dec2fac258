package layers

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/overlayforms"
)

// TestEveryReaderReadsEveryForm: every form an entry of a layer can take (overlayforms.All: the
// whiteout as a 0/0 device and as a zero-size file with overlay.whiteout, the opaque marks "y"
// and "x", redirects, in the trusted. and the user. namespace; symlinks to them) is read alike by
// KindAt and KindFD, by Sums (a checkpoint's list of entries), by CopyDir and by Merge (what they
// make of it in the layer they write).
func TestEveryReaderReadsEveryForm(t *testing.T) {
	forms := overlayforms.All()
	layer, project := t.TempDir(), t.TempDir()
	if err := overlayforms.Write(layer, project, forms); err != nil {
		t.Fatal(err)
	}
	src, pfd := openDir(t, layer), openDir(t, project)

	sums, err := Sums(src)
	if err != nil {
		t.Fatal(err)
	}
	summed := map[string]string{}
	names := map[byte]string{'f': "file", 'l': "symlink", 'd': "directory", 'o': "opaque directory", 'w': "whiteout", 'n': "other"}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 4)
		p, err := strconv.Unquote(fields[3])
		if err != nil {
			t.Fatalf("sums line %q: %v", sc.Text(), err)
		}
		summed[p] = names[fields[0][0]]
	}

	copied := t.TempDir()
	cfd := openDir(t, copied)
	if err := CopyDir(src, cfd); err != nil {
		t.Fatal(err)
	}
	staging := t.TempDir()
	sfd := openDir(t, staging)
	if err := Merge(src, sfd, pfd); err != nil {
		t.Fatal(err)
	}

	for _, f := range forms {
		views := map[string]string{
			"KindAt": kindIn(t, src, f.Path),
			"Sums":   summed[f.Path],
			"a copy": kindIn(t, cfd, f.Path),
			"merged": kindIn(t, sfd, f.Path),
		}
		if f.IsDir() {
			fd, err := unix.Openat(src, f.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			views["KindFD"] = KindFD(fd, nil).String()
			unix.Close(fd)
		}
		for reader, got := range views {
			if got != f.Kind {
				t.Errorf("%s (%s): %s reads %q, want %q", f.Name, f.Path, reader, got, f.Kind)
			}
		}
	}
}

// kindIn is the kind of the entry name of dir, or "missing".
func kindIn(t *testing.T, dir int, name string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "missing"
	}
	return KindAt(dir, name, &st).String()
}
