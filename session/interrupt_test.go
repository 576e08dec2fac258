package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/store"
)

// interruptFixture is a session whose apply writes 40 new files in gen/, modifies a.txt and
// deletes two files: its steps are "journal", "delete 0", "delete 1", "temp N" (41 of them),
// "temps", "rename N" (41), "renamed", "done", "committed".
func interruptFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "gone1.txt": {Data: "gone 1\n"}, "gone2.txt": {Data: "gone 2\n"}})
	staged := map[string]file{"a.txt": {Data: "A\n"}}
	for i := range 40 {
		staged[fmt.Sprintf("gen/f%02d", i)] = file{Data: strconv.Itoa(i) + "\n"}
	}
	f.stage(t, staged)
	f.whiteout(t, "gone1.txt")
	f.whiteout(t, "gone2.txt")
	f.run(t)
	return f
}

// leftovers counts the apply's temp files in the project.
func leftovers(t *testing.T, project string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(project, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".shadow-apply-") {
			n++
		}
		return nil
	})
	return n
}

// TestApplyInterrupted cancels an apply (as Ctrl+C does) at each phase: before it replaces project
// files it is undone, and the counts of what was undone are those of what it had done; once it
// renames, it is finished.
func TestApplyInterrupted(t *testing.T) {
	for _, c := range []struct {
		at       string // the step after which the context is cancelled: its name, or its prefix and how many
		n        int
		finished bool
	}{
		{"journal", 0, false},
		{"delete ", 1, false},
		{"temp ", 8, false},
		{"temps", 0, false},
		{"rename ", 1, true},
	} {
		t.Run(fmt.Sprintf("%s%d", c.at, c.n), func(t *testing.T) {
			f := interruptFixture(t)
			before := snapshot(t, f.project)
			after := mergedView(t, f.project, f.s.UpperDir())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			deletes, temps, seen := 0, 0, 0
			apply.ApplyStep = func(step string) {
				switch {
				case strings.HasPrefix(step, "delete "):
					deletes++
				case strings.HasPrefix(step, "temp "):
					temps++
				}
				if c.n == 0 && step == c.at {
					cancel()
				}
				if c.n > 0 && strings.HasPrefix(step, c.at) {
					if seen++; seen == c.n {
						cancel()
					}
				}
			}
			defer func() { apply.ApplyStep = nil }()
			res, err := f.s.ApplyContext(ctx, apply.ApplyOptions{All: true})
			got := snapshot(t, f.project)
			if c.finished {
				if err != nil || !res.Interrupted {
					t.Fatalf("interrupted while renaming: res %+v, err %v; want it finished and marked interrupted", res, err)
				}
				if d := diffSnapshots(got, after); d != "" {
					t.Fatalf("finished apply is not the agent's tree:\n%s", d)
				}
				return
			}
			var ie *apply.InterruptedError
			if !errors.As(err, &ie) {
				t.Fatalf("interrupted after %q: err %v, want an *InterruptedError", c.at, err)
			}
			if d := diffSnapshots(got, before); d != "" {
				t.Fatalf("interrupted after %q: the project is not as before:\n%s", c.at, d)
			}
			if want := (apply.Undone{Restored: deletes, Removed: temps}); ie.Undone != want {
				t.Errorf("interrupted after %q: undone %+v, but the apply had deleted %d and written %d temp files (%s)", c.at, ie.Undone, deletes, temps, ie)
			}
			if !strings.Contains(ie.Error(), "the project is as it was before it") {
				t.Errorf("message does not say where the project is: %s", ie)
			}
			// Nothing is left to recover, and everything is still pending.
			if cs := f.changes(t); len(cs.Changes) != 43 {
				t.Errorf("%d changes pending after the undone apply, want 43", len(cs.Changes))
			}
			if msg, err := f.lock.recover(); msg != "" || err != nil {
				t.Errorf("recovery after an undone apply: %q, %v", msg, err)
			}
		})
	}
}

// TestRecoveryCountsTruly kills an applying process while it writes its temp files and while it
// renames them, and checks that the next command's message counts what it really undid: the
// temp files it found, and the project paths it put back.
func TestRecoveryCountsTruly(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Step 1 is "journal", 2-3 the deletions, 4-44 the temp files, 45 "temps", 46- the renames.
	for _, killAt := range []int{20, 60} {
		t.Run(strconv.Itoa(killAt), func(t *testing.T) {
			f := interruptFixture(t)
			before := snapshot(t, f.project)
			f.lock.Release()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), "SHADOW_TEST_APPLY_CHILD=1", "SHADOW_TEST_STATE="+f.store.Root,
				"SHADOW_TEST_PROJECT="+f.project, "SHADOW_TEST_KILL_AT="+strconv.Itoa(killAt))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("the applying process was not killed: %v %s", err, stderr.String())
			}
			temps := leftovers(t, f.project)
			// Paths that differ from before: the deletions made and the files renamed into place.
			changed := 0
			now := snapshot(t, f.project)
			for p, v := range before {
				if now[p] != v {
					changed++
				}
			}
			for p := range now {
				if _, ok := before[p]; !ok && !strings.Contains(p, ".shadow-apply-") {
					changed++
				}
			}
			if temps+changed == 0 {
				t.Fatalf("killed at step %d, the apply had done nothing to count", killAt)
			}
			lk, err := f.store.LockProject(f.project, store.LockOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Release()
			want := fmt.Sprintf("%s restored", plural(changed, "path"))
			if temps > 0 {
				want += fmt.Sprintf(", %s removed", plural(temps, "unfinished file"))
			}
			if !strings.Contains(lk.Recovered, "rolled back") || !strings.Contains(lk.Recovered, want) {
				t.Errorf("killed with %d temp files and %d paths changed; recovery says %q, want %q", temps, changed, lk.Recovered, want)
			}
			if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
				t.Errorf("the project is not as before after recovery:\n%s", d)
			}
		})
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
