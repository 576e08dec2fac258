package sandbox

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// treeDigest summarises a directory tree: paths, modes and contents.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v", rel, info.Mode())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// isWhiteout reports whether path is an overlay whiteout: a 0/0 char device.
func isWhiteout(path string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

const stagingScript = `set -e
echo new > new.txt
echo more >> a.txt
rm del.txt
chmod 700 mode.txt
mkdir dst
mv mv/src.txt dst/src.txt
rm -rf repl
mkdir repl
echo fresh > repl/y
`

func TestOverlayStagesWrites(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	before := treeDigest(t, j.project)
	res, _, errOut := j.run(t, j.policy(), "/bin/sh", "-c", stagingScript)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, errOut)
	}
	if after := treeDigest(t, j.project); after != before {
		t.Fatalf("the host project changed during the run:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(j.upper, rel))
		if err != nil {
			t.Errorf("upper layer: %v", err)
		}
		return string(b)
	}
	if got := read("new.txt"); got != "new\n" {
		t.Errorf("new.txt in upper = %q", got)
	}
	if got := read("a.txt"); got != "a\nmore\n" {
		t.Errorf("a.txt in upper = %q", got)
	}
	if got := read("dst/src.txt"); got != "moved\n" {
		t.Errorf("dst/src.txt in upper = %q", got)
	}
	if got := read("repl/y"); got != "fresh\n" {
		t.Errorf("repl/y in upper = %q", got)
	}
	for _, w := range []string{"del.txt", "mv/src.txt"} {
		if !isWhiteout(filepath.Join(j.upper, w)) {
			t.Errorf("%s: no whiteout (char 0/0) in the upper layer", w)
		}
	}
	if fi, err := os.Stat(filepath.Join(j.upper, "mode.txt")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("mode.txt in upper: %v %v, want mode 0700", fi, err)
	}
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(filepath.Join(j.upper, "repl"), "user.overlay.opaque", buf)
	if err != nil || string(buf[:n]) != "y" {
		t.Errorf("repl: user.overlay.opaque = %q, %v; want \"y\"", buf[:n], err)
	}

	// A second run over the same upper layer sees the first run's changes.
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c",
		`cat new.txt a.txt repl/y dst/src.txt; test ! -e del.txt && test ! -e repl/x && test ! -e mv/src.txt && echo gone; stat -c %a mode.txt`)
	want := "new\na\nmore\nfresh\nmoved\ngone\n700\n"
	if res.ExitCode != 0 || out != want {
		t.Errorf("second run: exit %d, out %q, want %q; stderr %s", res.ExitCode, out, want, errOut)
	}
}

func TestProjectUnderHome(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	proj := filepath.Join(j.home, "src", "app")
	writeFiles(t, proj, map[string]string{"main.go": "package main\n"})
	writeFiles(t, j.home, map[string]string{"secret.txt": "host home file\n"})
	p.Project = proj
	res, out, errOut := j.run(t, p, "/bin/sh", "-c",
		`cat main.go; pwd; test ! -e "$HOME/secret.txt" && echo home-empty; echo x > made.txt`)
	want := "package main\n" + proj + "\nhome-empty\n"
	if res.ExitCode != 0 || out != want {
		t.Fatalf("exit %d, out %q, want %q; stderr %s", res.ExitCode, out, want, errOut)
	}
	if _, err := os.Stat(filepath.Join(j.upper, "made.txt")); err != nil {
		t.Errorf("write not staged: %v", err)
	}
	if _, err := os.Stat(filepath.Join(proj, "made.txt")); err == nil {
		t.Errorf("write reached the host project")
	}
}

