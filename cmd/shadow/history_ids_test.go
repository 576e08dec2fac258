package main

import (
	"strings"
	"testing"
)

// Every option that takes a checkpoint takes its id (c1) and its number alone (1), as log lists
// them; revert's message counts what it dropped in words that agree with the count; a rename is
// one file of its step in log.
func TestCheckpointIDForms(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n2\n3\n", "old.txt": "moved\n"})
	for _, step := range []string{
		`sed -i s/1/one/ a.txt`,
		`sed -i s/2/two/ a.txt && mv old.txt new.txt`,
		`sed -i s/3/three/ a.txt`,
	} {
		c.must(p, "run", "--", "sh", "-c", step)
	}
	log := strings.Split(strings.TrimSpace(c.must(p, "log")), "\n")
	if len(log) != 3 || !strings.Contains(log[1], " 2 files ") || !strings.Contains(log[1], "+1 -1") {
		t.Errorf("log: a step that edited a.txt and renamed old.txt is not 2 files, +1 -1:\n%s", strings.Join(log, "\n"))
	}
	for _, args := range [][]string{
		{"diff", "--checkpoint", "2", "--name-only", "a.txt"},
		{"diff", "--since", "1", "--name-only", "a.txt"},
	} {
		if out, errs, code := c.run(p, args...); code != 0 || out != "a.txt\n" {
			t.Errorf("shadow %s: exit %d, %q %s", strings.Join(args, " "), code, out, errs)
		}
	}
	for _, id := range []string{"0", "4", "x1", "c"} {
		if _, errs, code := c.run(p, "diff", "--checkpoint", id); code == 0 || !strings.Contains(errs, "no checkpoint") {
			t.Errorf("diff --checkpoint %s: exit %d: %s", id, code, errs)
		}
	}
	for _, tc := range []struct{ to, want string }{
		{"2", "reverted to c2: dropped 1 checkpoint (c3); `shadow revert --undo` puts it back until the next run\n"},
		{"1", "reverted to c1: dropped 2 checkpoints (c2, c3); `shadow revert --undo` puts them back until the next run\n"},
	} {
		if got := c.must(p, "revert", "--to", tc.to, "--yes"); got != tc.want {
			t.Errorf("revert --to %s:\n got %q\nwant %q", tc.to, got, tc.want)
		}
		c.must(p, "revert", "--undo")
	}
}
