package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/testmnt"
)

// A revert killed while it builds the new staging layer leaves upper.revert; the next command,
// a reader as well as a writer, removes it and says what it freed, and the staged changes are
// the ones from before the revert.
func TestKilledRevertIsCleanedUp(t *testing.T) {
	for _, unprivileged := range []bool{false, true} {
		name := "root"
		if unprivileged {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) {
			for _, next := range [][]string{{"diff", "--stat"}, {"run", "--", "true"}} {
				t.Run(next[0], func(t *testing.T) { killedRevert(t, unprivileged, next) })
			}
		})
	}
}

func killedRevert(t *testing.T, unprivileged bool, next []string) {
	const files = 5000
	sh := newShadowAs(t, unprivileged)
	proj := sh.project("project", fmt.Sprintf("mkdir d; i=0; while [ $i -lt %d ]; do echo $i > d/f$i; i=$((i+1)); done\n", files))
	for _, argv := range [][]string{{"sh", "w.sh"}, {"sh", "-c", "echo two > two.txt"}} {
		if out, errs, code := sh.run(proj, append([]string{"run", "--"}, argv...)...); code != 0 {
			t.Fatalf("run %v: exit %d\n%s%s", argv, code, out, errs)
		}
	}
	session := filepath.Dir(sh.checkpointDir())
	building := filepath.Join(session, "upper.revert")
	// The revert is killed once it has linked files into the new staging layer; one quicker than
	// the look is undone and tried again.
	killed := false
	for try := 0; try < 20 && !killed; try++ {
		cmd := sh.command(proj, "revert", "--to", "c1", "--yes")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
	look:
		for {
			select {
			case <-done:
				break look
			default:
			}
			if entries, err := os.ReadDir(filepath.Join(building, "d")); err == nil && len(entries) > 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				killed = exists(building)
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		if !killed {
			if out, errs, code := sh.run(proj, "revert", "--undo"); code != 0 {
				t.Fatalf("revert --undo: exit %d\n%s%s", code, out, errs)
			}
		}
	}
	if !killed {
		t.Skip("the revert always ended before it could be killed")
	}
	out, errs, code := sh.run(proj, next...)
	t.Logf("shadow %s after the killed revert: exit %d\n%s%s", strings.Join(next, " "), code, errs, lastLine(out))
	if code != 0 {
		t.Fatalf("shadow %v after a killed revert: exit %d\n%s%s", next, code, out, errs)
	}
	if exists(building) {
		t.Errorf("upper.revert is still there after shadow %v", next)
	}
	if !strings.Contains(errs, "shadow: removed an unfinished revert (") || !strings.Contains(errs, " entries)") {
		t.Errorf("shadow %v does not say it removed the unfinished revert:\n%s", next, errs)
	}
	if next[0] == "diff" && !strings.Contains(out, fmt.Sprintf("%d files changed", files+1)) {
		t.Errorf("the staged changes after a killed revert are not those from before it:\n%s", lastLine(out))
	}
	if _, errs, _ := sh.run(proj, "diff", "--stat"); strings.Contains(errs, "removed") {
		t.Errorf("said again by the command after:\n%s", errs)
	}
}

// A checkpoint that ran out of space leaves c<N>.tmp; the next command removes it and says what
// it freed. The state directory is a 3 MB tmpfs in a private mount namespace, as in
// TestFullStateDisk.
func TestUnfinishedCheckpointIsCleanedUp(t *testing.T) {
	if !testmnt.Private(t) {
		return
	}
	for _, next := range [][]string{{"log"}, {"diff", "--stat"}, {"run", "--", "true"}} {
		t.Run(next[0], func(t *testing.T) {
			c := newCLI(t)
			testmnt.Tmpfs(t, c.state, "3m")
			p := fixture(t, map[string]string{"a.txt": "1\n"})
			_, errs, _ := c.run(p, "run", "--", "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do head -c 1000000 /dev/urandom > big$i.bin; done")
			left, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "checkpoints", "c*.tmp"))
			if len(left) == 0 {
				t.Fatalf("the run that filled the state directory left no unfinished checkpoint:\n%s", errs)
			}
			out, errs, _ := c.run(p, next...)
			t.Logf("shadow %s after the checkpoint that ran out of space:\n%s%s", strings.Join(next, " "), errs, lastLine(out))
			if !strings.Contains(errs, "shadow: removed an unfinished checkpoint "+strings.TrimSuffix(filepath.Base(left[0]), ".tmp")+" (") {
				t.Errorf("shadow %v does not say it removed the unfinished checkpoint:\n%s", next, errs)
			}
			if exists(left[0]) {
				t.Errorf("%s is still there after shadow %v", filepath.Base(left[0]), next)
			}
		})
	}
}
