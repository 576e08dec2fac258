package projectfs

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// WalkAt visits every entry of a tree far deeper than the descriptors it holds (a path past
// PATH_MAX), each once and after its parent, and holds at most WalkHeld directories open
// however deep it is.
func TestWalkAtDeepTree(t *testing.T) {
	const depth = 1500 // "d/" each: 3,000 bytes of directories, then the files' names
	root := t.TempDir()
	cur, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	p := ""
	for range depth {
		for _, name := range []string{"d", strings.Repeat("f", 200)} {
			if name == "d" {
				err = unix.Mkdirat(cur, name, 0o755)
			} else {
				var fd int
				if fd, err = unix.Openat(cur, name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err == nil {
					unix.Close(fd)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			want[RelJoin(p, name)] = true
		}
		next, err := unix.Openat(cur, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			t.Fatal(err)
		}
		cur, p = next, RelJoin(p, "d")
	}
	unix.Close(cur)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	openFDs := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	before, most := openFDs(), 0
	seen := map[string]bool{}
	err = WalkAt(fd, "", func(rel string, _ int, _ string, _ *unix.Stat_t) error {
		if seen[rel] {
			t.Errorf("%d levels down: visited twice", strings.Count(rel, "/"))
		}
		if parent := FilepathDir(rel); parent != "" && !seen[parent] {
			t.Errorf("%d levels down: visited before its directory", strings.Count(rel, "/"))
		}
		seen[rel] = true
		if len(seen)%100 == 0 {
			most = max(most, openFDs()-before)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk of a tree %d deep: %v", depth, err)
	}
	if len(seen) != len(want) {
		t.Errorf("visited %d entries, want %d", len(seen), len(want))
	}
	if most > walkHeld+4 {
		t.Errorf("the walk held %d descriptors, want at most %d", most, walkHeld+4)
	}
}
