package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// hostileNames are file names with one of each kind of byte a terminal acts on or a reader
// misreads, as bash's $'...' spells them: an OSC 52 clipboard write with a cursor-position
// query (ESC [ 6n), BEL, the C1 CSI and OSC as UTF-8 (U+009B, U+009D) and as raw bytes (invalid
// UTF-8), a bidi override (U+202E), a newline, a carriage return and DEL.
var hostileNames = []string{
	`$'osc\x1b]52;c;aGk=\x07\x1b[6n'`,
	`$'c1\xc2\x9b31m\xc2\x9d0;t\x07'`,
	`$'raw\x9b31m\x9d\xff'`,
	`$'bidi\xe2\x80\xaetxt.exe'`,
	`$'nl\nname'`,
	`$'cr\rname\x7f'`,
}

// deepScript stages, beside an ordinary edit, a file at the bottom of 17 directories of 240
// bytes each under a directory with an OSC 52 and an ESC [ 6n in its name: a path past
// PATH_MAX, from the project and all the more from the state directory. Each hostile name is
// staged as a file as well.
func deepScript() string {
	var b strings.Builder
	b.WriteString("set -e\necho TWO > a.txt\n")
	for _, n := range hostileNames {
		fmt.Fprintf(&b, "printf 'x\\n' > %s\n", n)
	}
	b.WriteString("top=$'top\\x1b]52;c;aGk=\\x07\\x1b[6n'\nmkdir \"$top\"; cd \"$top\"\n")
	b.WriteString("seg=$(printf 'd%.0s' {1..240})\nfor i in {1..17}; do mkdir \"$seg\"; cd \"$seg\"; done\necho deep > f\n")
	// A directory shaped like a git repository, as deep: protected, not applied by --all.
	b.WriteString("mkdir -p repo/refs && echo 'ref: refs/heads/main' > repo/HEAD && echo x > repo/refs/x\n")
	return b.String()
}

// deepPathRel is the deep file's path in the project, as the kernel takes it.
func deepPathRel() string {
	return "top\x1b]52;c;aGk=\x07\x1b[6n/" + strings.Repeat(strings.Repeat("d", 240)+"/", 17) + "f"
}

// rawControls lists the runes of out that a terminal acts on or that hide what follows: every
// rune quote.Unsafe reports (C0 but newline and tab, DEL, C1, format characters) and every byte
// of invalid UTF-8.
func rawControls(out string) []string {
	var bad []string
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		if r == utf8.RuneError && size == 1 || r != '\n' && r != '\t' && quote.Unsafe(r) {
			bad = append(bad, fmt.Sprintf("%q at byte %d", out[i:i+size], i))
		}
		i += size
	}
	return bad
}

// deepShell runs shadow commands in a project and returns their stdout and stderr together.
type deepShell func(args ...string) (string, int)

// TestDeepHostilePaths: a run that stages a path longer than PATH_MAX under a name carrying
// escape sequences, and files named with every kind of control byte, leaves a session that
// every command reads: diff, diff --stat, --name-only and --json, log, revert and apply all
// succeed, the ordinary edit and the deep file are applied, and no control byte of any name
// reaches the terminal, as root and as an ordinary user. A second run, whose edit is reverted,
// and a host edit that makes one hostile name conflict, make the commands print those names.
func TestDeepHostilePaths(t *testing.T) {
	asRootAndUser(t, checkDeepHostilePaths)
}

