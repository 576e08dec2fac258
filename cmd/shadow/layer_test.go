package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run that fills its staging layer says so in its summary, and what fit is staged.
func TestRunSaysStagingLayerFull(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	out, errs, code := c.run(p, "run", "--max-upper-bytes", "1M", "--", "sh", "-c",
		`echo fits > small.txt; head -c 5000000 /dev/zero > big.bin || echo write-failed`)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "write-failed") {
		t.Errorf("the 5 MB write past a 1 MiB layer did not fail in the jail: %q", out)
	}
	if !strings.Contains(errs, "staging layer is full") || !strings.Contains(errs, "--max-upper-bytes") {
		t.Errorf("the summary does not say the layer filled up:\n%s", errs)
	}
	if names := c.must(p, "diff", "--name-only"); !strings.Contains(names, "small.txt") {
		t.Errorf("what fit is not staged: %q", names)
	}
}

// A run that stages nothing says so, and reads nothing staged before: the session's change set
// stays what it was.
func TestRunThatStagesNothing(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 >> a.txt")
	_, errs, code := c.run(p, "run", "--", "cat", "a.txt")
	if code != 0 || !strings.Contains(errs, "this run staged no change") {
		t.Errorf("run that writes nothing: exit %d: %s", code, errs)
	}
	if got := c.must(p, "diff", "--name-only"); got != "a.txt\n" {
		t.Errorf("staged after it: %q", got)
	}
	if _, errs, _ := c.run(p, "run", "--", "sh", "-c", "echo 3 >> a.txt"); strings.Contains(errs, "staged no change") {
		t.Errorf("a run that writes says it staged nothing: %s", errs)
	}
}

// While a run goes, the pre-images of what it stages are taken from its own layer: a host edit
// made after the agent wrote the file has a known base, so the two changes merge.
func TestPrecaptureWatchesTheRunsLayer(t *testing.T) {
	c := newCLI(t)
	lines := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"
	p := fixture(t, map[string]string{"a.txt": lines})
	marks := t.TempDir()
	script := `echo agent >> a.txt; touch ` + marks + `/wrote; while [ ! -e ` + marks + `/go ]; do sleep 0.05; done`
	done, finished := make(chan string, 1), make(chan struct{})
	// However the test ends, the agent is let go and its run waited for.
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(marks, "go"), nil, 0o644)
		select {
		case <-finished:
		case <-time.After(time.Minute):
		}
	})
	go func() {
		defer close(finished)
		_, errs, code := c.run(p, "run", "--rw", marks, "--", "sh", "-c", script)
		done <- fmt.Sprintf("exit %d: %s", code, errs)
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(marks, "wrote")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not write")
		}
	}
	// The host edit comes once the precapture has taken a.txt's pre-image: a small file's bytes
	// are read before the pack that receives them is made, and while the session's first run goes
	// only the precapture makes a pack.
	for deadline := time.Now().Add(60 * time.Second); !precaptured(c.state); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the precapture never took a.txt's pre-image")
		}
	}
	if err := os.WriteFile(filepath.Join(p, "a.txt"), []byte("ONE\n"+strings.TrimPrefix(lines, "one\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(marks, "go"), nil, 0o644)
	if r := <-done; !strings.HasPrefix(r, "exit 0") {
		t.Fatal(r)
	}
	c.must(p, "apply", "--all", "--yes")
	if got := readFile(t, filepath.Join(p, "a.txt")); got != "ONE\n"+strings.TrimPrefix(lines, "one\n")+"agent\n" {
		t.Errorf("a.txt after the apply:\n%s\nwant the host's edit and the agent's line", got)
	}
}

// precaptured reports whether a session under state has a pack of pre-images in its base/.
func precaptured(state string) bool {
	packs, _ := filepath.Glob(filepath.Join(state, "shadow", "sessions", "*", "base", "pack-*"))
	return len(packs) > 0
}
