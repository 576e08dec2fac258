package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The jail never sees the host's git configuration: a credential helper, a
// token in a url.<base>.insteadOf rewrite, an include or an alias would all
// reach the command with it. It gets a ~/.gitconfig that shadow writes,
// holding the commit identity alone (SPEC §3).

// identityKeys are the keys of the host's global git configuration that the
// jail's ~/.gitconfig repeats.
var identityKeys = []string{"user.name", "user.email"}

// gitIdentity returns the content of the jail's ~/.gitconfig: user.name and
// user.email as git resolves them from home's global configuration (includes
// and conditional includes followed, as git would for a commit there), or ""
// when neither is set or git ("": not installed) is not installed. cache (nil: none) holds
// the answers for global configurations without includes.
func gitIdentity(home, dir, git string, cache *scrubCache) string {
	if home == "" || home == "/" || git == "" || !hasGlobalGitConfig(home) {
		return ""
	}
	return cache.identity(home, globalGitConfigs(home), func() (string, bool) { return readGitIdentityRan(git, home, dir) })
}

// readGitIdentity is gitIdentity, read by git.
func readGitIdentity(git, home, dir string) string {
	id, _ := readGitIdentityRan(git, home, dir)
	return id
}

// readGitIdentityRan is readGitIdentity, with ran true when git answered (exit 1 is its answer
// that no identity is set): none for a git that failed is no answer to keep for the next plans.
func readGitIdentityRan(git, home, dir string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "config", "--global", "--includes", "-z", "--get-regexp", `^user\.(name|email)$`)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+x)
	}
	out, err := cmd.Output()
	var exit *exec.ExitError
	ran := err == nil || errors.As(err, &exit) && exit.ExitCode() == 1 // exit 1: no such key
	return identityConfig(out), ran
}