// TestDeepNestedDirs: 1,400 nested directories of 2 bytes with a file at the bottom (a path of
// 4,200 bytes) are staged, diffed and applied, as root and as an ordinary user. The run used to
// keep the jail busy for minutes taking its checkpoints (layers' TestDeltaOfADeepTree counts
// what a checkpoint looks up).
func TestDeepNestedDirs(t *testing.T) {
	asRootAndUser(t, func(t *testing.T, p string, sh deepShell) {
		const depth = 1400
		rel := strings.Repeat("dd/", depth) + "f"
		// mkdir -p and a redirection within PATH_MAX each: the shell's cd fails past it.
		half := strings.Repeat("dd/", depth/2)
		script := fmt.Sprintf("set -e\necho TWO > a.txt\nmkdir -p %[1]s\ncd %[1]s\nmkdir -p %[1]s\necho bottom > %[1]sf\n", half)
		out, code := sh("run", "--", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("run: exit %d\n%s", code, quote.Text(out))
		}
		if out, code := sh("diff", "--stat"); code != 0 || !strings.Contains(out, "2 files changed") {
			t.Errorf("diff --stat: exit %d\n%s", code, out)
		}
		if out, code := sh("diff"); code != 0 || !strings.Contains(out, "+bottom") {
			t.Errorf("diff: exit %d\n%s", code, out)
		}
		if out, code := sh("apply", "--all", "--yes"); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		if got, err := readDeep(p, rel); err != nil || got != "bottom\n" {
			t.Errorf("the file 1,400 directories down after apply: %q, %v", got, err)
		}
		if got := readFile(t, filepath.Join(p, "a.txt")); got != "TWO\n" {
			t.Errorf("a.txt = %q after apply", got)
		}
	})
}

// TestDeepDeletion: a file of the project past PATH_MAX that the agent deletes is in the change
// set as deleted, and apply deletes it (the base's listing of the project left such a subtree
// out, so the deletion showed as no change at all).
func TestDeepDeletion(t *testing.T) {
	asRootAndUser(t, func(t *testing.T, p string, sh deepShell) {
		const into = "seg=$(printf 'd%.0s' {1..240})\nfor i in {1..17}; do mkdir -p \"$seg\"; cd \"$seg\"; done\n"
		rel := strings.Repeat(strings.Repeat("d", 240)+"/", 17) + "f"
		for _, step := range [][]string{
			{"run", "--", "bash", "-c", into + "echo deep > f\n"},
			{"apply", "--all", "--yes"},
			{"run", "--new", "--", "bash", "-c", into + "rm f\n"},
		} {
			if out, code := sh(step...); code != 0 {
				t.Fatalf("shadow %s: exit %d\n%s", step[0], code, quote.Text(out))
			}
		}
		if _, err := readDeep(p, rel); err != nil {
			t.Fatalf("the deep file is not in the project before the second apply: %v", err)
		}
		out, code := sh("diff", "--name-only")
		if code != 0 || strings.TrimSpace(out) != rel {
			t.Errorf("diff --name-only: exit %d, want the deep file:\n%s", code, quote.Text(out))
		}
		if out, code := sh("apply", "--all", "--yes"); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, quote.Text(out))
		}
		if _, err := readDeep(p, rel); err == nil {
			t.Error("the deep file the agent deleted is still in the project after apply")
		}
	})
}

// asRootAndUser runs check on a project holding a.txt ("one"), with shadow run as the test's
// user (root in CI) and, from a root run, as the ordinary user testuser.Name.
func asRootAndUser(t *testing.T, check func(t *testing.T, p string, sh deepShell)) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	t.Run("root", func(t *testing.T) {
		c := newCLI(t)
		p := fixture(t, map[string]string{"a.txt": "one\n"})
		check(t, p, func(args ...string) (string, int) {
			out, errs, code := c.run(p, args...)
			return out + errs, code
		})
	})
	t.Run("user", func(t *testing.T) {
		a := testuser.Get(t)
		dir, bin := testuser.BinaryDir(t, "shadow-deep-", "shadow")
		p := filepath.Join(dir, "project")
		if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "a.txt"), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Join(dir, "state"), p, filepath.Join(p, "a.txt")} {
			if err := os.Chown(d, a.UID, a.GID); err != nil {
				t.Fatal(err)
			}
		}
		check(t, p, func(args ...string) (string, int) {
			cmd := a.Command(bin, args...)
			cmd.Dir = p
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home, "USER=" + a.Name, "SHADOW_TEST_CLI=1",
				"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			return string(out), code
		})
	})
}

