package session

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session/store"
)

// runEndChild is the process of a run for TestRunEndLineAlone: it begins a run over the
// project's open session and ends it (EndRunUnchanged, or EndRun with SHADOW_TEST_RUN_CHANGED set),
// then puts back the session.json of the run's start, as a SIGKILL between the end's line and the
// rewrite of session.json leaves it (a run that staged nothing rewrites none). It says "ended"
// and lives on until its stdin closes or it is killed.
func runEndChild() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	st, err := Open(os.Getenv("SHADOW_TEST_STATE"))
	if err != nil {
		return fail(err)
	}
	lk, err := st.LockProject(os.Getenv("SHADOW_TEST_PROJECT"), store.LockOptions{Wait: true, Command: "run"})
	if err != nil {
		return fail(err)
	}
	s, err := lk.Current()
	if err != nil {
		return fail(err)
	}
	if err := s.BeginRun([]string{"agent"}); err != nil {
		return fail(err)
	}
	meta := filepath.Join(s.dir, "session.json")
	started, err := os.ReadFile(meta)
	if err != nil {
		return fail(err)
	}
	if os.Getenv("SHADOW_TEST_RUN_CHANGED") != "" {
		err = s.EndRun(0)
	} else {
		err = s.EndRunUnchanged(0)
	}
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(meta, started, 0o600); err != nil {
		return fail(err)
	}
	lk.Release()
	fmt.Println("ended")
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// TestRunEndLineAlone: a run whose end is recorded by its line in runs.jsonl alone, session.json
// still naming it active, reads as ended to every reader of the session (the session, its list
// row, its runs, the next run's start and end), whether the run's process lives on (the app runs
// one command after another) or was SIGKILLed right after the line; for a run that staged nothing
// (whose end writes only that line) and for one that staged a change (killed before its rewrite).
// An end's line that the kill cut short, or that lost its line feed alone, is read as runs.jsonl
// reads it: cut, the run is interrupted (exit -1), closed by the next run's start; whole, ended.
func TestRunEndLineAlone(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		changed, killed bool
		cut             int // bytes cut off the end of runs.jsonl once the run's process is gone
	}
	var cases []tc
	for _, changed := range []bool{false, true} {
		cases = append(cases, tc{changed, false, 0}, tc{changed, true, 0}, tc{changed, true, 1}, tc{changed, true, 2})
	}
	for _, c := range cases {
		changed, killed := c.changed, c.killed
		name := fmt.Sprintf("changed=%v,killed=%v,cut=%d", changed, killed, c.cut)
		f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
		if changed {
			f.stage(t, map[string]file{"a.txt": {Data: "A\n"}})
		}
		f.lock.Release()
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), "SHADOW_TEST_RUN_CHILD=1", "SHADOW_TEST_STATE="+f.store.Root, "SHADOW_TEST_PROJECT="+f.project)
		if changed {
			cmd.Env = append(cmd.Env, "SHADOW_TEST_RUN_CHANGED=1")
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if line != "ended\n" {
			stdin.Close()
			cmd.Wait()
			t.Fatalf("%s: the run's process: %q %s", name, line, stderr.String())
		}
		if killed {
			cmd.Process.Kill()
			cmd.Wait()
			runsPath := filepath.Join(f.s.Dir(), runsFile)
			data, err := os.ReadFile(runsPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(runsPath, data[:len(data)-c.cut], 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		}

		s, err := f.store.Get(f.s.ID())
		if err != nil {
			t.Fatal(err)
		}
		// Only a cut end leaves the run recorded as active, with its process gone.
		if ended := c.cut < 2; (s.Meta.Active != nil) == ended || s.RunActive() {
			t.Errorf("%s: the ended run reads as active (%+v, running %v)", name, s.Meta.Active, s.RunActive())
		}
		infos, err := f.store.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || infos[0].Running || infos[0].Runs != 1 || infos[0].Error != "" {
			t.Errorf("%s: sessions lists %+v, want 1 run, not running", name, infos)
		}
		lk, err := f.store.LockProject(f.project, store.LockOptions{Command: "test"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, err := lk.Current()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.BeginRun([]string{"next"}); err != nil {
			t.Errorf("%s: the next run: %v", name, err)
		} else if err := w.EndRunUnchanged(0); err != nil {
			t.Errorf("%s: the next run's end: %v", name, err)
		}
		runs, err := w.Runs()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, fmt.Sprintf("%s %d", r.Argv[0], r.ExitCode))
		}
		want := "agent 0, next 0"
		if c.cut >= 2 {
			want = "agent -1, next 0"
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("%s: runs %q, want %q", name, got, want)
		}
		cs, err := w.Changes()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 0, true: 1}[changed]; len(cs.Changes) != want {
			t.Errorf("%s: %d changes, want %d", name, len(cs.Changes), want)
		}
		lk.Release()
	}
}
