package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manyFiles is the number of files the interrupted applies below write: enough that an apply
// takes some tens of milliseconds, so that a signal sent once it has begun arrives before it ends.
const manyFiles = 2000

// stageMany runs an agent that writes manyFiles new files under gen/.
func stageMany(t *testing.T, c *cli, p string) {
	t.Helper()
	c.must(p, "run", "--", "sh", "-c", fmt.Sprintf("mkdir gen && cd gen && seq %d | split -l 1 -a 4", manyFiles))
}

// startApply starts `shadow apply --all --yes` and returns once it has begun writing into the
// project (gen/ holds a file): the apply's journal is written and its temp files are being made.
func startApply(t *testing.T, c *cli, p string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(c.bin, "apply", "--all", "--yes")
	cmd.Dir, cmd.Env = p, c.env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if d, err := os.Open(filepath.Join(p, "gen")); err == nil {
			names, _ := d.Readdirnames(1)
			d.Close()
			if len(names) > 0 {
				return cmd, &errb
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the apply never began: %s", errb.String())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// applied counts the apply's temp files in gen/ and the files it put in place.
func applied(t *testing.T, p string) (temps, placed int) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(p, "gen"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".shadow-apply-") {
			temps++
		} else {
			placed++
		}
	}
	return temps, placed
}

func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Ctrl+C during an apply: the apply is undone (or, once it replaces files, finished) before shadow
// exits, and one line says which, with true counts.
func TestApplyInterruptedBySignal(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	stageMany(t, c, p)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, errb := startApply(t, c, p)
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 128+int(sig) {
			t.Fatalf("%v: %v, want exit %d\n%s", sig, err, 128+int(sig), errb.String())
		}
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		last := lines[len(lines)-1]
		temps, placed := applied(t, p)
		switch {
		case strings.Contains(last, "interrupted, and undone: "):
			if temps+placed != 0 {
				t.Fatalf("%v: the apply says it was undone, but gen/ holds %d temp files and %d files", sig, temps, placed)
			}
			// However many temporary files it had made when the signal came: one, or many.
			if !regexp.MustCompile(`(1 unfinished file|\d+ unfinished files) removed; the project is as it was before it`).MatchString(last) {
				t.Errorf("%v: the undo does not count the files it removed: %s", sig, last)
			}
		case strings.Contains(last, "was finished first"):
			if temps != 0 || placed != manyFiles {
				t.Fatalf("%v: the apply says it was finished, but gen/ holds %d temp files and %d files", sig, temps, placed)
			}
			c.must(p, "apply", "--rollback", "--yes")
		default:
			t.Fatalf("%v: the last line does not say how the apply ended: %q", sig, last)
		}
		if !strings.HasPrefix(last, "shadow: "+signalName(sig)) {
			t.Errorf("%v: the line does not name the signal: %s", sig, last)
		}
		// Nothing is left for the next command to recover.
		if _, errs, _ := c.run(p, "diff", "--stat"); strings.Contains(errs, "interrupted") {
			t.Errorf("%v: the next command still recovered something: %s", sig, errs)
		}
	}
}

// A killed apply (SIGKILL: nothing can catch it) is recovered by whichever command comes next,
// which says what it did with true counts.
func TestKilledApplyRecoveredByEveryCommand(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	stageMany(t, c, p)
	for _, args := range [][]string{
		{"sessions"},
		{"doctor"},
		{"verify"},
		{"review"}, // without a terminal: refused, after the recovery
		{"diff", "--stat"},
		{"run", "--", "true"},
		{"apply", "--all", "--yes"},
		{"discard", "--yes"}, // last: the session is gone after it
	} {
		t.Run(args[0], func(t *testing.T) {
			cmd, _ := startApply(t, c, p)
			cmd.Process.Kill()
			cmd.Wait()
			temps, placed := applied(t, p)
			_, errs, _ := c.run(p, args...)
			counts := counted(placed, "path") + " restored"
			if temps > 0 {
				counts += ", " + counted(temps, "unfinished file") + " removed"
			}
			want := regexp.MustCompile(`(?m)^shadow: rolled back the interrupted apply \S+ \(session \S+\): ` +
				regexp.QuoteMeta(counts) + `; the project is as it was before it$`)
			if !want.MatchString(errs) {
				t.Fatalf("killed with %d temp files and %d files in place; shadow %s says:\n%s\nwant a line matching %s", temps, placed, args[0], errs, want)
			}
			if args[0] != "apply" {
				if _, err := os.Lstat(filepath.Join(p, "gen")); !os.IsNotExist(err) {
					t.Errorf("gen/ is still in the project after the recovery (%v)", err)
				}
			} else {
				c.must(p, "apply", "--rollback", "--yes")
			}
		})
	}
}

// Garbage in the project's session index hides no session: diff shows the open one and run
// continues it; there is never a second open session.
func TestCorruptSessionIndex(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 > a.txt")
	indexes, _ := filepath.Glob(filepath.Join(c.state, "shadow", "locks", "*.sessions"))
	if len(indexes) != 1 {
		t.Fatalf("session indexes: %v", indexes)
	}
	if err := os.WriteFile(indexes[0], []byte("\x00\x9f garbage \x1b[2J\nnot an id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.must(p, "diff", "--stat"); !strings.Contains(out, "a.txt") {
		t.Errorf("diff with a corrupt index does not show the open session's change:\n%s", out)
	}
	c.must(p, "run", "--", "sh", "-c", "echo 3 > b.txt")
	var list []struct {
		ID    string `json:"id"`
		Runs  int    `json:"runs"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(c.must(p, "sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Runs != 2 || list[0].State != "open" {
		t.Errorf("after a run with a corrupt index, sessions: %+v; want the one session, continued", list)
	}
	if out := c.must(p, "diff", "--stat"); !strings.Contains(out, "a.txt") || !strings.Contains(out, "b.txt") {
		t.Errorf("the continued session does not hold both runs' changes:\n%s", out)
	}
}
