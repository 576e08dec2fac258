package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoReusesBuild: `make demo` runs the demo on bin/shadow (and bin/shadow-init beside it) as
// they are when no source is newer,
// and otherwise (stale or missing) first says what the build does and how long a first one takes,
// then builds. make -n shows what it would run without running it.
func TestDemoReusesBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed (apt-get install make)")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	plan := func(bin string) string {
		t.Helper()
		out, err := exec.Command("make", "-n", "-C", root, "demo", "BIN="+bin).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n demo: %v\n%s", err, out)
		}
		return string(out)
	}
	fresh := filepath.Join(dir, "fresh")
	stale := filepath.Join(dir, "stale")
	// shadow-init of both, fresh: the demo builds it only when it is older than a source.
	freshInit := filepath.Join(dir, "shadow-init")
	for _, p := range []string{fresh, stale, freshInit} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	later, long := time.Now().Add(time.Hour), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(fresh, later, later)
	os.Chtimes(freshInit, later, later)
	os.Chtimes(stale, long, long)

	if out := plan(fresh); strings.Contains(out, "go build") || strings.Contains(out, "building") || !strings.Contains(out, "run-demo.sh "+fresh) {
		t.Errorf("an up-to-date binary is built again, or not used:\n%s", out)
	}
	for _, bin := range []string{stale, filepath.Join(dir, "missing")} {
		out := plan(bin)
		say := strings.Index(out, "building "+bin+" (a first build takes 1–7 minutes: cgo and ~280 packages")
		build := strings.Index(out, "build -trimpath")
		if say < 0 || build < 0 || say > build || !strings.Contains(out, "run-demo.sh "+bin) {
			t.Errorf("%s: want the line saying what the build does, then the build, then the demo:\n%s", filepath.Base(bin), out)
		}
	}
}
