package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUnchangedRunSyncs: `shadow run -- true` over a session, a run that stages nothing, makes
// one fsync in all (fsync, fdatasync and syncfs, as strace counts them in every process of the
// run, its PID 1 included): the record of the run's start. Its end fsyncs nothing and rewrites
// no record. The first run of a session, which makes it, is not counted; the second and third
// are, the third after a run that ended by its line alone.
func TestUnchangedRunSyncs(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	c.must(p, "run", "--", "true")
	for i := range 2 {
		out := filepath.Join(t.TempDir(), "strace")
		cmd := exec.Command(strace, "-f", "-c", "-o", out, "-e", "trace=fsync,fdatasync,syncfs", c.bin, "run", "--", "true")
		cmd.Dir, cmd.Env = p, c.env
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("strace shadow run -- true: %v\n%s", err, msg)
		}
		summary, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		syncs := 0
		for _, line := range strings.Split(string(summary), "\n") {
			// % time, seconds, usecs/call, calls, [errors,] syscall
			f := strings.Fields(line)
			if len(f) < 5 || f[len(f)-1] == "total" {
				continue
			}
			switch f[len(f)-1] {
			case "fsync", "fdatasync", "syncfs":
				n, err := strconv.Atoi(f[3])
				if err != nil {
					t.Fatalf("strace's summary: %q", line)
				}
				syncs += n
			}
		}
		if syncs > 1 {
			t.Errorf("run %d: an unchanged `shadow run -- true` made %d syncs, want 1 (its start's record):\n%s", i+2, syncs, summary)
		}
	}
	// The runs are recorded, and none is still running.
	if got := c.must(p, "sessions", "--json"); !strings.Contains(got, `"runs": 3,`) || !strings.Contains(got, `"running": false,`) {
		t.Errorf("shadow sessions after three runs:\n%s", got)
	}
}
