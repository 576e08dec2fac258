package main

import (
	"strings"
	"testing"
)

// compare --take keeps one session's version of each path named: the other session stages it as
// a step of its own, after which the two agree there; the session taken from is unchanged; a path
// it did not change, or a --take naming neither session, is refused with one line.
func TestCompareTake(t *testing.T) {
	c, project, a, b := compareFixture(t)
	before := c.must(project, "diff", "--session", "codex", "--stat")
	out, errs, code := c.run(project, "compare", "claude", "codex", "--take", "codex", "differ.txt", "sub", "b-only.txt")
	if code != 0 {
		t.Fatalf("compare --take: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "took 3 paths from codex") || !strings.Contains(out, "shadow review --session claude") {
		t.Errorf("compare --take said %q", out)
	}
	stat := c.must(project, "compare", a.ID(), b.ID(), "--stat")
	agree := map[string]bool{}
	for _, l := range strings.Split(stat, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(l, "both, same") {
			agree[f[0]] = true
		}
	}
	for _, p := range []string{"differ.txt", "sub/x.txt", "b-only.txt"} {
		if !agree[p] {
			t.Errorf("after the take %s does not agree:\n%s", p, stat)
		}
	}
	if got := c.must(project, "diff", "--session", "codex", "--stat"); got != before {
		t.Errorf("the session taken from changed:\n%s\nwas\n%s", got, before)
	}
	if log := c.must(project, "log", "--session", "claude"); !strings.Contains(log, "take") || !strings.Contains(log, "from codex") {
		t.Errorf("claude's log does not name the take:\n%s", log)
	}
	for _, args := range [][]string{
		{"compare", "claude", "codex", "--take", "codex", "keep.txt"},
		{"compare", "claude", "codex", "--take", "gemini", "differ.txt"},
		{"compare", "claude", "codex", "--take", "codex"},
	} {
		out, errs, code := c.run(project, args...)
		if code == 0 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, out %q, err %q; want one line and a failure", args, code, out, errs)
		}
	}
}

// compare --take --hunks takes only the hunks named of one file's diff from the receiving
// session's version to the other's.
func TestCompareTakeHunks(t *testing.T) {
	c, project, _, _ := compareFixture(t)
	// differ.txt: claude "1\nA's line\n3\n", codex "1\nB's line\n3\n": one hunk.
	if _, errs, code := c.run(project, "compare", "claude", "codex", "--take", "codex", "--hunks", "2", "differ.txt"); code == 0 || !strings.Contains(errs, "1 hunk") {
		t.Errorf("a hunk the diff lacks: exit %d, %q", code, errs)
	}
	if _, errs, code := c.run(project, "compare", "claude", "codex", "--take", "codex", "--hunks", "1", "differ.txt", "same.txt"); code != 2 || !strings.Contains(errs, "one PATH") {
		t.Errorf("--hunks with two paths: exit %d, %q", code, errs)
	}
	out, errs, code := c.run(project, "compare", "claude", "codex", "--take", "codex", "--hunks", "1", "differ.txt")
	if code != 0 || !strings.Contains(out, "took 1 path from codex") {
		t.Fatalf("compare --take --hunks: exit %d\n%s%s", code, out, errs)
	}
	if stat := c.must(project, "compare", "claude", "codex", "--stat", "differ.txt"); !strings.Contains(stat, "both, same") {
		t.Errorf("after taking codex's only hunk of differ.txt:\n%s", stat)
	}
}
