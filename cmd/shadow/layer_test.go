package main

import (
	"strings"
	"testing"
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
