package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/layers"
)

// quietRun is a `shadow run` whose command waits on its input between steps: the test lets each
// step go on once `shadow log`, run beside it, shows what it waited for.
type quietRun struct {
	c      *cli
	p      string
	feed   io.WriteCloser
	stderr *syncWriter
	done   chan struct{} // closed when shadow ended, with err
	err    error
}

// syncWriter is a buffer the command's output and the test share.
type syncWriter struct {
	ch chan struct{}
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.ch <- struct{}{}
	defer func() { <-w.ch }()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.ch <- struct{}{}
	defer func() { <-w.ch }()
	return w.b.String()
}

func startQuietRun(t *testing.T, c *cli, p, script string, flags ...string) *quietRun {
	t.Helper()
	// --wait: a `shadow log` of the test may be looking at the session as the run starts.
	args := append(append([]string{"run", "--wait"}, flags...), "--", "sh", "-c", script)
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = p, c.env
	feed, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &quietRun{c: c, p: p, feed: feed, stderr: &syncWriter{ch: make(chan struct{}, 1)}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		feed.Close()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			cmd.Process.Signal(os.Interrupt)
			<-r.done
		}
	})
	return r
}

// wait ends the command's input and waits for shadow to end.
func (r *quietRun) wait() error {
	r.feed.Close()
	<-r.done
	return r.err
}

// quietLines are the lines of `shadow log` of quiet checkpoints.
func (r *quietRun) quietLines() []string {
	out, _, _ := r.c.run(r.p, "log")
	var quiet []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "  quiet  ") {
			quiet = append(quiet, l)
		}
	}
	return quiet
}

// waitFor polls until ok says yes, for at most 30 s.
func waitFor(ok func() bool) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

// `shadow run` takes a quiet checkpoint after every step of writes followed by quiet, while the
// command runs, as `shadow log` shows from outside it: a new file, a rewrite of it with as many
// bytes, a rename onto it, a truncate and write. The same PID 1 takes the checkpoints of
// `shadow tui`'s agent.
func TestRunQuietCheckpoints(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	steps := []string{
		"printf one > n.txt",
		"printf two > n.txt",
		"printf six > t.tmp && mv t.tmp n.txt",
		": > n.txt; printf ten >> n.txt",
	}
	var script strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&script, "%s || exit 1; read go || exit 2\n", s)
	}
	r := startQuietRun(t, c, p, script.String())
	for i, s := range steps {
		if !waitFor(func() bool { return len(r.quietLines()) > i }) {
			t.Fatalf("step %d (%s): shadow log shows %q, no quiet checkpoint of it within 30s\n%s", i+1, s, r.quietLines(), r.stderr)
		}
		fmt.Fprintln(r.feed)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("shadow run: %v\n%s", err, r.stderr)
	}
	if got := c.must(p, "diff", "--checkpoint", "4", "--name-only"); got != "n.txt\n" {
		t.Errorf("diff --checkpoint 4 = %q", got)
	}
}

// A run that writes 4 MiB, waits for its quiet checkpoint, deletes it and writes again keeps the
// session's checkpoints within their budget, the default (4 × --max-upper-bytes) and one set by
// --checkpoint-budget alike: quiet checkpoints stop, the run says so on stderr, and the staged
// tree is the last step's.
func TestRunCheckpointBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string
		budget int64
	}{
		{"default", nil, 4 * 5 << 20},
		{"flag", []string{"--checkpoint-budget", "12M"}, 12 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			p := fixture(t, map[string]string{"a.txt": "1\n"})
			const steps = 7
			script := fmt.Sprintf(`for i in $(seq %d); do
  rm -f big; head -c 4194304 /dev/urandom > big && sha256sum big > big.sum || exit 1
  read go || exit 2
done`, steps)
			r := startQuietRun(t, c, p, script, append([]string{"--max-upper-bytes", "5M"}, tc.flags...)...)
			const stopped = "no more quiet checkpoints"
			for i := range steps {
				if !waitFor(func() bool { return len(r.quietLines()) > i || strings.Contains(r.stderr.String(), stopped) }) {
					t.Fatalf("step %d: neither a quiet checkpoint nor %q within 30s: %q\n%s", i+1, stopped, r.quietLines(), r.stderr)
				}
				fmt.Fprintln(r.feed)
			}
			if err := r.wait(); err != nil {
				t.Fatalf("shadow run: %v\n%s", err, r.stderr)
			}
			if n := len(r.quietLines()); n == 0 || !strings.Contains(r.stderr.String(), stopped) {
				t.Errorf("%d quiet checkpoints, stderr %q: want some, then the budget's note", n, r.stderr)
			}
			dirs, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "checkpoints"))
			if len(dirs) != 1 {
				t.Fatalf("checkpoint directories: %q", dirs)
			}
			d, err := os.Open(dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if used := layers.Measure(int(d.Fd())).Bytes; used > tc.budget {
				t.Errorf("the checkpoints use %d bytes, past their budget of %d", used, tc.budget)
			}
			sum := c.must(p, "diff", "big.sum")
			want := ""
			for _, l := range strings.Split(sum, "\n") {
				if f := strings.Fields(strings.TrimPrefix(l, "+")); strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") && len(f) > 0 {
					want = f[0]
				}
			}
			// The staged big is the one big.sum names: apply both and check.
			c.must(p, "apply", "--all", "--yes")
			check := exec.Command("sha256sum", "big")
			check.Dir = p
			out, err := check.Output()
			if err != nil || want == "" || !strings.HasPrefix(string(out), want) {
				t.Errorf("big after apply: %s %v, big.sum: %s", out, err, sum)
			}
		})
	}
}
