package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOverlayAcrossRuns: each run writes into a layer of its own, merged into the staging layer
// when it ends; deletions, replaced directories, renames and mode changes made over several runs
// leave the jail's view, and the staging layer, what one run making them all would.
func TestOverlayAcrossRuns(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	writeFiles(t, j.project, map[string]string{"keep/k.txt": "k\n", "gone/g.txt": "g\n"})
	steps := []string{
		// 1: edit, delete, add, replace a directory, chmod.
		`echo edited >> a.txt; rm del.txt; mkdir -p new/sub; echo n > new/sub/n.txt; rm -r repl; mkdir repl; echo y > repl/y; chmod 0600 mode.txt`,
		// 2: bring a deleted file back, delete what run 1 added, delete a project directory,
		//    rename a file into a new place, edit again.
		`echo back > del.txt; rm -r new; rm -r gone; mv mv/src.txt moved.txt; echo again >> a.txt`,
		// 3: a directory where a file was deleted, a file where a directory was replaced.
		`rm -r repl; echo file > repl; rm keep/k.txt; mkdir -p del2; echo d > del2/d`,
	}
	for i, s := range steps {
		if res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c", "set -e; "+s); res.ExitCode != 0 {
			t.Fatalf("run %d: exit %d: %s%s", i+1, res.ExitCode, out, errOut)
		}
	}
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c",
		`find . -path ./.git -prune -o -print | LC_ALL=C sort | while read -r p; do if [ -f "$p" ]; then printf '%s %s %s\n' "$p" "$(stat -c %a "$p")" "$(cat "$p" | tr '\n' '|')"; else printf '%s\n' "$p"; fi; done`)
	if res.ExitCode != 0 {
		t.Fatalf("list: exit %d: %s%s", res.ExitCode, out, errOut)
	}
	want := strings.Join([]string{
		".",
		"./a.txt 644 a|edited|again|",
		"./del.txt 644 back|",
		"./del2",
		"./del2/d 644 d|",
		"./keep",
		"./mode.txt 600 mode|",
		"./moved.txt 644 moved|",
		"./mv",
		"./repl 644 file|",
	}, "\n") + "\n"
	if out != want {
		t.Errorf("the jail's view after three runs:\n%s\nwant\n%s", out, want)
	}
	// The staging layer holds whiteouts only where they hide a project path.
	whiteout := func(rel string) bool {
		fi, err := os.Lstat(filepath.Join(j.upper, rel))
		if err != nil {
			return false
		}
		st := fi.Sys().(*syscall.Stat_t)
		return fi.Mode()&os.ModeCharDevice != 0 && st.Rdev == 0
	}
	for _, rel := range []string{"gone", "mv/src.txt", "keep/k.txt"} {
		if !whiteout(rel) {
			t.Errorf("%s: no whiteout in the staging layer", rel)
		}
	}
	for _, rel := range []string{"new", "del.txt", "repl"} {
		if whiteout(rel) {
			t.Errorf("%s: a whiteout in the staging layer where a file should be, or nothing", rel)
		}
	}
	if _, err := os.Lstat(filepath.Join(j.upper, "new")); err == nil {
		t.Errorf("new: run 1 added it, run 2 deleted it, yet the staging layer has it")
	}
}

// TestOverlayLayerOnDisk: where tmpfs keeps no user.* attributes (Linux before 6.6), the run's
// layer is a directory on disk: runs stage the same, and a layer past its size stops the run.
func TestOverlayLayerOnDisk(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	onDisk := func() setup {
		p := j.policy()
		p.layerOnDisk = true
		return p
	}
	for i, s := range []string{
		`rm -r repl; mkdir repl; echo y > repl/y; rm del.txt; echo e >> a.txt`,
		`rm -r repl; echo file > repl`,
	} {
		if res, out, errOut := j.run(t, onDisk(), "/bin/sh", "-c", "set -e; "+s); res.ExitCode != 0 {
			t.Fatalf("run %d: exit %d: %s%s", i+1, res.ExitCode, out, errOut)
		}
	}
	res, out, _ := j.run(t, onDisk(), "/bin/sh", "-c", `cat a.txt repl; test -e del.txt || echo gone`)
	if res.ExitCode != 0 || out != "a\ne\nfile\ngone\n" {
		t.Errorf("after two runs on disk: %q", out)
	}
	if _, err := os.Stat(j.upper + ".run/upper"); err == nil {
		t.Errorf("the run's layer on disk was not emptied after the merge")
	}
	p := onDisk()
	p.MaxUpperBytes = 1 << 20
	p.Checkpoints = filepath.Join(j.base, "checkpoints")
	res, _, _ = j.run(t, p, "/bin/sh", "-c", `head -c 8000000 /dev/zero > big; sleep 300`)
	// Ended well before the sleep: the full layer stopped the command (a busy machine
	// stretches the jail's start, hence the wide bound).
	if !res.LayerFull || res.Duration > 90*time.Second {
		t.Errorf("a layer on disk past its size: %+v", res)
	}
}
