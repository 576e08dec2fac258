package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
// when neither is set or git is not installed.
func gitIdentity(home, dir string) string {
	if home == "" || home == "/" || !hasGlobalGitConfig(home) {
		return ""
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "config", "--global", "--includes", "-z", "--get-regexp", `^user\.(name|email)$`)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+x)
	}
	out, _ := cmd.Output() // exit 1: no such key
	return identityConfig(out)
}

// hasGlobalGitConfig reports whether home holds a global git configuration
// file, so that a run without one starts no git process.
func hasGlobalGitConfig(home string) bool {
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, f := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config")} {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
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
