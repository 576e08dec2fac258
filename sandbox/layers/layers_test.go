package layers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The property tests run inside a user and mount namespace of their own (unshare -Urm), where
// the test binary mounts real userxattr overlays: the kernel's overlay is the reference for what a
// layer means.
const inNamespace = "SHADOW_LAYERS_NS"

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// inOwnNamespace re-runs test name of this binary under `unshare -Urm` and reports its output;
// it returns false in the child, which then runs the test's body.
func inOwnNamespace(t *testing.T) bool {
	if os.Getenv(inNamespace) == t.Name() {
		return false
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	cmd := exec.Command("unshare", "-Urm", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), inNamespace+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in its own namespace: %v\n%s", err, out)
	}
	return true
}

// tree is a directory's content as the test compares it: path → "d MODE", "f MODE content" or
// "l target".
type tree map[string]string

func readTree(t *testing.T, root string) tree {
	t.Helper()
	out := tree{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		switch {
		case fi.IsDir():
			out[rel] = fmt.Sprintf("d %o", fi.Mode().Perm())
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "l " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("f %o %s", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (a tree) diff(b tree) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var d []string
	for _, k := range keys {
		if a[k] != b[k] {
			d = append(d, fmt.Sprintf("%s: %q != %q", k, a[k], b[k]))
		}
	}
	return strings.Join(d, "\n")
}

func mountOverlay(t *testing.T, dir, opts string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("overlay", dir, "overlay", 0, opts+",userxattr"); err != nil {
		t.Fatalf("mount overlay %s on %s: %v", opts, dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

func openDir(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// editor makes random edits through an overlay mount: the shapes that make whiteouts, opaque
// directories, copy-ups, mode changes and renames.
type editor struct {
	r    *rand.Rand
	root string
	n    int
}

func (e *editor) pick(dirs bool) string {
	var all []string
	filepath.Walk(e.root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == e.root {
			return nil
		}
		if fi.IsDir() == dirs {
			all = append(all, p)
		}
		return nil
	})
	if len(all) == 0 {
		return ""
	}
	return all[e.r.IntN(len(all))]
}

func (e *editor) edit() {
	e.n++
	switch e.r.IntN(8) {
	case 0: // add a file
		dir := e.root
		if d := e.pick(true); d != "" && e.r.IntN(2) == 0 {
			dir = d
		}
		os.WriteFile(filepath.Join(dir, "n"+strconv.Itoa(e.n)), []byte("new "+strconv.Itoa(e.n)+"\n"), 0o644)
	case 1: // append to a file
		if f := e.pick(false); f != "" {
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0); err == nil {
				fmt.Fprintf(fh, "edit %d\n", e.n)
				fh.Close()
			}
		}
	case 2: // delete a file
		if f := e.pick(false); f != "" {
			os.Remove(f)
		}
	case 3: // delete a directory
		if d := e.pick(true); d != "" {
			os.RemoveAll(d)
		}
	case 4: // replace a directory with a new one of the same name
		if d := e.pick(true); d != "" {
			os.RemoveAll(d)
			os.Mkdir(d, 0o755)
			os.WriteFile(filepath.Join(d, "r"+strconv.Itoa(e.n)), []byte("replaced\n"), 0o644)
		}
	case 5: // chmod
		if f := e.pick(false); f != "" {
			os.Chmod(f, []os.FileMode{0o600, 0o755, 0o644}[e.r.IntN(3)])
		}
	case 6: // rename a file
		if f := e.pick(false); f != "" {
			os.Rename(f, filepath.Join(e.root, "mv"+strconv.Itoa(e.n)))
		}
	case 7: // a new directory, or a symlink
		if e.r.IntN(2) == 0 {
			d := filepath.Join(e.root, "d"+strconv.Itoa(e.n))
			os.Mkdir(d, 0o755)
			os.WriteFile(filepath.Join(d, "x"), []byte("x\n"), 0o644)
		} else {
			os.Symlink("target"+strconv.Itoa(e.n), filepath.Join(e.root, "l"+strconv.Itoa(e.n)))
		}
	}
}

func writeProject(t *testing.T, dir string) {
	t.Helper()
	for name, content := range map[string]string{
		"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n", "dir/sub/d.txt": "d\n",
		"other/e.txt": "e\n", "other/f.txt": "f\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointsRebuildEveryMoment: random edits through an overlay, a checkpoint after every
// few. Folding the checkpoints 1..k onto an empty staging layer, mounted over the project, shows
// exactly the tree of moment k; and merging the run's whole upper layer gives the last one.
func TestCheckpointsRebuildEveryMoment(t *testing.T) {
	if inOwnNamespace(t) {
		return
	}
	for seed := uint64(1); seed <= 12; seed++ {
		base := t.TempDir()
		project, upper, work, mnt := filepath.Join(base, "p"), filepath.Join(base, "u"), filepath.Join(base, "w"), filepath.Join(base, "m")
		writeProject(t, project)
		for _, d := range []string{upper, work} {
			os.MkdirAll(d, 0o755)
		}
		// The run's overlay: the project under an empty staging layer, as a session's first run.
		mountOverlay(t, mnt, "lowerdir="+project+",upperdir="+upper+",workdir="+work)
		e := &editor{r: rand.New(rand.NewPCG(seed, 7)), root: mnt}
		tr := NewTracker()
		var moments []tree
		var deltas []string
		for k := 0; k < 6; k++ {
			for i := 0; i < 1+e.r.IntN(5); i++ {
				e.edit()
			}
			d := filepath.Join(base, fmt.Sprintf("c%d", k))
			os.Mkdir(d, 0o700)
			dfd := openDir(t, d)
			if _, err := tr.WriteDelta(openDir(t, upper), dfd); err != nil {
				t.Fatalf("seed %d checkpoint %d: %v", seed, k, err)
			}
			tr.Wrote(dfd)
			moments = append(moments, readTree(t, mnt))
			deltas = append(deltas, d)
		}
		for k := range moments {
			staging := filepath.Join(base, fmt.Sprintf("s%d", k))
			os.Mkdir(staging, 0o700)
			for _, d := range deltas[:k+1] {
				if err := Merge(openDir(t, d), openDir(t, staging), openDir(t, project)); err != nil {
					t.Fatalf("seed %d: merge %s: %v", seed, d, err)
				}
			}
			view := filepath.Join(base, fmt.Sprintf("v%d", k))
			mountOverlay(t, view, "lowerdir="+staging+":"+project)
			if got := readTree(t, view); got.diff(moments[k]) != "" {
				t.Fatalf("seed %d: checkpoints 1..%d rebuild a different tree:\n%s", seed, k+1, got.diff(moments[k]))
			}
		}
		// The whole upper layer merged at once: the last moment.
		staging := filepath.Join(base, "all")
		os.Mkdir(staging, 0o700)
		if err := Merge(openDir(t, upper), openDir(t, staging), openDir(t, project)); err != nil {
			t.Fatal(err)
		}
		view := filepath.Join(base, "vall")
		mountOverlay(t, view, "lowerdir="+staging+":"+project)
		if got := readTree(t, view); got.diff(moments[len(moments)-1]) != "" {
			t.Fatalf("seed %d: the merged upper layer differs:\n%s", seed, got.diff(moments[len(moments)-1]))
		}
	}
}

// TestDeltaHoldsOnlyTheStep: a checkpoint with nothing new is empty; one after an edit holds that
// path alone.
func TestDeltaHoldsOnlyTheStep(t *testing.T) {
	if inOwnNamespace(t) {
		return
	}
	base := t.TempDir()
	project, upper, work, mnt := filepath.Join(base, "p"), filepath.Join(base, "u"), filepath.Join(base, "w"), filepath.Join(base, "m")
	writeProject(t, project)
	os.MkdirAll(upper, 0o755)
	os.MkdirAll(work, 0o755)
	mountOverlay(t, mnt, "lowerdir="+project+",upperdir="+upper+",workdir="+work)
	tr := NewTracker()
	step := func(name string) []string {
		d := filepath.Join(base, name)
		os.Mkdir(d, 0o700)
		dfd := openDir(t, d)
		got, err := tr.WriteDelta(openDir(t, upper), dfd)
		if err != nil {
			t.Fatal(err)
		}
		tr.Wrote(dfd)
		return got
	}
	os.WriteFile(filepath.Join(mnt, "a.txt"), []byte("a2\n"), 0o644)
	os.Remove(filepath.Join(mnt, "dir/sub/d.txt"))
	if got := step("c1"); strings.Join(got, ",") != "a.txt,dir,dir/sub,dir/sub/d.txt" && strings.Join(got, ",") != "a.txt,dir/sub/d.txt" {
		t.Errorf("first step: %v", got)
	}
	// Right after the write, its entries are racy: with nothing new, the next step compares them
	// with their copies and holds nothing.
	if got := step("c2"); len(got) != 0 {
		t.Errorf("a step with no change holds %v", got)
	}
	os.WriteFile(filepath.Join(mnt, "b.txt"), []byte("b2\n"), 0o644)
	tr.settle()
	if got := step("c3"); strings.Join(got, ",") != "b.txt" {
		t.Errorf("third step: %v, want b.txt alone", got)
	}
}

// settle clears the racy marks, as a checkpoint taken long after the last write would.
func (t *Tracker) settle() {
	for p, e := range t.seen {
		e.racy = false
		t.seen[p] = e
	}
}
