package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitT runs git in dir for a test, failing it on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(dir, nil, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// gitFixture is a session over a git repository with one commit of files, whose agent changed
// a.txt and added new.txt (a run recorded), and whose developer has staged a change of their own.
func gitFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	writeTree(t, project, map[string]file{"a.txt": {Data: "a\n"}, "mine.txt": {Data: "mine\n"}, "gone.txt": {Data: "gone\n"},
		".github/ci.yml": {Data: "on: push\n"}, "bin/run": {Data: "#!/bin/sh\n", Mode: 0o755}})
	gitT(t, project, "init", "-q", "-b", "main")
	gitT(t, project, "config", "user.name", "Dev")
	gitT(t, project, "config", "user.email", "dev@example.com")
	gitT(t, project, "add", "-A")
	gitT(t, project, "commit", "-q", "-m", "base")
	f := sessionOver(t, filepath.Join(dir, "state"), project)
	f.stage(t, map[string]file{"a.txt": {Data: "a by the agent\n"}, "new.txt": {Data: "new\n"}})
	f.whiteout(t, "gone.txt")
	if err := f.s.BeginRun([]string{"aider", "--yes", "fix it"}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	// The developer's own staged change, which the apply's commit must leave staged.
	writeTree(t, f.project, map[string]file{"mine.txt": {Data: "mine, staged\n"}})
	gitT(t, f.project, "add", "mine.txt")
	return f
}

func applyCommit(t *testing.T, f *fixture, msg string) (*ApplyResult, string) {
	t.Helper()
	if err := f.s.CheckCommit(); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Apply(ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	commit, err := f.s.CommitApply(res, msg)
	if err != nil {
		t.Fatal(err)
	}
	return res, commit
}

// The commit holds exactly the applied paths; the developer's staged change stays staged (and out
// of the commit); the message names the session, the run and the command.
func TestCommitApplyDirtyIndex(t *testing.T) {
	f := gitFixture(t)
	res, commit := applyCommit(t, f, "")
	if head := gitT(t, f.project, "rev-parse", "HEAD"); head != commit {
		t.Fatalf("HEAD %s, commit %s", head, commit)
	}
	if got := gitT(t, f.project, "diff-tree", "--no-commit-id", "--name-status", "-r", "HEAD"); got != "M\ta.txt\nD\tgone.txt\nA\tnew.txt" {
		t.Fatalf("the commit changes:\n%s", got)
	}
	if got := gitT(t, f.project, "diff", "--cached", "--name-only"); got != "mine.txt" {
		t.Fatalf("staged after the commit: %q, want only the developer's mine.txt", got)
	}
	if got := gitT(t, f.project, "status", "--porcelain"); got != "M  mine.txt" {
		t.Fatalf("git status after the commit:\n%s", got)
	}
	msg := gitT(t, f.project, "log", "-1", "--format=%B")
	for _, want := range []string{f.s.ID(), res.ID, "aider --yes 'fix it'", "run 1", "exit 0"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the message lacks %q:\n%s", want, msg)
		}
	}
	// Rolled back while it is HEAD: files, HEAD and the index are as before the apply.
	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatal(err)
	}
	if head := gitT(t, f.project, "rev-parse", "HEAD"); head == commit {
		t.Fatal("the rollback left the apply's commit at HEAD")
	}
	if got := gitT(t, f.project, "status", "--porcelain"); got != "M  mine.txt" {
		t.Fatalf("git status after the rollback:\n%s", got)
	}
}

// Once the commit is not HEAD, the rollback is refused with the reason, and nothing changes.
func TestCommitRollbackRefusedWhenNotHead(t *testing.T) {
	f := gitFixture(t)
	_, commit := applyCommit(t, f, "my message")
	if msg := gitT(t, f.project, "log", "-1", "--format=%B"); msg != "my message" {
		t.Fatalf("-m message: %q", msg)
	}
	gitT(t, f.project, "commit", "-q", "-m", "the developer's next commit")
	before := snapshot(t, f.project)
	_, err := f.lock.Rollback("")
	if err == nil || !strings.Contains(err.Error(), "no longer HEAD") || !strings.Contains(err.Error(), commit[:12]) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("rollback of a commit that is not HEAD: %v", err)
	}
	if d := diffSnapshots(before, snapshot(t, f.project)); d != "" {
		t.Fatalf("a refused rollback changed the project:\n%s", d)
	}
}

// On a detached HEAD the commit goes on HEAD itself, no branch moves, and a rollback undoes it.
func TestCommitApplyDetachedHead(t *testing.T) {
	f := gitFixture(t)
	base := gitT(t, f.project, "rev-parse", "HEAD")
	gitT(t, f.project, "checkout", "-q", "--detach")
	_, commit := applyCommit(t, f, "")
	if head := gitT(t, f.project, "rev-parse", "HEAD"); head != commit {
		t.Fatalf("HEAD %s, want the commit %s", head, commit)
	}
	if main := gitT(t, f.project, "rev-parse", "main"); main != base {
		t.Fatal("a commit on a detached HEAD moved the branch")
	}
	if parent := gitT(t, f.project, "rev-parse", commit+"^"); parent != base {
		t.Fatalf("parent %s, want %s", parent, base)
	}
	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatal(err)
	}
	if head := gitT(t, f.project, "rev-parse", "HEAD"); head != base {
		t.Fatalf("after the rollback HEAD is %s, want %s", head, base)
	}
	if _, err := os.Stat(filepath.Join(f.project, "new.txt")); err == nil {
		t.Fatal("rollback left new.txt")
	}
}

// Without an identity the apply is refused before anything is written.
func TestCheckCommitNoIdentity(t *testing.T) {
	f := gitFixture(t)
	gitT(t, f.project, "config", "--unset", "user.email")
	gitT(t, f.project, "config", "--unset", "user.name")
	t.Setenv("GIT_COMMITTER_NAME", "")
	t.Setenv("EMAIL", "")
	err := f.s.CheckCommit()
	if err == nil {
		if out, _ := git(f.project, nil, nil, "var", "GIT_COMMITTER_IDENT"); out != "" {
			t.Skipf("git finds an identity here anyway: %s", out)
		}
		t.Fatal("no error without an identity")
	}
	if !strings.Contains(err.Error(), "user.email") {
		t.Fatalf("%v", err)
	}
}
