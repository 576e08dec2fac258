package layers

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A checkpoint of a tree 1,400 directories deep (a path of 4,200 bytes, past PATH_MAX) is
// written whole, and reaching the parents of its paths in sorted order, as a delta does, looks
// each directory up about once: a lookup of every parent from the root, which made a deep tree
// cost depth*depth opens at every checkpoint, would be 980,000 here.
func TestDeltaOfADeepTree(t *testing.T) {
	const depth = 1400
	upper := t.TempDir()
	cur, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	p := ""
	for range depth {
		if err := unix.Mkdirat(cur, "dd", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(cur, "dd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			t.Fatal(err)
		}
		cur, p = next, joinRel(p, "dd")
		paths = append(paths, p)
		f, err := unix.Openat(cur, "f", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Write(f, []byte("x\n"))
		unix.Close(f)
		paths = append(paths, p+"/f")
	}
	unix.Close(cur)
	src, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(src)

	c := &dirChain{root: src}
	defer c.close()
	sort.Strings(paths)
	for _, p := range paths {
		fd, _, err := c.parent(p)
		if err != nil {
			t.Fatalf("parent of a path %d levels deep: %v", strings.Count(p, "/")+1, err)
		}
		unix.Close(fd)
	}
	if c.opened > 2*depth {
		t.Errorf("reaching the parents of %d paths opened %d directories, want at most %d", len(paths), c.opened, 2*depth)
	}

	dstDir := t.TempDir()
	dst, err := unix.Open(dstDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dst)
	changed, err := NewTracker().WriteDelta(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != len(paths) {
		t.Errorf("the delta holds %d paths, want %d", len(changed), len(paths))
	}
	// The deepest file is in the delta, read a directory at a time.
	d := dst
	for range depth {
		next, err := unix.Openat(d, "dd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if d != dst {
			unix.Close(d)
		}
		if err != nil {
			t.Fatal(err)
		}
		d = next
	}
	defer unix.Close(d)
	b, err := os.ReadFile(filepath.Join("/proc/self/fd", strconv.Itoa(d), "f"))
	if err != nil || string(b) != "x\n" {
		t.Errorf("the deepest file in the delta: %q, %v", b, err)
	}
}

// A tree deeper than the descriptors the process may hold is checkpointed all the same: the
// walk of the layer, the copy and the checksums hold what their chains keep, not one descriptor
// per level (a walk that did failed with EMFILE, and the run's last checkpoint with it, losing
// its work).
func TestDeltaPastTheDescriptorLimit(t *testing.T) {
	const depth, limit = 600, 256
	upper, dstDir := t.TempDir(), t.TempDir()
	cur, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(cur, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(cur, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	f, err := unix.Openat(cur, "f", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(f)
	unix.Close(cur)
	src, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(src)
	dst, err := unix.Open(dstDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dst)

	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = limit
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	changed, err := NewTracker().WriteDelta(src, dst)
	var sums []byte
	var damaged []string
	if err == nil {
		// The checksums a checkpoint records, and their check, walk the layer too.
		if sums, err = Sums(dst); err == nil {
			damaged, err = Damaged(dst, sums)
		}
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("a checkpoint of a tree %d deep with %d descriptors: %v", depth, limit, err)
	}
	if n := bytes.Count(sums, []byte("\n")); n != depth+1 || len(damaged) != 0 {
		t.Errorf("the checksums list %d entries (want %d), %d damaged", n, depth+1, len(damaged))
	}
	if len(changed) != depth+1 {
		t.Errorf("the delta holds %d paths, want %d", len(changed), depth+1)
	}
}
