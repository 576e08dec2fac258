package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoSecretKeys are the kinds of git configuration entry that carry a credential or name a
// program that would be given one, as `git config --add KEY VALUE` of a repository's config;
// each value or key holds its marker SECRET-<kind>.
var repoSecretKeys = [][2]string{
	{"remote.origin.url", "https://x-access-token:SECRET-url@github.com/o/r.git"},
	{"remote.origin.pushurl", "https://SECRET-pushurl@github.com/o/r.git"},
	{"url.https://SECRET-insteadofkey@github.com/.insteadOf", "https://example.com/"},
	{"url.https://example.org/.insteadOf", "https://u:SECRET-insteadofvalue@example.org/"},
	{"http.https://github.com/.extraheader", "AUTHORIZATION: basic SECRET-extraheader"},
	{"http.https://SECRET-httpurl@example.net/.sslVerify", "true"},
	{"http.extraHeader", "Authorization: Bearer SECRET-httpextraheader"},
	{"submodule.other.url", "https://SECRET-submoduleurl@github.com/o/other.git"},
	{"lfs.url", "https://SECRET-lfsurl@lfs.example.com/"},
	{"credential.helper", "store --file=/SECRET-credentialhelper"},
	{"credential.https://github.com.username", "SECRET-credentialusername"},
	{"include.path", "/SECRET-includepath"},
	{"include.path", "included.cfg"},
	{"includeIf.gitdir:/.path", "/SECRET-includeif"},
	{"core.sshCommand", "sshpass -p SECRET-sshcommand ssh"},
	{"core.askPass", "/SECRET-askpass"},
	{"alias.deploy", "!curl -H 'Authorization: SECRET-alias' https://example.com"},
	{"sendemail.smtpPass", "SECRET-smtppass"},
}

// includedSecret is the content of the file the include.path "included.cfg" names, next to each
// config: git would not read it in the jail (includes are dropped), but it lies in what the jail
// shows, so it is read raw unless it is scrubbed too.
const includedSecret = "[http]\n\textraHeader = Authorization: Bearer SECRET-includedfile\n[core]\n\tbare = false\n"

var secretMarker = regexp.MustCompile(`SECRET-[a-z]+`)

// TestEscapeGitRepoConfigSecrets: every git configuration the jail shows of a project's
// repositories (the main repository's config and config.worktree, a submodule's, the nested
// submodule's under it, a repository nested in the project, a linked worktree's common dir and
// its config.worktree, a submodule checked out alone) holds every kind of credential-bearing
// entry on the host; in the jail, `git config --list --show-origin`, the files themselves and
// every file of the shown trees hold none of them, and git status and log still work.
func TestEscapeGitRepoConfigSecrets(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	j := newTestJail(t)
	base := j.base
	super, wt := filepath.Join(base, "super"), filepath.Join(base, "wt")
	newRepo(t, filepath.Join(base, "deep"), "deep commit")
	newRepo(t, filepath.Join(base, "lib"), "lib commit")
	hostGit(t, filepath.Join(base, "lib"), "submodule", "add", "-q", filepath.Join(base, "deep"), "deep")
	hostGit(t, filepath.Join(base, "lib"), "commit", "-q", "-m", "add deep")
	newRepo(t, super, "super commit")
	hostGit(t, super, "submodule", "add", "-q", filepath.Join(base, "lib"), "sub")
	hostGit(t, super, "commit", "-q", "-m", "add sub")
	hostGit(t, super, "submodule", "update", "-q", "--init", "--recursive")
	hostGit(t, super, "config", "extensions.worktreeConfig", "true")
	hostGit(t, super, "worktree", "add", "-q", "-b", "feature", wt)
	newRepo(t, filepath.Join(super, "vendor", "other"), "other commit")
	writeFiles(t, super, map[string]string{".git/info/exclude": "vendor/\n"})

	gitDir := filepath.Join(super, ".git")
	configs := []string{
		filepath.Join(gitDir, "config"),
		filepath.Join(gitDir, "config.worktree"),
		filepath.Join(gitDir, "modules", "sub", "config"),
		filepath.Join(gitDir, "modules", "sub", "modules", "deep", "config"),
		filepath.Join(gitDir, "worktrees", "wt", "config.worktree"),
		filepath.Join(super, "vendor", "other", ".git", "config"),
	}
	// As root, a system config too: the one of a git built with prefix /usr/local, which this
	// machine's git does not read, so that no other git sees the fixture.
	if sys := systemGitConfigs[len(systemGitConfigs)-1]; os.Getuid() == 0 {
		if _, err := os.Lstat(sys); err == nil {
			t.Logf("%s exists: not replaced", sys)
		} else {
			if _, err := os.Stat(filepath.Dir(sys)); err != nil {
				if err := os.MkdirAll(filepath.Dir(sys), 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(filepath.Dir(sys)) })
			}
			t.Cleanup(func() { os.Remove(sys); os.Remove(filepath.Join(filepath.Dir(sys), "included.cfg")) })
			configs = append(configs, sys)
		}
	}
	var kinds []string
	for _, f := range configs {
		for _, kv := range repoSecretKeys {
			hostGit(t, base, "config", "--file", f, "--add", kv[0], kv[1])
		}
		writeFiles(t, filepath.Dir(f), map[string]string{"included.cfg": includedSecret})
	}
	for _, kv := range repoSecretKeys {
		if m := secretMarker.FindString(kv[0] + kv[1]); m != "" {
			kinds = append(kinds, m)
		}
	}
	kinds = append(kinds, "SECRET-includedfile")
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	// Control: git on the host shows every kind in each config.
	for _, f := range configs {
		out := hostGit(t, base, "config", "--file", f, "--includes", "--list")
		if got := markers(out); !slices.Equal(got, kinds) {
			t.Fatalf("control: %s holds %v, want %v", f, got, kinds)
		}
	}

	for _, c := range []struct {
		name, project string
		repos         []string // relative to the project
		log           string   // git log -1 of each
	}{
		{"main repository", super, []string{".", "sub", "sub/deep", "vendor/other"},
			"add sub\nadd deep\ndeep commit\nother commit\n"},
		{"linked worktree", wt, []string{"."}, "add sub\n"},
		{"submodule alone", filepath.Join(super, "sub"), []string{".", "deep"}, "add deep\ndeep commit\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := j.policy()
			p.Project = c.project
			var script strings.Builder
			for _, r := range c.repos {
				script.WriteString("git -C " + r + " config --list --show-origin >&2 && git -C " + r +
					" status --porcelain && git -C " + r + " log -1 --format=%s || echo FAILED " + r + "\n")
			}
			script.WriteString("for f in " + strings.Join(append(configs, filepath.Join(gitDir, "included.cfg")), " ") +
				"; do cat $f >&2 2>/dev/null; done\n")
			script.WriteString("grep -r -a -o -h 'SECRET-[a-z]*' " + base + " >&2 2>/dev/null; true\n")
			res, out, errOut := j.run(t, p, "/bin/sh", "-c", script.String())
			if res.ExitCode != 0 || out != c.log {
				t.Errorf("git in the jail: exit %d, stdout %q, want %q; stderr:\n%s", res.ExitCode, out, c.log, errOut)
			}
			if leaked := markers(errOut); len(leaked) > 0 {
				t.Errorf("the jail shows %v of the project's git configuration:\n%s", leaked, errOut)
			}
		})
	}
}

