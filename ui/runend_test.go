package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/testmnt"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// agentPaths are the two ways the app runs an agent: in its own jail, and through an agent host.
var agentPaths = []struct {
	name  string
	agent func(j *Jail, argv []string) AgentFunc
}{
	{"in the app", JailAgent},
	{"agent host", func(j *Jail, argv []string) AgentFunc { return onPty(j.hostAgent(argv, nil)) }},
}

// stopHost kills, with the test, an agent host left running in s (by a failed step, or by a
// test that ends with its agent still running), and waits until nothing writes the session: the
// host may be ending its run (its state file already gone) and the jail's PID 1 writing the
// run's last checkpoint as the test's temporary directory is removed.
func stopHost(t *testing.T, s *session.Session) {
	t.Cleanup(func() {
		if h, err := agenthost.Find(s); err == nil {
			_ = unix.Kill(h.PID, unix.SIGKILL)
		}
		st, err := session.Open(filepath.Dir(filepath.Dir(s.Dir())))
		if err != nil {
			t.Error(err)
			return
		}
		writer := filepath.Join(s.CheckpointDir(), layers.WriterFile)
		deadline := time.Now().Add(90 * time.Second)
		for {
			if !writerHeld(writer) {
				lk, err := st.LockProject(s.Project(), session.LockOptions{Command: "test cleanup"})
				if err == nil {
					lk.Release()
					return
				}
				if !errors.Is(err, session.ErrBusy) {
					t.Error(err)
					return
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("session %s is still written to 90 s after its agent host was killed", s.ID())
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// writerHeld reports whether a jail's PID 1 holds the lock of the checkpoints it writes (from
// its mount to its exit).
func writerHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// A run that stages nothing ends as `shadow run`'s does, on either path: cheaply, reading nothing
// staged before, with no checkpoint, and the end box says that it staged no change; a run that
// writes does not say so.
func TestAgentRunThatStagesNothing(t *testing.T) {
	for _, path := range agentPaths {
		t.Run(path.name, func(t *testing.T) {
			st, lk, s, project := checkpointSession(t)
			j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
			defer j.Release()
			stopHost(t, s)
			run := func(script string) AgentResult {
				t.Helper()
				app := newAppPty(t)
				e := waitEnd(t, runAgent(path.agent(j, []string{"/bin/sh", "-c", script}), context.Background(), app.tty))
				if e.err != nil || e.res.ExitCode != 0 {
					t.Fatalf("%q ended with %+v", script, e)
				}
				return e.res
			}
			const none = "this run staged no change"
			if res := run("echo 2 >> a.txt"); strings.Contains(strings.Join(res.Notes, "\n"), none) {
				t.Errorf("a run that writes says %q: %q", none, res.Notes)
			}
			cps, _ := j.Session.Checkpoints()
			res := run("cat a.txt")
			if !strings.Contains(strings.Join(res.Notes, "\n"), none) {
				t.Errorf("a run that writes nothing does not say %q: %q", none, res.Notes)
			}
			after, _ := j.Session.Checkpoints()
			if len(after) != len(cps) {
				t.Errorf("a run that writes nothing took a checkpoint: %d before, %d after", len(cps), len(after))
			}
			cs, err := j.Session.Changes()
			if err != nil || len(cs.Changes) != 1 || cs.Changes[0].Path != "a.txt" {
				t.Errorf("the staged changes after it: %+v %v", cs, err)
			}
		})
	}
}

// A run whose writes could not all be staged (the state directory is full) says so in the end
// box on either path, as `shadow run` does: that the session is marked incomplete, or, when even
// that fails, why. The test re-runs itself in a private mount namespace with the state directory
// on a 3 MB tmpfs.
func TestAgentReportsIncompleteStaging(t *testing.T) {
	if !testmnt.Private(t) {
		return
	}
	for _, path := range agentPaths {
		for _, markFails := range []bool{false, true} {
			name := path.name
			if markFails {
				name += ", marking fails"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				state := filepath.Join(dir, "s")
				testmnt.Tmpfs(t, state, "3m")
				project := filepath.Join(dir, "p")
				writeFiles(t, project, map[string]string{"a.txt": "a\n"})
				st, err := session.Open(state)
				if err != nil {
					t.Fatal(err)
				}
				lk, err := st.LockProject(project, session.LockOptions{Command: "test"})
				if err != nil {
					t.Fatal(err)
				}
				s, err := lk.Create()
				if err != nil {
					t.Fatal(err)
				}
				if markFails {
					// The mark is a file of the session's directory: a directory in its place
					// makes it fail.
					if err := os.Mkdir(filepath.Join(s.Dir(), "incomplete"), 0o700); err != nil {
						t.Fatal(err)
					}
				}
				j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
				defer j.Release()
				stopHost(t, s)
				app := newAppPty(t)
				argv := []string{"/bin/sh", "-c", "echo small > s.txt; head -c 8000000 /dev/urandom > big.bin; echo after > z.txt"}
				e := waitEnd(t, runAgent(path.agent(j, argv), context.Background(), app.tty))
				notes := strings.Join(e.res.Notes, "\n")
				if e.res.ExitCode == 0 || !strings.Contains(notes, "not everything the run wrote is staged") {
					t.Fatalf("a run whose staging ran out of space: %+v", e)
				}
				want := "is marked incomplete"
				if markFails {
					want = "mark session " + s.ID() + " incomplete"
				}
				if !strings.Contains(notes, want) {
					t.Errorf("the end box does not say %q:\n%s", want, notes)
				}
			})
		}
	}
}
