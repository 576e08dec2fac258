package main

import (
	"path/filepath"
	"testing"
)

// `cd p1/src && shadow run -- sh -c pwd` starts the command in p1/src; from outside the project
// (with --project) it starts at the project's root.
func TestRunStartsInWorkingDirectory(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"src/main.go": "package main\n"})
	src := filepath.Join(p, "src")
	if out := c.must(src, "run", "--", "sh", "-c", `pwd; echo "$PWD"`); out != src+"\n"+src+"\n" {
		t.Errorf("run in %s printed %q", src, out)
	}
	if out := c.must(t.TempDir(), "run", "--project", p, "--", "pwd"); out != p+"\n" {
		t.Errorf("run from outside the project printed %q, want %q", out, p)
	}
}
