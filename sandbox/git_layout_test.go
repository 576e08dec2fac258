package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostGit runs git on the host for a fixture, with an identity and local submodules allowed.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com",
		"-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// newRepo makes a git repository at dir with one commit whose message is msg.
func newRepo(t *testing.T, dir, msg string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"README": msg + "\n"})
	hostGit(t, dir, "init", "-q")
	hostGit(t, dir, "add", "README")
	hostGit(t, dir, "commit", "-q", "-m", msg)
}

// TestGitLayouts runs git status and git log in the jail over each layout agents meet: a linked
// worktree (its .git a file naming <main>/.git/worktrees/<name>, whose objects and refs are in the
// common dir), one with extensions.worktreeConfig, a submodule checked out alone and inside its
// superproject, and a folder of several repositories. Each must work read-only.
func TestGitLayouts(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, c := range []struct {
		name string
		// setup builds the layout under base and returns the project and the script run in it.
		setup func(t *testing.T, base string) (project, script string)
		want  string
	}{
		{"worktree", func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "main"), "first")
			hostGit(t, filepath.Join(base, "main"), "worktree", "add", "-q", "-b", "feature", filepath.Join(base, "wt"))
			return filepath.Join(base, "wt"), `git status --porcelain --branch && git log --format=%s`
		}, "## feature\nfirst\n"},
		{"worktreeConfig", func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "main"), "first")
			hostGit(t, filepath.Join(base, "main"), "config", "extensions.worktreeConfig", "true")
			hostGit(t, filepath.Join(base, "main"), "worktree", "add", "-q", "-b", "feature", filepath.Join(base, "wt"))
			hostGit(t, filepath.Join(base, "wt"), "config", "--worktree", "branch.feature.description", "per-worktree")
			return filepath.Join(base, "wt"), `git status --porcelain --branch && git log --format=%s && git config branch.feature.description`
		}, "## feature\nfirst\nper-worktree\n"},
		{"submodule alone", func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "lib"), "lib commit")
			newRepo(t, filepath.Join(base, "super"), "super commit")
			hostGit(t, filepath.Join(base, "super"), "submodule", "add", "-q", filepath.Join(base, "lib"), "sub")
			return filepath.Join(base, "super", "sub"), `git status --porcelain --branch | sed 's/\.\.\..*//' && git log --format=%s`
		}, "## main\nlib commit\n"},
		{"superproject", func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "lib"), "lib commit")
			newRepo(t, filepath.Join(base, "super"), "super commit")
			hostGit(t, filepath.Join(base, "super"), "submodule", "add", "-q", filepath.Join(base, "lib"), "sub")
			hostGit(t, filepath.Join(base, "super"), "commit", "-q", "-m", "add sub")
			return filepath.Join(base, "super"), `git status --porcelain && git log --format=%s && git -C sub log --format=%s`
		}, "add sub\nsuper commit\nlib commit\n"},
		{"several repositories", func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "folder", "repo1"), "one")
			newRepo(t, filepath.Join(base, "folder", "repo2"), "two")
			return filepath.Join(base, "folder"), `for r in repo1 repo2; do git -C $r status --porcelain && git -C $r log --format=%s; done`
		}, "one\ntwo\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := newTestJail(t)
			project, script := c.setup(t, j.base)
			p := j.policy()
			p.Project = project
			res, out, errOut := j.run(t, p, "/bin/sh", "-c", script)
			if res.ExitCode != 0 || out != c.want {
				t.Fatalf("exit %d, stdout %q, want %q; stderr:\n%s", res.ExitCode, out, c.want, errOut)
			}
		})
	}
}

// TestGitWorktreeReadOnly: in a linked worktree the gitdir and the common dir are read-only, so a
// commit fails and the host repository is unchanged.
func TestGitWorktreeReadOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	j := newTestJail(t)
	main := filepath.Join(j.base, "main")
	newRepo(t, main, "first")
	wt := filepath.Join(j.base, "wt")
	hostGit(t, main, "worktree", "add", "-q", "-b", "feature", wt)
	p := j.policy()
	p.Project = wt
	res, out, errOut := j.run(t, p, "/bin/sh", "-c",
		`git commit -q --allow-empty -m agent 2>&1 | grep -q 'Read-only file system' && echo refused; `+
			`echo x > `+filepath.Join(main, ".git", "refs", "heads", "feature")+` 2>/dev/null || echo refs refused`)
	if res.ExitCode != 0 || out != "refused\nrefs refused\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", res.ExitCode, out, errOut)
	}
	if log := hostGit(t, wt, "log", "--format=%s"); log != "first\n" {
		t.Errorf("the host worktree's log is %q after the jail's commit", log)
	}
}
