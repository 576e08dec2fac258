package layers

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A file's checksum is its content's, however the file lays it out: a hole and a block of zeros
// count alike, so a sparse terabyte is summed by what it stores, and any byte changed changes it.
func TestFileSumSparse(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int64, at map[int64]string, dense bool) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if dense {
			zeros := make([]byte, 1<<16)
			for off := int64(0); off < size; off += int64(len(zeros)) {
				f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
			}
		}
		for off, s := range at {
			f.WriteAt([]byte(s), off)
		}
		f.Truncate(size)
	}
	sum := func(name string) string {
		t.Helper()
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		s, err := fileSum(fd, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	data := map[int64]string{5: "x", 70000: "yz", 1 << 20: "end"}
	write("sparse", 3<<20, data, false)
	write("dense", 3<<20, data, true)
	if sum("sparse") != sum("dense") {
		t.Error("a sparse file and the same bytes written out sum differently")
	}
	write("changed", 3<<20, map[int64]string{5: "x", 70000: "yZ", 1 << 20: "end"}, false)
	write("longer", 3<<20+1, data, false)
	for _, other := range []string{"changed", "longer"} {
		if sum(other) == sum("sparse") {
			t.Errorf("%s sums like the original", other)
		}
	}
	write("terabyte", 1<<40, map[int64]string{1000000: "x"}, false)
	if sum("terabyte") == "" {
		t.Error("no sum of the terabyte")
	}
}
