package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runClosedStdout runs shadow with a standard output whose reading end is already closed, as
// `shadow … | head -0` leaves it once head has gone: every write to it fails.
func (c *cli) runClosedStdout(dir string, args ...string) (string, int) {
	c.t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		c.t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = dir
	cmd.Env = c.env
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("shadow %v: %v", args, err)
	}
	return errb.String(), code
}

// Every command that changes the project or the session finishes its work when its output is
// closed under it: the apply is committed, the rollback, revert and discard are whole, and the
// exit status is the work's, not SIGPIPE's 141.
func TestClosedOutputCutsNoWorkShort(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	git(t, p, "config", "user.name", "Dev")
	git(t, p, "config", "user.email", "dev@example.com")
	base := strings.TrimSpace(git(t, p, "rev-parse", "HEAD"))
	c.must(p, "run", "--", "sh", "-c", "echo agent > a.txt && echo new > b.txt")

	if errs, code := c.runClosedStdout(p, "apply", "--all", "--yes", "--commit", "-m", "agent work"); code != 0 {
		t.Fatalf("apply --commit with stdout closed: exit %d: %s", code, errs)
	}
	if got := git(t, p, "log", "-1", "--format=%s"); got != "agent work\n" {
		t.Fatalf("HEAD after apply --commit with stdout closed: %q", got)
	}
	if got := readFile(t, p+"/a.txt"); got != "agent\n" {
		t.Fatalf("a.txt = %q", got)
	}

	if errs, code := c.runClosedStdout(p, "apply", "--rollback", "--yes"); code != 0 {
		t.Fatalf("rollback with stdout closed: exit %d: %s", code, errs)
	}
	if got := strings.TrimSpace(git(t, p, "rev-parse", "HEAD")); got != base {
		t.Fatalf("rollback left HEAD at %s, want %s", got, base)
	}
	if _, err := os.Stat(p + "/b.txt"); !os.IsNotExist(err) {
		t.Fatalf("b.txt after rollback: %v", err)
	}

	c.must(p, "run", "--", "sh", "-c", "echo one > c.txt")
	c.must(p, "run", "--", "sh", "-c", "echo two > d.txt")
	if errs, code := c.runClosedStdout(p, "revert", "--to", "c1", "--yes"); code != 0 {
		t.Fatalf("revert with stdout closed: exit %d: %s", code, errs)
	}
	if out := c.must(p, "diff", "--name-only"); strings.Contains(out, "d.txt") {
		t.Fatalf("d.txt still staged after the revert:\n%s", out)
	}

	if errs, code := c.runClosedStdout(p, "discard", "--yes"); code != 0 {
		t.Fatalf("discard with stdout closed: exit %d: %s", code, errs)
	}
	if out := c.must(p, "sessions"); !strings.Contains(out, "discarded") {
		t.Fatalf("the session is not discarded:\n%s", out)
	}
}
