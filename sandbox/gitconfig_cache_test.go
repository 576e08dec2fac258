package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScrubCache: a git configuration file read once is scrubbed from the cache while it is
// unchanged, with no git process, and read by git again after each way it can change (its
// content at the same size, its size, replaced by a rename, git itself), and when the cache
// file cannot be trusted (writable by others, corrupt). What the cache gives is what git gave.
func TestScrubCache(t *testing.T) {
	t.Parallel()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	// A git that counts its runs.
	count := filepath.Join(dir, "runs")
	git := filepath.Join(dir, "git")
	writeGit := func(extra string) {
		t.Helper()
		script := "#!/bin/sh\n" + extra + "echo >> " + count + "\nexec " + realGit + " \"$@\"\n"
		if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeGit("")
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
	cacheDir := filepath.Join(dir, "cache")
	config := filepath.Join(dir, "config")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(config, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const secretA = "[core]\n\teditor = vi\n[credential]\n\thelper = store-AAAA\n[remote \"o\"]\n\turl = https://u:tokAAAA@example.com/r\n"
	const secretB = "[core]\n\teditor = vb\n[credential]\n\thelper = store-BBBB\n[remote \"o\"]\n\turl = https://u:tokBBBB@example.com/r\n"
	write(secretA)

	scrub := func(step string, wantRuns int) string {
		t.Helper()
		before := runs()
		c := loadScrubCache(cacheDir, git)
		c.racy = -time.Hour // the fixtures are made just before they are read
		content, _ := c.scrub(git, config)
		c.save()
		want, _ := scrubGitConfig(realGit, config)
		if content != want {
			t.Errorf("%s: scrubbed\n%s\nwant what git gives\n%s", step, content, want)
		}
		for _, s := range []string{"AAAA", "BBBB", "helper"} {
			if strings.Contains(content, s) {
				t.Errorf("%s: %q is in the scrubbed file:\n%s", step, s, content)
			}
		}
		if got := runs() - before; got != wantRuns {
			t.Errorf("%s: git ran %d times, want %d", step, got, wantRuns)
		}
		return content
	}
	first := scrub("first read", 1)
	if scrub("unchanged", 0) != first {
		t.Error("the cache gave another content for the same file")
	}
	write(secretB) // same size, another content
	if scrub("same size, new content", 1) == first {
		t.Error("a changed file kept its old scrubbed content")
	}
	scrub("unchanged again", 0)
	write(secretB + "[core]\n\tbare = false\n")
	scrub("new size", 1)
	tmp := config + ".new"
	if err := os.WriteFile(tmp, []byte(secretA), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, config); err != nil {
		t.Fatal(err)
	}
	scrub("replaced by a rename", 1)
	writeGit(": another git\n")
	scrub("another git", 1)
	scrub("unchanged with the new git", 0)

	cacheFile := filepath.Join(cacheDir, gitConfigCacheName)
	if err := os.Chmod(cacheFile, 0o666); err != nil {
		t.Fatal(err)
	}
	scrub("cache writable by others", 1)
	if err := os.WriteFile(cacheFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	scrub("corrupt cache", 1)
	scrub("rewritten cache", 0)

	// A file changed within the racy window is read again next time.
	c := loadScrubCache(cacheDir, git)
	write(secretB)
	c.scrub(git, config)
	c.save()
	scrub("changed just before its read", 1)

	// Without a cache directory, git reads every time.
	before := runs()
	for range 2 {
		loadScrubCache("", git).scrub(git, config)
	}
	if got := runs() - before; got != 2 {
		t.Errorf("no cache directory: git ran %d times, want 2", got)
	}
}

// TestGitIdentityCache: the jail's identity, read by git from the global configuration, is
// kept while neither file of it (~/.gitconfig, $XDG_CONFIG_HOME/git/config) nor git changes,
// read again after each change (one at the same size, one made, git), and never kept while
// the configuration has an include, whose files it does not watch.
func TestGitIdentityCache(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	home, xdg, project := filepath.Join(dir, "home"), filepath.Join(dir, "xdg"), filepath.Join(dir, "project")
	for _, d := range []string{home, filepath.Join(xdg, "git"), project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", xdg)
	count := filepath.Join(dir, "runs")
	git := filepath.Join(dir, "git")
	writeGit := func(extra string) {
		t.Helper()
		script := "#!/bin/sh\n" + extra + "echo >> " + count + "\nexec " + realGit + " \"$@\"\n"
		if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeGit("")
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	global := filepath.Join(home, ".gitconfig")
	included := filepath.Join(home, "identity.inc")
	write(global, "[user]\n\tname = Ann\n\temail = ann@example.com\n")
	cacheDir := filepath.Join(dir, "cache")
	identity := func(step, want string, wantRuns int) {
		t.Helper()
		before := runs()
		c := loadScrubCache(cacheDir, git)
		c.racy = -time.Hour // the fixtures are made just before they are read
		got := gitIdentity(home, project, git, c)
		c.save()
		if fresh := readGitIdentity(realGit, home, project); got != fresh || !strings.Contains(got, want) {
			t.Errorf("%s: identity %q, want git's %q, with %s in it", step, got, fresh, want)
		}
		if n := runs() - before; n != wantRuns {
			t.Errorf("%s: git ran %d times, want %d", step, n, wantRuns)
		}
	}
	identity("first read", `"Ann"`, 1)
	identity("unchanged", `"Ann"`, 0)
	write(global, "[user]\n\tname = Bob\n\temail = ann@example.com\n")
	identity("~/.gitconfig changed, same size", `"Bob"`, 1)
	identity("unchanged again", `"Bob"`, 0)
	write(global, "[user]\n\tname = Bob\n")
	write(filepath.Join(xdg, "git", "config"), "[user]\n\temail = cat@example.com\n")
	identity("$XDG_CONFIG_HOME/git/config made", `"Bob"`, 1)
	identity("both unchanged", `"Bob"`, 0)
	writeGit(": another git\n")
	identity("another git", `"Bob"`, 1)
	identity("unchanged with the new git", `"Bob"`, 0)

	if err := os.Remove(filepath.Join(xdg, "git", "config")); err != nil {
		t.Fatal(err)
	}
	write(included, "[user]\n\tname = Dan\n")
	write(global, "[include]\n\tpath = "+included+"\n")
	identity("with an include", `"Dan"`, 1)
	write(included, "[user]\n\tname = Eve\n")
	identity("the included file changed", `"Eve"`, 1)
	if out, err := exec.Command(realGit, "init", "-q", project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	write(global, "[IncludeIf \"gitdir:"+project+"/\"]\n\tpath = "+included+"\n")
	identity("with a conditional include", `"Eve"`, 1)
	identity("never kept with an include", `"Eve"`, 1)
}

// TestScrubCacheKeepsNoFailure: a git that could not read a configuration file (it failed, or
// ran past its time, on a loaded machine) gives the jail a file with the comment alone for that
// run; the cache keeps nothing of it, and the next plan reads the file with git again and shows
// what git gives. Every way the run of git can fail is tried: an exit status, a signal, nothing
// to run.
func TestScrubCacheKeepsNoFailure(t *testing.T) {
	t.Parallel()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, fail := range []string{"exit 1", "kill -9 $$", "exec /nonexistent/git"} {
		dir := t.TempDir()
		broken := filepath.Join(dir, "broken")
		git := filepath.Join(dir, "git")
		script := "#!/bin/sh\nif [ -e " + broken + " ]; then " + fail + "; fi\nexec " + realGit + " \"$@\"\n"
		if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(dir, "config")
		if err := os.WriteFile(config, []byte("[remote \"o\"]\n\turl = https://example.com/r\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want, _ := scrubGitConfig(realGit, config)
		if !strings.Contains(want, "example.com") {
			t.Fatalf("git's scrub of the fixture: %q", want)
		}
		cacheDir := filepath.Join(dir, "cache")
		scrub := func() string {
			c := loadScrubCache(cacheDir, git)
			c.racy = -time.Hour // the fixtures are made just before they are read
			content, _ := c.scrub(git, config)
			c.save()
			return content
		}
		if err := os.WriteFile(broken, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := scrub(); strings.Contains(got, "example.com") {
			t.Fatalf("%s: the broken git gave %q", fail, got)
		}
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
		if got := scrub(); got != want {
			t.Errorf("%s: after git failed once, the file is shown as\n%s\nwant what git gives\n%s", fail, got, want)
		}
	}
}

// TestGitIdentityCacheKeepsNoFailure: a git that could not answer for the commit identity (it
// failed, or ran past its time) gives the jail none for that run; the cache keeps nothing of
// it, and the next plan asks git again. Every way the run of git can fail is tried, beside the
// exit status 1 of a configuration that names no identity, which is an answer.
func TestGitIdentityCacheKeepsNoFailure(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, fail := range []string{"exit 2", "exit 128", "kill -9 $$", "exec /nonexistent/git"} {
		dir := t.TempDir()
		home, project := filepath.Join(dir, "home"), filepath.Join(dir, "project")
		for _, d := range []string{home, project} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
		if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Ann\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		broken := filepath.Join(dir, "broken")
		git := filepath.Join(dir, "git")
		script := "#!/bin/sh\nif [ -e " + broken + " ]; then " + fail + "; fi\nexec " + realGit + " \"$@\"\n"
		if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		cacheDir := filepath.Join(dir, "cache")
		identity := func() string {
			c := loadScrubCache(cacheDir, git)
			c.racy = -time.Hour // the fixtures are made just before they are read
			got := gitIdentity(home, project, git, c)
			c.save()
			return got
		}
		if err := os.WriteFile(broken, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := identity(); strings.Contains(got, "Ann") {
			t.Fatalf("%s: the broken git gave %q", fail, got)
		}
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
		if got := identity(); !strings.Contains(got, `"Ann"`) {
			t.Errorf("%s: after git failed once, the identity is %q", fail, got)
		}
	}
}
