package layers

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A checkpoint of many small files costs what it copies (SPEC §9: its cost is most of a run that
// changes many files): the copy's buffer is taken once, not once a file, and the files' checksums
// are taken from the bytes as they are written, the same as reading the checkpoint back would
// give, for every size a file's blocks can take (empty, under a block, a block and a byte, all
// zeros, beyond the buffer, sparse).
func TestDeltaCostFollowsTheCopy(t *testing.T) {
	upper, dst := t.TempDir(), t.TempDir()
	const files = 400
	for i := 0; i < files; i++ {
		dir := filepath.Join(upper, fmt.Sprintf("d%d", i%8))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte(fmt.Sprintf("line %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shapes := map[string][]byte{
		"empty": nil, "small": []byte("x"), "block": bytes.Repeat([]byte("b"), 4096),
		"block+1": bytes.Repeat([]byte("c"), 4097), "zeros": make([]byte, 10000),
		"zeros+tail": append(make([]byte, 8192), 'z'), "large": bytes.Repeat([]byte("0123456789"), 40000),
	}
	for name, data := range shapes {
		if err := os.WriteFile(filepath.Join(upper, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(upper, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("end"), 5<<20)
	f.Close()

	tr := NewTracker()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	paths, err := tr.WriteDelta(openDir(t, upper), openDir(t, dst))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if want := files + 8 + len(shapes) + 1; len(paths) != want {
		t.Fatalf("the delta holds %d paths, want %d", len(paths), want)
	}
	// 256 KiB a file would be 100 MiB here; under the race detector a quarter of them, 25 MiB,
	// comes on top (see raceEnabled).
	bound := uint64(16 << 20)
	if raceEnabled {
		bound += files / 4 * copyBufSize
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
		t.Errorf("a checkpoint of %d small files allocated %d MiB, bound %d MiB", files, alloc>>20, bound>>20)
	}
	if diff := readTree(t, upper).diff(readTree(t, dst)); diff != "" {
		t.Fatalf("the delta is not the layer:\n%s", diff)
	}
	known, err := tr.LayerSums(openDir(t, dst))
	if err != nil {
		t.Fatal(err)
	}
	read, err := Sums(openDir(t, dst))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(known, read) {
		t.Errorf("the sums taken as the delta was written differ from the delta read back:\n%s\nread back:\n%s", known, read)
	}
	if len(tr.sums) < files {
		t.Errorf("%d files were summed as written, want at least %d", len(tr.sums), files)
	}
}
