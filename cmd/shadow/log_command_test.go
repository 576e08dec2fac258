package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A step's command is the one the user gave: `shadow log` shows `codex exec fix`, not the codex
// preset's `-c sandbox_mode=…` arguments it ran with; --json carries both.
func TestLogShowsTheCommandAsGiven(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	bin := t.TempDir()
	codex := filepath.Join(bin, "codex")
	if err := os.WriteFile(codex, []byte("#!/bin/sh\necho \"$@\" > args.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.must(p, "run", "--preset", "codex", "--ro", bin, "--", codex, "exec", "fix it")
	if got := c.must(p, "diff", "--name-only"); got != "args.txt\n" {
		t.Fatalf("staged: %q", got)
	}
	log := c.must(p, "log")
	// The line is cut at 60 columns, past the test directory's long name.
	if !strings.Contains(log, "/codex exec") || strings.Contains(log, " -c ") {
		t.Errorf("log shows the preset's arguments, or not the command given:\n%s", log)
	}
	var steps []struct {
		Argv    []string `json:"argv"`
		Command []string `json:"command"`
	}
	if err := json.Unmarshal([]byte(c.must(p, "log", "--json")), &steps); err != nil || len(steps) != 1 {
		t.Fatalf("log --json: %v %+v", err, steps)
	}
	if want := []string{codex, "exec", "fix it"}; !slices.Equal(steps[0].Command, want) {
		t.Errorf("log --json command = %q, want %q", steps[0].Command, want)
	}
	if a := steps[0].Argv; len(a) < 4 || a[0] != codex || !slices.Contains(a, `sandbox_mode="danger-full-access"`) {
		t.Errorf("log --json argv = %q, want the command run, with the preset's arguments", a)
	}
}