func TestProjectUnderTmp(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	if !strings.HasPrefix(j.project, "/tmp/") {
		d, err := os.MkdirTemp("/tmp", "shadow-proj-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		writeFiles(t, d, map[string]string{"a.txt": "a\n"})
		j.project = d
	}
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c", `cat a.txt; echo t > /tmp/scratch && cat /tmp/scratch; stat -c %a /tmp`)
	if res.ExitCode != 0 || out != "a\nt\n1777\n" {
		t.Fatalf("exit %d, out %q; stderr %s", res.ExitCode, out, errOut)
	}
}

// TestReadOnlyAncestorOfProject: `--ro` of a directory holding the project
// shows it read-only without covering the project's overlay.
func TestReadOnlyAncestorOfProject(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	writeFiles(t, j.base, map[string]string{"sibling.txt": "s\n"})
	p := j.policy()
	p.ReadOnly = append(p.ReadOnly, j.base)
	res, out, errOut := j.run(t, p, "/bin/sh", "-c",
		`cat a.txt ../sibling.txt; echo staged > new.txt && cat new.txt; echo x > ../sibling.txt || echo refused`)
	if res.ExitCode != 0 || out != "a\ns\nstaged\nrefused\n" {
		t.Fatalf("exit %d, out %q; stderr %s", res.ExitCode, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(j.project, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt reached the host project (%v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(j.upper, "new.txt")); err != nil || string(b) != "staged\n" {
		t.Errorf("staged new.txt = %q, %v", b, err)
	}
}

func TestGitFileBindsGitdirReadOnly(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	gitdir := filepath.Join(j.base, "main.git", "worktrees", "wt")
	writeFiles(t, gitdir, map[string]string{"HEAD": "ref: refs/heads/wt\n"})
	os.RemoveAll(filepath.Join(j.project, ".git"))
	writeFiles(t, j.project, map[string]string{".git": "gitdir: " + gitdir + "\n"})
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c",
		fmt.Sprintf(`cat %s/HEAD; echo x > %s/HEAD || echo refused`, gitdir, gitdir))
	if res.ExitCode != 0 || out != "ref: refs/heads/wt\nrefused\n" || !strings.Contains(errOut, "Read-only") {
		t.Fatalf("exit %d, out %q, stderr %q", res.ExitCode, out, errOut)
	}
}

func TestCacheOverlay(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	writeFiles(t, j.home, map[string]string{".npm/_cacache/index": "cached\n"})
	p := j.policy()
	p.CacheDir = filepath.Join(j.base, "cache")
	res, out, errOut := j.run(t, p, "/bin/sh", "-c", `cat ~/.npm/_cacache/index; echo new > ~/.npm/_cacache/new`)
	if res.ExitCode != 0 || out != "cached\n" {
		t.Fatalf("exit %d, out %q; stderr %s", res.ExitCode, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(j.home, ".npm/_cacache/new")); err == nil {
		t.Errorf("the host cache was written")
	}
	if _, err := os.Stat(filepath.Join(p.CacheDir, ".npm", "upper", "_cacache", "new")); err != nil {
		t.Errorf("cache write not in the cache layer: %v", err)
	}
	// --no-cache hides it.
	p.NoCache = true
	res, _, _ = j.run(t, p, "/bin/sh", "-c", `test -e ~/.npm`)
	if res.ExitCode == 0 {
		t.Errorf("--no-cache: ~/.npm visible")
	}
}

func TestInstallTreeUnderHome(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	tree := filepath.Join(j.home, ".nvm", "versions", "node", "v1")
	writeFiles(t, tree, map[string]string{"lib/tool/cli.sh": "#!/bin/sh\necho tool ran\n"})
	os.Chmod(filepath.Join(tree, "lib/tool/cli.sh"), 0o755)
	os.MkdirAll(filepath.Join(tree, "bin"), 0o755)
	if err := os.Symlink("../lib/tool/cli.sh", filepath.Join(tree, "bin", "tool")); err != nil {
		t.Fatal(err)
	}
	p := j.policy()
	p.Env = setEnv(p.Env, "PATH", filepath.Join(tree, "bin")+":/usr/bin:/bin")
	res, out, errOut := j.run(t, p, "tool")
	if res.ExitCode != 0 || out != "tool ran\n" {
		t.Fatalf("exit %d, out %q; stderr %s", res.ExitCode, out, errOut)
	}
}

func TestGitWritable(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.GitWritable = true
	res, _, errOut := j.run(t, p, "/bin/sh", "-c", `echo "ref: refs/heads/x" > .git/HEAD`)
	if res.ExitCode != 0 {
		t.Fatalf("write .git with GitWritable: exit %d: %s", res.ExitCode, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(j.upper, ".git", "HEAD")); err != nil || string(b) != "ref: refs/heads/x\n" {
		t.Errorf(".git/HEAD not staged: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(j.project, ".git", "HEAD")); string(b) != "ref: refs/heads/main\n" {
		t.Errorf("host .git/HEAD changed: %q", b)
	}
}

// TestDirectoryRenameFallsBack documents a known overlay behaviour: in a
// user namespace (no redirect_dir), renaming a directory that comes from the
// project fails with EXDEV, and tools such as mv fall back to copying.
func TestDirectoryRenameFallsBack(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	got := j.try(t, j.policy(), "rename", "P="+filepath.Join(j.project, "repl")+":"+filepath.Join(j.project, "repl2"))
	if len(got) != 1 || got[0] != "EXDEV" {
		t.Errorf("rename of a project directory: %v, want [EXDEV]", got)
	}
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c", "mv repl repl2 && cat repl2/x && test ! -e repl && echo moved")
	if res.ExitCode != 0 || out != "replaced dir\nmoved\n" {
		t.Errorf("mv of a project directory: exit %d, out %q, stderr %q", res.ExitCode, out, errOut)
	}
}

// TestStateBind binds an agent's state directory read-write below $HOME:
// it survives the run on the host, unlike the rest of the jail's $HOME.
func TestStateBind(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	state := filepath.Join(j.base, "agent-state")
	writeFiles(t, state, map[string]string{"settings.json": "{}\n"})
	p := j.policy()
	dst := filepath.Join(j.home, ".agent")
	p.StateBinds = []StateBind{{Src: state, Dst: dst}}
	res, out, errOut := j.run(t, p, "/bin/sh", "-c", `cat ~/.agent/settings.json; echo hist > ~/.agent/history; echo tmp > ~/scratch`)
	if res.ExitCode != 0 || out != "{}\n" {
		t.Fatalf("exit %d, out %q; stderr %s", res.ExitCode, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(state, "history")); err != nil || string(b) != "hist\n" {
		t.Errorf("state write not on the host: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(j.home, "scratch")); err == nil {
		t.Errorf("a write to the jail's $HOME reached the host home")
	}
	// A state bind into the project would bypass staging: refused.
	p.StateBinds = []StateBind{{Src: state, Dst: j.project}}
	if _, err := runSetup(context.Background(), p, []string{"/bin/true"}); !IsJailError(err) {
		t.Errorf("state bind over the project: %v, want a JailError", err)
	}
}

// TestProjectWithOddName: commas, colons and backslashes separate or escape
// overlay mount options; the project path must still come through whole.
func TestProjectWithOddName(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.Project = filepath.Join(j.base, `odd, name:x\y`)
	writeFiles(t, p.Project, map[string]string{"f": "odd\n"})
	res, out, errOut := j.run(t, p, "/bin/sh", "-c", "cat f; pwd")
	if want := "odd\n" + p.Project + "\n"; res.ExitCode != 0 || out != want {
		t.Errorf("exit %d, out %q, want %q; stderr %s", res.ExitCode, out, want, errOut)
	}
}