// hasGlobalGitConfig reports whether home holds a global git configuration
// file, so that a run without one starts no git process.
func hasGlobalGitConfig(home string) bool {
	for _, f := range globalGitConfigs(home) {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// globalGitConfigs are the files of home's global git configuration: ~/.gitconfig and
// $XDG_CONFIG_HOME/git/config.
func globalGitConfigs(home string) []string {
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	return []string{filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config")}
}

// identityConfig turns `git config -z --get-regexp` output (each entry "key\nvalue\x00") into a
// config file holding the identity keys only; the last value of a key wins, as in git.
func identityConfig(out []byte) string {
	values := map[string]string{}
	for _, entry := range bytes.Split(out, []byte{0}) {
		key, value, ok := strings.Cut(string(entry), "\n")
		if !ok {
			continue
		}
		key = strings.ToLower(key)
		for _, k := range identityKeys {
			if key == k {
				values[k] = value
			}
		}
	}
	if len(values) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Written by shadow: the host's commit identity, nothing else of its git configuration.\n[user]\n")
	for _, k := range identityKeys {
		if v, ok := values[k]; ok {
			b.WriteString("\t" + strings.TrimPrefix(k, "user.") + " = " + quoteConfigValue(v) + "\n")
		}
	}
	return b.String()
}

// quoteConfigValue quotes v as a git config value: in double quotes, with backslash, quote,
// newline and tab escaped, so that no value can start a section or key of its own.
func quoteConfigValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}

// writeGitConfig writes the jail's ~/.gitconfig on its $HOME tmpfs (under root), when there is an
// identity to write, and binds it read-only over itself: like the host file it stands for, the
// command reads it but cannot change what a later git command in the jail would run.
func writeGitConfig(root, home, content string) error {
	if content == "" || home == "" || home == "/" {
		return nil
	}
	path := root + home + "/.gitconfig"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return bindReadOnly(path, path)
}

// Every other git configuration file the jail shows (the project's .git/config, a submodule's
// .git/modules/<name>/config at any depth, a worktree's config.worktree, the common dir of a
// linked worktree, the repositories nested in the project) is shown scrubbed the same way
// (SPEC §3): shadow reads it on the host with git itself and PID 1 binds what is left, read-only,
// over it. What is left is what git needs to work read-only there: the sections of keptSections,
// every URL without its userinfo (in values and in subsection names: remote.*.url, pushurl,
// url.*.insteadOf, submodule.*.url, lfs.url, http.<url>.*), and none of droppedKeys.

// shownConfig is one git configuration file of the jail: Content, scrubbed, bound read-only over
// Path (a real host path, the same in the jail).
type shownConfig struct {
	Path    string
	Content string
}

// keptSections are the sections of a repository's configuration the jail keeps. Anything else is
// dropped: credential.* and include.*/includeIf.* above all, and the sections of tools that keep
// a secret or a command in a repository's config (sendemail.smtpPass, imap.pass and imap.tunnel,
// alias.*, gpg.program, a [github] or [gitlab] token) and that read-only git does not need.
var keptSections = map[string]bool{
	"core": true, "extensions": true, "remote": true, "branch": true, "submodule": true,
	"worktree": true, "user": true, "init": true, "index": true, "feature": true, "pack": true,
	"gc": true, "fetch": true, "pull": true, "push": true, "merge": true, "rebase": true,
	"diff": true, "status": true, "log": true, "color": true, "advice": true, "lfs": true,
	"http": true, "url": true, "pager": true, "format": true, "commit": true, "tag": true,
	"blame": true, "grep": true, "i18n": true, "interactive": true, "mailmap": true, "notes": true,
	"rerere": true, "protocol": true, "am": true, "apply": true, "checkout": true, "clone": true,
	"column": true, "fsck": true, "maintenance": true, "sparse": true, "filter": true,
	"transfer": true, "trailer": true, "sequence": true, "stash": true, "add": true,
	"splitindex": true, "versionsort": true,
}

// droppedKeys are the keys of kept sections that are dropped whatever their subsection
// ("section.name"): a header git sends with every request (actions/checkout writes
// http.https://github.com/.extraheader with the job's token), and the programs git runs to get a
// secret or to reach a remote, which may carry one on their command line (sshpass -p, ssh -i).
var droppedKeys = map[string]bool{
	"http.extraheader": true, "core.sshcommand": true, "core.askpass": true, "core.gitproxy": true,
}

// systemGitConfigs are git's system-wide configuration files, as git built with prefix /usr or
// /usr/local reads them: the jail shows them with the system trees, and images built for CI set
// `git config --system url.https://TOKEN@github.com/.insteadOf` there.
var systemGitConfigs = []string{"/etc/gitconfig", "/usr/local/etc/gitconfig"}

// gitConfigs returns the git configuration files the jail shows for project, scrubbed: the
// system's, those of the repositories of the directories dirs (projectDirs), and the files they
// include that lie in the project or its git directories. Each round reads its files in parallel, a git
// process per file, but for the files cache holds (gitconfig_cache.go; nil: none). git is the
// host's git ("": none).
func gitConfigs(project string, dirs []string, git string, cache *scrubCache) []shownConfig {
	var round []string
	for _, f := range systemGitConfigs {
		if shownSystemFile(f) {
			round = append(round, f)
		}
	}
	for _, d := range dirs {
		for _, g := range gitDirsOf(d) {
			round = append(round, configFilesOf(g)...)
		}
	}
	shown := append([]string{project}, gitDirsOf(project)...)
	var out []shownConfig
	seen := map[string]bool{}
	// git's own limit on include depth is 10.
	for depth := 0; depth <= 10 && len(round) > 0; depth++ {
		var files []string
		for _, f := range round {
			real, err := filepath.EvalSymlinks(f)
			if err != nil || seen[real] {
				continue
			}
			if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
				seen[real] = true
				files = append(files, real)
			}
		}
		scrubbed := make([]shownConfig, len(files))
		includes := make([][]string, len(files))
		var wg sync.WaitGroup
		next := make(chan int)
		for range min(runtime.GOMAXPROCS(0), len(files)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					content, inc := cache.scrub(git, files[i])
					scrubbed[i], includes[i] = shownConfig{Path: files[i], Content: content}, inc
				}
			}()
		}
		for i := range files {
			next <- i
		}
		close(next)
		wg.Wait()
		out = append(out, scrubbed...)
		// A file an include names is read raw by anyone who opens it: scrubbed too when
		// the jail shows it.
		round = nil
		for i, incs := range includes {
			for _, inc := range incs {
				if strings.HasPrefix(inc, "~") {
					continue // $HOME is the jail's own, empty
				}
				if !filepath.IsAbs(inc) {
					inc = filepath.Join(filepath.Dir(files[i]), inc)
				}
				if slices.ContainsFunc(shown, func(s string) bool { return within(inc, s) }) {
					round = append(round, inc)
				}
			}
		}
	}
	return out
}

// projectDirs returns the directories of project where shadow looks for a repository nested in
// it: the project and the directories below it down to projectDirDepth levels, but .git and
// node_modules. Of the directories it lists (all but the deepest), it also returns the entries
// that may be, or lead to, a file a host tool writes credentials into (credentialFiles). cache
// (projectdirs_cache.go; nil: none) holds what it found in the directories unchanged since.
func projectDirs(project string, cache *dirsCache) (dirs, credentialEntries []string) {
	dirs = []string{project}
	level := []string{project}
	for depth := 0; depth < projectDirDepth && len(level) > 0; depth++ {
		var next []string
		for _, d := range level {
			subdirs, creds, ok := cache.list(d, depth == 0)
			if !ok {
				continue
			}
			for _, name := range creds {
				credentialEntries = append(credentialEntries, filepath.Join(d, name))
			}
			for _, name := range subdirs {
				next = append(next, filepath.Join(d, name))
			}
		}
		dirs = append(dirs, next...)
		level = next
	}
	return dirs, credentialEntries
}

// listDir is what projectDirs takes of the directory d: the names of its subdirectories it goes
// into and of its credential entries; ok is false when d cannot be read.
func listDir(d string) (subdirs, creds []string, ok bool) {
	entries, err := os.ReadDir(d)
	if err != nil {
		return nil, nil, false
	}
	for _, e := range entries {
		if credentialNames[e.Name()] {
			creds = append(creds, e.Name())
		}
		if !e.IsDir() || e.Name() == ".git" || e.Name() == "node_modules" {
			continue
		}
		subdirs = append(subdirs, e.Name())
	}
	return subdirs, creds, true
}

