package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/internal/testuser"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
)

// manPages names the man page of every command a user can run: shadow.1, shadow-run.1,
// shadow-sessions-move.1, …
func manPages(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		out = append(out, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root.InitDefaultCompletionCmd()
	walk(root)
	return out
}

// TestMakeInstall: `make install PREFIX=…` run by a user who is not root installs the binary,
// shadow-init where shadow looks for it (LIBEXECDIR/shadow), a man page for every command and the three shells' completions under the prefix, `DESTDIR`
// stages the same tree under another root, and `make uninstall` takes every file away again.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed (apt-get install make)")
	}
	root := repoRoot(t)
	dir, bin := testuser.BinaryDir(t, "shadow-install-", "shadow")
	// The copies are newer than every source, so make installs them and builds nothing; the
	// install of shadow-init is checked on a stand-in.
	initBin := filepath.Join(dir, "shadow-init")
	if err := copyExecutable(bin, initBin); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	for _, p := range []string{bin, initBin} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	as := func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	if os.Getuid() == 0 {
		a := testuser.Get(t)
		as = func(args ...string) *exec.Cmd { return a.Command(args[0], args[1:]...) }
		if err := os.Chown(dir, a.UID, a.GID); err != nil {
			t.Fatal(err)
		}
	}
	make := func(args ...string) {
		t.Helper()
		cmd := as(append([]string{"make", "-s", "-C", root, "BIN=" + bin}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
	}
	want := []string{"bin/shadow", "libexec/shadow/shadow-init", "share/bash-completion/completions/shadow",
		"share/zsh/site-functions/_shadow", "share/fish/vendor_completions.d/shadow.fish"}
	for _, page := range manPages(newRootCmd()) {
		want = append(want, "share/man/man1/"+page)
	}
	for _, c := range []struct{ name, prefix, dest, top string }{
		{"PREFIX", filepath.Join(dir, "home", ".local"), "", filepath.Join(dir, "home", ".local")},
		{"DESTDIR", "/usr", filepath.Join(dir, "stage"), filepath.Join(dir, "stage", "usr")},
	} {
		make("install", "PREFIX="+c.prefix, "DESTDIR="+c.dest)
		for _, rel := range want {
			if _, err := os.Stat(filepath.Join(c.top, rel)); err != nil {
				t.Errorf("%s: make install left no %s: %v", c.name, rel, err)
			}
		}
		for _, rel := range []string{"bin/shadow", "libexec/shadow/shadow-init"} {
			if fi, err := os.Stat(filepath.Join(c.top, rel)); err == nil && fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: %s has mode %v, want 0755", c.name, rel, fi.Mode().Perm())
			}
		}
		make("uninstall", "PREFIX="+c.prefix, "DESTDIR="+c.dest)
		filepath.Walk(c.top, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				t.Errorf("%s: make uninstall left %s", c.name, p)
			}
			return nil
		})
	}
}

// TestPresetCompletion: on every command with a --preset flag, completing its value lists every
// embedded preset and no files.
func TestPresetCompletion(t *testing.T) {
	c := newCLI(t)
	var with []string
	for _, cmd := range newRootCmd().Commands() {
		if cmd.Flags().Lookup("preset") != nil {
			with = append(with, cmd.Name())
		}
	}
	if len(with) == 0 {
		t.Fatal("no command has a --preset flag")
	}
	for _, name := range with {
		out := c.must(".", "__complete", name, "--preset", "")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got := map[string]bool{}
		for _, l := range lines[:len(lines)-1] {
			got[strings.SplitN(l, "\t", 2)[0]] = true
		}
		for _, p := range preset.Names() {
			if !got[p] {
				t.Errorf("%s --preset <TAB> does not offer %s:\n%s", name, p, out)
			}
		}
		if last := lines[len(lines)-1]; last != ":4" {
			t.Errorf("%s --preset <TAB> ends %q, want :4 (no file completion)", name, last)
		}
	}
}
