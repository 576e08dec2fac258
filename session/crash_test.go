package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
)

// TestMain lets the test binary act as the applying process of TestApplyKilledAnywhere.
func TestMain(m *testing.M) {
	// Killing a process loses no page cache, so tests skip the fsyncs (SHADOW_TEST_DURABLE=1 keeps
	// them); the order of the steps, which is what a kill can interrupt, is the same.
	statefile.Durable = os.Getenv("SHADOW_TEST_DURABLE") != ""
	if os.Getenv("SHADOW_TEST_APPLY_CHILD") != "" {
		os.Exit(applyChild())
	}
	if os.Getenv("SHADOW_TEST_RUN_CHILD") != "" {
		os.Exit(runEndChild())
	}
	os.Exit(m.Run())
}

// applyChild applies every change of the project's open session; with SHADOW_TEST_KILL_AT=n it
// SIGKILLs itself at the n-th step of the apply.
func applyChild() int {
	killAt, _ := strconv.Atoi(os.Getenv("SHADOW_TEST_KILL_AT"))
	// Half the trials keep the prior files by copying them, as where the state directory is on
	// another filesystem than the project.
	apply.LinkPriors = os.Getenv("SHADOW_TEST_COPY_PRIORS") == ""
	steps := 0
	apply.ApplyStep = func(string) {
		steps++
		if steps == killAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Second)
		}
	}
	st, err := Open(os.Getenv("SHADOW_TEST_STATE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lk, err := st.LockProject(os.Getenv("SHADOW_TEST_PROJECT"), store.LockOptions{Wait: true, Command: "apply"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := lk.Current()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := s.Apply(apply.ApplyOptions{All: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestApplyKilledAnywhere kills an applying process (SIGKILL) at every step of the apply in turn
// and after random delays, and checks that the next command leaves the project byte-identical to
// before or after the apply, and says which.
func TestApplyKilledAnywhere(t *testing.T) {
	trials := 120
	if testing.Short() {
		trials = 30
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var pre, post, rolledBack, completed int
	fullRun := 50 * time.Millisecond
	for trial := range trials {
		big := strings.Repeat("0123456789abcdef", 4096)
		f := newFixture(t, map[string]file{
			"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n", Mode: 0o600}, "c/d.txt": {Data: "d\n"},
			"gone.txt": {Data: "gone\n"}, "old.txt": {Data: "renamed content\n"}, "big.bin": {Data: big},
			"lnk": {Link: "a.txt"}, "dir2file/x": {Data: "x\n"},
			"wiped/p.txt": {Data: "p\n"}, "wiped/sub/q.txt": {Data: "q\n"},
		})
		if err := os.Chmod(filepath.Join(f.project, "wiped", "sub"), 0o750); err != nil {
			t.Fatal(err)
		}
		f.stage(t, map[string]file{
			"a.txt": {Data: "A\n"}, "b.txt": {Data: "B\n", Mode: 0o755}, "c/d.txt": {Data: "D\n"},
			"new/deep/e.txt": {Data: "e\n"}, "moved/old.txt": {Data: "renamed content\n"},
			"big.bin": {Data: big + "tail"}, "lnk": {Link: "b.txt"}, "dir2file": {Data: "file now\n"},
		})
		f.whiteout(t, "gone.txt")
		f.whiteout(t, "old.txt")
		f.whiteout(t, "wiped") // a whole directory deleted: the apply removes it, a rollback makes it again
		f.run(t)
		before, beforeDirs := snapshot(t, f.project), dirModes(t, f.project)
		after := mergedView(t, f.project, f.s.UpperDir())
		f.lock.Release()

		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), "SHADOW_TEST_APPLY_CHILD=1", "SHADOW_TEST_STATE="+f.store.Root, "SHADOW_TEST_PROJECT="+f.project)
		if (trial/2)%2 == 1 {
			cmd.Env = append(cmd.Env, "SHADOW_TEST_COPY_PRIORS=1")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		byStep := trial%2 == 0
		if byStep {
			// Every step of the apply in turn (it has about 30), then past its end.
			cmd.Env = append(cmd.Env, "SHADOW_TEST_KILL_AT="+strconv.Itoa(1+(trial/2)%34))
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !byStep {
			// Kill somewhere within the time a whole apply took in earlier trials.
			time.Sleep(time.Duration(rng.Int64N(int64(fullRun)*5/4 + 1)))
			cmd.Process.Kill()
		}
		werr := cmd.Wait()
		if werr == nil && time.Since(start) > fullRun {
			fullRun = time.Since(start)
		}
		finished := werr == nil

		lk, err := f.store.LockProject(f.project, store.LockOptions{Wait: true})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		got, gotDirs := snapshot(t, f.project), dirModes(t, f.project)
		isPre, isPost := diffSnapshots(got, before) == "", diffSnapshots(got, after) == ""
		if isPre && !isPost {
			if d := diffSnapshots(gotDirs, beforeDirs); d != "" {
				t.Fatalf("trial %d: files as before, but not the directories (recovery %q):\n%s", trial, lk.Recovered, d)
			}
		}
		if _, ok := gotDirs["wiped"]; isPost && ok {
			t.Fatalf("trial %d: applied, but the directory the agent deleted is still there (recovery %q)", trial, lk.Recovered)
		}
		switch {
		case !isPre && !isPost:
			t.Fatalf("trial %d: project half-applied after recovery %q (child: %v %s):\nvs before:\n%s\nvs after:\n%s",
				trial, lk.Recovered, werr, stderr.String(), diffSnapshots(got, before), diffSnapshots(got, after))
		case finished && !isPost:
			t.Fatalf("trial %d: the apply finished but the project is not applied", trial)
		case strings.Contains(lk.Recovered, "rolled back") && !isPre:
			t.Fatalf("trial %d: recovery says %q but the project is not as before", trial, lk.Recovered)
		case strings.Contains(lk.Recovered, "completed") && !isPost:
			t.Fatalf("trial %d: recovery says %q but the project is not applied", trial, lk.Recovered)
		case !finished && werr != nil && !strings.Contains(werr.Error(), "killed"):
			t.Fatalf("trial %d: child failed: %v %s", trial, werr, stderr.String())
		}
		if strings.Contains(lk.Recovered, "rolled back") {
			rolledBack++
		}
		if strings.Contains(lk.Recovered, "completed") {
			completed++
		}
		// The session is consistent afterwards: what is pending matches what the project holds.
		s, err := f.store.Latest(f.project)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.Changes()
		if err != nil {
			t.Fatalf("trial %d: changes after recovery: %v", trial, err)
		}
		if isPost {
			post++
			if len(cs.Changes) != 0 {
				t.Fatalf("trial %d: applied, but changes still pending: %v", trial, statuses(cs))
			}
		} else {
			pre++
			if len(cs.Changes) == 0 {
				t.Fatalf("trial %d: not applied, but nothing pending", trial)
			}
		}
		lk.Release()
	}
	t.Logf("%d trials: %d left as before, %d applied; recovery rolled back %d and completed %d", trials, pre, post, rolledBack, completed)
	if !testing.Short() && (rolledBack == 0 || completed == 0 || pre == 0 || post == 0) {
		t.Errorf("the kill points never hit both halves of the apply")
	}
}