// projectDirDepth is how many directories below the project projectDirs goes (folder/org/repo
// is three).
const projectDirDepth = 3

// gitDirsOf returns the real git directories of the worktree dir: its .git directory, or the
// gitdir a .git file names and the common dir that gitdir names (a linked worktree's
// <main>/.git/worktrees/<name> holds only HEAD, index and the like; objects, refs and config are
// in the common dir).
func gitDirsOf(dir string) []string {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return []string{dotgit}
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return nil
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return nil
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	gitdir, err = filepath.EvalSymlinks(gitdir)
	if err != nil {
		return nil
	}
	dirs := []string{gitdir}
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		if common, err = filepath.EvalSymlinks(common); err == nil {
			dirs = append(dirs, common)
		}
	}
	return dirs
}

// configFilesOf lists the configuration files of git directory g: its config and
// config.worktree, its linked worktrees' config.worktree, and those of the submodules' git
// directories under modules/ (a name may hold slashes, a submodule have submodules of its own).
func configFilesOf(g string) []string {
	files := []string{filepath.Join(g, "config"), filepath.Join(g, "config.worktree")}
	if wts, err := os.ReadDir(filepath.Join(g, "worktrees")); err == nil {
		for _, w := range wts {
			if w.IsDir() {
				files = append(files, filepath.Join(g, "worktrees", w.Name(), "config.worktree"))
			}
		}
	}
	var modules func(dir string, depth int)
	modules = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil || depth > 16 {
			return
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(filepath.Join(sub, "HEAD")); err == nil {
				files = append(files, configFilesOf(sub)...)
				continue
			}
			modules(sub, depth+1)
		}
	}
	modules(filepath.Join(g, "modules"), 0)
	return files
}

// scrubGitConfig returns the content the jail shows for the git configuration file path, and
// the include paths it names (dropped from the content). git is the host's git; without it, or
// when git cannot read the file, the jail gets a file with a comment alone.
func scrubGitConfig(git, path string) (content string, includes []string) {
	content, includes, _ = scrubGitConfigRan(git, path)
	return content, includes
}

// scrubGitConfigRan is scrubGitConfig, with ran true when git read the file: a comment alone
// for a git that failed (or ran past its time) is no answer to keep for the next plans.
func scrubGitConfigRan(git, path string) (content string, includes []string, ran bool) {
	var b strings.Builder
	b.WriteString("# Shown by shadow: this file without credentials, includes or credential programs.\n")
	if git == "" {
		return b.String(), nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "config", "--file", path, "--no-includes", "--list", "-z")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent"}
	out, err := cmd.Output()
	if err != nil {
		return b.String(), nil, false
	}
	header := ""
	for _, entry := range bytes.Split(out, []byte{0}) {
		if len(entry) == 0 {
			continue
		}
		key, value, hasValue := strings.Cut(string(entry), "\n")
		first, last := strings.Index(key, "."), strings.LastIndex(key, ".")
		if first <= 0 || last == len(key)-1 {
			continue
		}
		section, name, sub := key[:first], key[last+1:], ""
		if last > first {
			sub = key[first+1 : last]
		}
		if (section == "include" || section == "includeif") && name == "path" && hasValue {
			includes = append(includes, value)
		}
		if !keptSections[section] || droppedKeys[section+"."+name] {
			continue
		}
		h := "[" + section + "]\n"
		if sub != "" {
			h = "[" + section + " \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(stripUserinfo(sub)) + "\"]\n"
		}
		if h != header {
			b.WriteString(h)
			header = h
		}
		if !hasValue {
			b.WriteString("\t" + name + "\n")
			continue
		}
		b.WriteString("\t" + name + " = " + quoteConfigValue(stripUserinfo(value)) + "\n")
	}
	return b.String(), includes, true
}

// stripUserinfo removes the userinfo (user:token@) of every URL in s. As git and curl read a
// URL, it is what comes before the last @ of the authority, which ends at the first /, ? or #.
func stripUserinfo(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexAny(s, "/?#")
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndex(s[:end], "@"); at >= 0 {
			s = s[at+1:]
		}
	}
}

// showScrubbed binds, under root, the scrubbed content of each file of configs read-only over
// it, once the project and .git are mounted. A path the jail does not show as a regular file (or
// reaches through a symlink) is skipped: there is nothing there to hide.
func showScrubbed(root string, configs []shownConfig) error {
	if len(configs) == 0 {
		return nil
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rootFD)
	src := root + "/.shadow-gitconfig"
	defer os.Remove(src)
	for _, c := range configs {
		kind, err := maskedKind(rootFD, c.Path)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Path, err)
		}
		if kind != unix.S_IFREG {
			continue
		}
		// The bind keeps the file; its name on the root goes before the next one is written.
		if err := os.WriteFile(src, []byte(c.Content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", src, err)
		}
		if err := bindReadOnly(src, root+c.Path); err != nil {
			return err
		}
		if err := os.Remove(src); err != nil {
			return fmt.Errorf("remove %s: %w", src, err)
		}
	}
	return nil
}
