package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
)

// quietSteps are the writes a quiet checkpoint must notice, each followed by quiet: every kind of
// change to the run's layer, and above all those that leave its tmpfs's block and inode counts as
// they were (a rewrite of a staged file with as many bytes, a rename onto it, a truncate then a
// write, a change of mode, a removal beside a write of the same size). path is what the step's
// checkpoint must hold.
var quietSteps = []struct{ name, script, path string }{
	{"copy up", "printf one > a.txt", "a.txt"},
	{"rewrite, same size", "printf two > a.txt", "a.txt"},
	{"write in place, same size", "printf six | dd of=a.txt conv=notrunc status=none", "a.txt"},
	{"rename onto, same size", "printf ten > t.tmp && mv t.tmp a.txt", "a.txt"},
	{"truncate, then write", ": > a.txt; printf abc >> a.txt", "a.txt"},
	{"chmod", "chmod 600 a.txt", "a.txt"},
	{"new file", "printf 1234 > b.txt", "b.txt"},
	{"remove and write as much", "rm b.txt; printf 5678 > c.txt", "c.txt"},
	{"remove a project file", "rm del.txt", "del.txt"},
}

// TestOverlayQuietEveryWrite: each kind of write, followed by quiet, gets a quiet checkpoint of its
// own while the command still runs. The command waits on its input between steps, and the test
// writes a line once the step's checkpoint came (or the deadline passed).
func TestOverlayQuietEveryWrite(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Checkpoints = filepath.Join(j.base, "state", "checkpoints")
	p.QuietCheckpoint = time.Second
	got := make(chan Checkpoint, 64)
	p.Checkpointed = func(c Checkpoint) { got <- c }
	in, feed := io.Pipe()
	var stdout, stderr bytes.Buffer
	p.Stdin, p.Stdout, p.Stderr = in, &stdout, &stderr
	var script strings.Builder
	for i, s := range quietSteps {
		fmt.Fprintf(&script, "%s || exit 1; read go || exit %d\n", s.script, 10+i)
	}
	done := make(chan Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := runSetup(ctx, p, []string{"/bin/sh", "-c", script.String()})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- res
	}()
	var seen []string
	lines := make(chan struct{}, len(quietSteps))
	go func() {
		defer feed.Close()
		for range lines {
			fmt.Fprintln(feed)
		}
	}()
	var res Result
	ended := false
steps:
	for _, s := range quietSteps {
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case c := <-got:
				seen = append(seen, c.Trigger+" "+strings.Join(c.Paths, ","))
				if c.Trigger == CheckpointQuiet && slices.Contains(c.Paths, s.path) {
					break wait
				}
			case <-deadline:
				t.Errorf("%s (%s): no quiet checkpoint of %s within 20s", s.name, s.script, s.path)
				break wait
			case res = <-done:
				ended = true
				t.Errorf("the command ended at step %s", s.name)
				break steps
			}
		}
		lines <- struct{}{}
	}
	close(lines)
	if !ended {
		res = <-done
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d: %s%s", res.ExitCode, stdout.String(), stderr.String())
	}
	if t.Failed() {
		t.Logf("checkpoints: %q", seen)
	}
}

// syncBuffer is a bytes.Buffer that the jail's host goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOverlayCheckpointBudget: a command that writes 4 MiB, waits for its quiet checkpoint, deletes
// it and writes again, seven times, under a 5 MiB layer, keeps the session's checkpoints within
// their budget (4 × 5 MiB): each step gets its quiet checkpoint until the budget stops them, which
// the run says; the staged tree at the end is the last step's.
func TestOverlayCheckpointBudget(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Checkpoints = filepath.Join(j.base, "state", "checkpoints")
	p.QuietCheckpoint = time.Second
	p.MaxUpperBytes = 5 << 20
	budget := int64(DefaultCheckpointBudget) * p.MaxUpperBytes
	got := make(chan Checkpoint, 64)
	p.Checkpointed = func(c Checkpoint) { got <- c }
	in, feed := io.Pipe()
	var stdout, stderr bytes.Buffer
	var warn syncBuffer
	p.Stdin, p.Stdout, p.Stderr, p.Warnings = in, &stdout, &stderr, &warn
	const steps = 7
	script := fmt.Sprintf(`for i in $(seq %d); do
  rm -f big; head -c 4194304 /dev/urandom > big && sha256sum big > big.sum || exit 1
  read go || exit 2
done`, steps)
	done := make(chan Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := runSetup(ctx, p, []string{"/bin/sh", "-c", script})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- res
	}()
	const stopped = "no more quiet checkpoints"
	lines := make(chan struct{}, steps)
	go func() {
		defer feed.Close()
		for range lines {
			fmt.Fprintln(feed)
		}
	}()
	var seen []string
	quiet := 0
	for step := 1; step <= steps; step++ {
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case c := <-got:
				seen = append(seen, c.ID+" "+c.Trigger+" "+strings.Join(c.Paths, ","))
				if c.Trigger == CheckpointQuiet && slices.Contains(c.Paths, "big") {
					quiet++
					break wait
				}
			case <-time.After(100 * time.Millisecond):
				if strings.Contains(warn.String(), stopped) {
					break wait
				}
			case <-deadline:
				t.Errorf("step %d: neither its quiet checkpoint nor %q within 20s", step, stopped)
				break wait
			}
		}
		lines <- struct{}{}
	}
	close(lines)
	res := <-done
	if res.ExitCode != 0 {
		t.Errorf("exit %d: %s%s", res.ExitCode, stdout.String(), stderr.String())
	}
	if quiet < 2 || !strings.Contains(warn.String(), stopped) || !strings.Contains(warn.String(), "budget") {
		t.Errorf("%d quiet checkpoints, then warnings %q: want some, then the budget's note", quiet, warn.String())
	}
	dir, err := os.Open(p.Checkpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if used := layers.Measure(int(dir.Fd())).Bytes; used > budget {
		t.Errorf("the checkpoints use %d bytes, past their budget of %d", used, budget)
	}
	sum, err := os.ReadFile(filepath.Join(j.upper, "big.sum"))
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command("sha256sum", "-c", "--quiet", "-")
	check.Dir, check.Stdin = j.upper, bytes.NewReader(sum)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("the staged big is not the last step's: %v %s", err, out)
	}
	if t.Failed() {
		t.Logf("checkpoints: %q", seen)
	}
}
