package session

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/gitout"
)

// gitT runs git in dir for a test, failing it on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitout.Git(dir, nil, nil, args...)
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

func applyCommit(t *testing.T, f *fixture, msg string) (*apply.ApplyResult, string) {
	t.Helper()
	if err := f.s.CheckCommit(); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
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
		if out, _ := gitout.Git(f.project, nil, nil, "var", "GIT_COMMITTER_IDENT"); out != "" {
			t.Skipf("git finds an identity here anyway: %s", out)
		}
		t.Fatal("no error without an identity")
	}
	if !strings.Contains(err.Error(), "user.email") {
		t.Fatalf("%v", err)
	}
}

// TestCommitApplyRunsNothingTheProjectChooses: the host's git config names a clean filter (as
// `git lfs install` sets one up), a process filter, a textconv, a merge driver, an fsmonitor and
// a hooks directory, the last two in the project; the agent's .gitattributes selects the filters
// and drivers and every conversion git makes on add (text, eol, ident, working-tree-encoding),
// and its .githooks and fsmonitor script are applied too. apply --commit must run none of them:
// no marker is written, every committed blob is the bytes apply wrote, and the index holds the
// committed entries.
func TestCommitApplyRunsNothingTheProjectChooses(t *testing.T) {
	f := gitFixture(t)
	marks := t.TempDir()
	mark := func(what string) string { return "touch " + filepath.Join(marks, what) }
	hooks := []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction", "post-index-change"}
	staged := map[string]file{
		".gitattributes": {Data: "* filter=evil diff=evil merge=evil text eol=crlf ident\n" +
			"*.u16 working-tree-encoding=UTF-16\nproc.txt filter=proc\n"},
		"a.txt":      {Data: "line one\r\n$Id: the agent's $\r\n"},
		"x.u16":      {Data: "\xff\xfeh\x00i\x00\r\x00\n\x00"},
		"proc.txt":   {Data: "process me\n"},
		".fsmonitor": {Data: "#!/bin/sh\n" + mark("fsmonitor") + "\n", Mode: 0o755},
	}
	for _, h := range hooks {
		staged[".githooks/"+h] = file{Data: "#!/bin/sh\n" + mark("hook-"+h) + "\n", Mode: 0o755}
	}
	f.stage(t, staged)
	global := "[filter \"evil\"]\n\tclean = " + mark("clean") + " && tr a-z A-Z\n\tsmudge = cat\n\trequired = true\n" +
		"[filter \"proc\"]\n\tprocess = " + mark("process") + "\n\trequired = true\n" +
		"[diff \"evil\"]\n\ttextconv = " + mark("textconv") + " && cat\n" +
		"[merge \"evil\"]\n\tdriver = " + mark("merge") + "\n" +
		"[core]\n\thooksPath = " + filepath.Join(f.project, ".githooks") + "\n"
	if err := os.WriteFile(os.Getenv("GIT_CONFIG_GLOBAL"), []byte(global), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.s.CheckCommit(); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true, AllowProtected: true})
	if err != nil {
		t.Fatal(err)
	}
	commit, err := f.s.CommitApply(res, "")
	if err != nil {
		t.Fatal(err)
	}
	if head := gitT(t, f.project, "rev-parse", "HEAD"); head != commit {
		t.Fatalf("HEAD %s, commit %s", head, commit)
	}
	if ran, _ := os.ReadDir(marks); len(ran) > 0 {
		var names []string
		for _, e := range ran {
			names = append(names, e.Name())
		}
		t.Errorf("apply --commit ran what the project chose: %s", strings.Join(names, ", "))
	}
	for _, p := range append(slices.Collect(maps.Keys(staged)), "gone.txt") {
		wrote, err := os.ReadFile(filepath.Join(f.project, p))
		blob, gerr := gitout.Git(f.project, nil, nil, "cat-file", "blob", "HEAD:"+p)
		switch {
		case os.IsNotExist(err):
			if gerr == nil {
				t.Errorf("%s: deleted by apply, but the commit has it", p)
			}
		case err != nil || gerr != nil:
			t.Errorf("%s: %v, %v", p, err, gerr)
		case blob != string(wrote):
			t.Errorf("%s: committed %q, apply wrote %q", p, blob, wrote)
		}
		tree := strings.Fields(gitT(t, f.project, "ls-tree", "HEAD", "--", p))
		index := strings.Fields(gitT(t, f.project, "ls-files", "-s", "--", p))
		if len(tree) != len(index) || len(tree) > 0 && (tree[0] != index[0] || tree[2] != index[1]) {
			t.Errorf("%s: committed %q, the index holds %q", p, tree, index)
		}
	}
	if tree := strings.Fields(gitT(t, f.project, "ls-tree", "HEAD", "--", ".githooks/pre-commit")); len(tree) == 0 || tree[0] != "100755" {
		t.Errorf("an executable applied file is committed as %q", tree)
	}
	if len(res.Files) != len(staged)+2 { // and the fixture's new.txt and gone.txt
		t.Errorf("applied %d files, want %d: %+v", len(res.Files), len(staged)+2, res.Files)
	}
}
