package main

import (
	"strings"
	"testing"
)

// `shadow apply --all --yes --commit` commits what the run staged; `shadow export --branch`
// makes a branch of it from the session's base commit; the flags that go together are checked.
func TestApplyCommitAndExportCLI(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	git(t, p, "config", "user.name", "Dev")
	git(t, p, "config", "user.email", "dev@example.com")
	base := strings.TrimSpace(git(t, p, "rev-parse", "HEAD"))
	c.must(p, "run", "--", "sh", "-c", "echo agent > a.txt && echo new > b.txt")

	if _, errs, code := c.run(p, "apply", "--all", "--yes", "-m", "x"); code != 2 || !strings.Contains(errs, "-m goes with --commit") {
		t.Fatalf("-m without --commit: exit %d: %s", code, errs)
	}
	for _, bad := range [][]string{{"--rollback", "--commit"}, {"--rollback", "-m", "x"}} {
		if _, errs, code := c.run(p, append([]string{"apply"}, bad...)...); code != 2 || !strings.Contains(errs, "--rollback takes only") {
			t.Errorf("apply %v: exit %d: %s", bad, code, errs)
		}
	}
	out := c.must(p, "export", "--branch", "agent-work")
	if !strings.Contains(out, "exported 2 paths as branch agent-work") {
		t.Fatalf("export: %s", out)
	}
	if got := git(t, p, "diff", "--name-only", base, "agent-work"); got != "a.txt\nb.txt\n" {
		t.Fatalf("the branch changes %q", got)
	}
	if _, errs, code := c.run(p, "export", "--branch", "agent-work"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("export to an existing branch: exit %d: %s", code, errs)
	}
	out = c.must(p, "apply", "--all", "--yes", "--commit")
	if !strings.Contains(out, "committed as ") {
		t.Fatalf("apply --commit: %s", out)
	}
	if got := git(t, p, "show", "--name-only", "--format=%s", "HEAD"); got != "shadow: apply the agent's changes to 2 paths\n\na.txt\nb.txt\n" {
		t.Fatalf("the commit: %q", got)
	}
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after apply --commit:\n%s", st)
	}
	c.must(p, "apply", "--rollback", "--yes")
	if got := strings.TrimSpace(git(t, p, "rev-parse", "HEAD")); got != base {
		t.Fatalf("rollback left HEAD at %s, want %s", got, base)
	}
}
