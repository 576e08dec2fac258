package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOverlayCheckpoints: a write followed by quiet, a requested checkpoint and the run's end each
// write a checkpoint holding that step alone; a step with no change writes none; the last one
// is recorded as merged into the staging layer.
func TestOverlayCheckpoints(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Checkpoints = filepath.Join(j.base, "state", "checkpoints")
	p.NextCheckpoint = 4
	p.QuietCheckpoint = time.Second
	req := make(chan string, 1)
	p.CheckpointRequests = req
	var mu sync.Mutex
	var got []Checkpoint
	p.Checkpointed = func(c Checkpoint) {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
		if c.Trigger == CheckpointQuiet {
			req <- CheckpointManual
		}
	}
	// A quiet checkpoint after a.txt and del.txt; then m.txt, taken by a second quiet one or the
	// end; the end takes z.txt.
	script := `echo one > a.txt; rm del.txt; sleep 3.2; echo m > m.txt; sleep 1.2; echo z > z.txt`
	res, out, errOut := j.run(t, p, "/bin/sh", "-c", script)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s%s", res.ExitCode, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	var summary []string
	seen := map[string]string{}
	for _, c := range got {
		summary = append(summary, c.ID+" "+c.Trigger+" "+strings.Join(c.Paths, ","))
		for _, p := range c.Paths {
			if seen[p] != "" {
				t.Errorf("%s is in %s and %s", p, seen[p], c.ID)
			}
			seen[p] = c.ID
		}
	}
	// The quiet checkpoint after a.txt comes first, the end's last with z.txt; m.txt is in a
	// second quiet one or in the end's, as the timing of a loaded machine has it. The manual one,
	// asked right after the quiet one, finds nothing new and writes nothing.
	if len(got) < 2 || got[0].ID != "c4" || got[0].Trigger != CheckpointQuiet ||
		seen["a.txt"] != "c4" || seen["del.txt"] != "c4" ||
		got[len(got)-1].Trigger != CheckpointRunEnd || seen["z.txt"] != got[len(got)-1].ID ||
		seen["m.txt"] == "" || len(seen) != 4 {
		t.Fatalf("checkpoints %q", summary)
	}
	for i, c := range got {
		if c.N != 4+i {
			t.Errorf("checkpoint %d is %s, want c%d", i, c.ID, 4+i)
		}
	}
	last := got[len(got)-1]
	for _, c := range got {
		var meta Checkpoint
		b, err := os.ReadFile(filepath.Join(p.Checkpoints, c.ID, "meta.json"))
		if err != nil || json.Unmarshal(b, &meta) != nil || meta.ID != c.ID || !slices.Equal(meta.Argv, []string{"/bin/sh", "-c", script}) {
			t.Errorf("%s/meta.json: %s, %v", c.ID, b, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(p.Checkpoints, layerOf("c4"), "a.txt")); err != nil || string(b) != "one\n" {
		t.Errorf("c4's layer holds a.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(p.Checkpoints, layerOf("c4"), "z.txt")); err == nil {
		t.Errorf("c4's layer holds z.txt, written after it")
	}
	if b, _ := os.ReadFile(filepath.Join(p.Checkpoints, MergedFile)); strings.TrimSpace(string(b)) != strings.TrimPrefix(last.ID, "c") {
		t.Errorf("merged = %q, want %s", b, last.ID)
	}
	for _, f := range []string{"a.txt", "m.txt", "z.txt"} {
		if _, err := os.Stat(filepath.Join(j.upper, f)); err != nil {
			t.Errorf("%s not in the staging layer: %v", f, err)
		}
	}
	entries, _ := os.ReadDir(p.Checkpoints)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// layerOf is the layer directory of checkpoint id, in the checkpoint directory.
func layerOf(id string) string { return filepath.Join(id, "layer") }

// TestOverlayQuietAfterFirstWrite: a command that writes as soon as it starts and then stays quiet
// gets a quiet checkpoint: the layer is measured from before it started.
func TestOverlayQuietAfterFirstWrite(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Checkpoints = filepath.Join(j.base, "state", "checkpoints")
	p.QuietCheckpoint = time.Second
	var mu sync.Mutex
	var got []string
	p.Checkpointed = func(c Checkpoint) {
		mu.Lock()
		got = append(got, c.Trigger+" "+strings.Join(c.Paths, ","))
		mu.Unlock()
	}
	if res, out, errOut := j.run(t, p, "/bin/sh", "-c", "echo x > now.txt; sleep 3.5"); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s%s", res.ExitCode, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != CheckpointQuiet+" now.txt" {
		t.Errorf("checkpoints %q, want a quiet one of now.txt first", got)
	}
}