// markers returns the secret markers in s, sorted, each once.
func markers(s string) []string {
	m := secretMarker.FindAllString(s, -1)
	slices.Sort(m)
	return slices.Compact(m)
}

func TestStripUserinfo(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://x-access-token:T@github.com/o/r.git": "https://github.com/o/r.git",
		"https://T@github.com":                        "https://github.com",
		"ssh://git@github.com/o/r":                    "ssh://github.com/o/r",
		"git@github.com:o/r.git":                      "git@github.com:o/r.git",
		"https://github.com/o/r@v2":                   "https://github.com/o/r@v2",
		"https://a:b@c@host/p?x=y@z":                  "https://host/p?x=y@z",
		"a https://u:p@h/ b http://v@i":               "a https://h/ b http://i",
		"/srv/repo.git":                               "/srv/repo.git",
	} {
		if got := stripUserinfo(in); got != want {
			t.Errorf("stripUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEscapeProjectCredentialFiles: every file of credentialStores and registryConfigs, at the
// project's top and two directories down, holds a secret on the host; in the jail the stores
// are empty and the registry configs keep their settings without their credentials.
func TestEscapeProjectCredentialFiles(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	files := map[string]string{}
	var paths []string
	for _, dir := range []string{"", "apps/web"} {
		for _, name := range credentialStores {
			files[filepath.Join(dir, name)] = "machine example.com login u password SECRET-store\n"
			paths = append(paths, filepath.Join(j.project, dir, name))
		}
		for _, rc := range registryConfigs {
			paths = append(paths, filepath.Join(j.project, dir, rc.name))
		}
		files[filepath.Join(dir, ".npmrc")] = "registry=https://registry.npmjs.org/\n" +
			"//registry.npmjs.org/:_authToken=SECRET-npmtoken\n_auth = SECRET-npmauth\n" +
			"//npm.example.com/:_password=SECRET-npmpassword\n"
		files[filepath.Join(dir, ".yarnrc.yml")] = "nodeLinker: node-modules\nnpmAuthToken: SECRET-yarntoken\n" +
			"npmScopes:\n  co:\n    npmAuthIdent: |\n      SECRET-yarnident\n    npmRegistryServer: \"https://npm.example.com\"\n"
	}
	writeFiles(t, j.project, files)
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c", "cat "+strings.Join(paths, " "))
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, errOut)
	}
	if leaked := markers(out); len(leaked) > 0 {
		t.Errorf("the jail shows %v of the project's credential files:\n%s", leaked, out)
	}
	for _, kept := range []string{"registry=https://registry.npmjs.org/\n", "nodeLinker: node-modules\n",
		"npmScopes:\n  co:\n    npmRegistryServer: \"https://npm.example.com\"\n"} {
		if strings.Count(out, kept) != 2 {
			t.Errorf("the jail's registry configs lost %q:\n%s", kept, out)
		}
	}
}