func checkDeepHostilePaths(t *testing.T, p string, sh deepShell) {
	must := func(args ...string) string {
		t.Helper()
		out, code := sh(args...)
		if bad := rawControls(out); len(bad) > 0 {
			t.Errorf("shadow %s sent %s raw:\n%s", strings.Join(args, " "), strings.Join(bad, ", "), quote.Text(out))
		}
		if code != 0 {
			t.Fatalf("shadow %s: exit %d\n%s", strings.Join(args, " "), code, quote.Text(out))
		}
		return out
	}
	must("run", "--", "bash", "-c", deepScript())
	// A second step changes the deep file: the history reads it too.
	must("run", "--", "bash", "-c", "echo later > later.txt\ncd $'top\\x1b]52;c;aGk=\\x07\\x1b[6n'\n"+
		"seg=$(printf 'd%.0s' {1..240})\nfor i in {1..17}; do cd \"$seg\"; done\necho changed > f\n")
	if out := must("log"); !strings.Contains(out, "c2") || !strings.Contains(out, "2 files") {
		t.Errorf("log does not count the second step's 2 files:\n%s", quote.Text(out))
	}
	if out := must("diff", "--checkpoint", "c2", "--name-only"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "later.txt") {
		t.Errorf("diff --checkpoint c2 --name-only lists not the deep file and later.txt:\n%s", quote.Text(out))
	}
	must("log", "--json")
	must("revert", "--to", "c1", "--yes")
	for _, args := range [][]string{{"diff"}, {"diff", "--stat"}, {"diff", "--json"}} {
		must(args...)
	}
	names := must("diff", "--name-only")
	if n := strings.Count(names, "\n"); n != len(hostileNames)+4 {
		t.Errorf("diff --name-only lists %d paths, want %d:\n%s", n, len(hostileNames)+4, quote.Text(names))
	}
	// A host edit of one hostile name: apply refuses that path, naming it.
	if err := os.WriteFile(filepath.Join(p, "nl\nname"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := sh("apply", "--all", "--yes")
	if bad := rawControls(out); len(bad) > 0 {
		t.Errorf("apply sent %s raw:\n%s", strings.Join(bad, ", "), quote.Text(out))
	}
	if got := readFile(t, filepath.Join(p, "a.txt")); got != "TWO\n" {
		t.Errorf("a.txt = %q after apply", got)
	}
	deep, err := readDeep(p, deepPathRel())
	if err != nil || deep != "deep\n" {
		t.Errorf("the deep file after apply: %q, %v", deep, err)
	}
	if head, err := readDeep(p, strings.TrimSuffix(deepPathRel(), "f")+"repo/HEAD"); err == nil {
		t.Errorf("the git-shaped directory at the bottom was applied without --allow-protected: HEAD = %q", head)
	}
	if _, err := os.Lstat(filepath.Join(p, "later.txt")); err == nil {
		t.Error("later.txt, reverted, was applied")
	}
}

// readDeep reads the file rel of dir, a path longer than PATH_MAX, a directory at a time.
func readDeep(dir, rel string) (string, error) {
	parts := strings.Split(rel, "/")
	cwd, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	for _, c := range parts[:len(parts)-1] {
		next, err := openIn(cwd, c)
		cwd.Close()
		if err != nil {
			return "", err
		}
		cwd = next
	}
	defer cwd.Close()
	f, err := openIn(cwd, parts[len(parts)-1])
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 64)
	n, err := f.Read(b)
	return string(b[:n]), err
}

// openIn opens name in the open directory d, through /proc/self/fd: a path of a few bytes.
func openIn(d *os.File, name string) (*os.File, error) {
	return os.Open(fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name))
}
