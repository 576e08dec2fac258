package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files host tools write credentials into may lie in the project itself: in CI, HOME,
// DOCKER_CONFIG or CARGO_HOME often point into the workspace, and `npm config set
// --location=project` writes a token into the project's .npmrc. The jail shows each such file
// scrubbed (shownConfig, bound read-only over it like a git config): a file that holds nothing
// but credentials empty, a registry config without its credential lines. What a project keeps
// for its own application (.env) is the project's and is shown as it is.

// credentialStores are the files, relative to a directory of the project, that hold nothing but
// credentials: the jail shows them empty.
var credentialStores = []string{
	".git-credentials", ".netrc", "_netrc", ".pypirc", ".pgpass",
	".docker/config.json", ".aws/credentials", ".cargo/credentials", ".cargo/credentials.toml",
	".terraformrc", "terraform.rc", ".terraform.d/credentials.tfrc.json", ".gem/credentials",
	".config/gh/hosts.yml", ".kube/config",
}

// registryConfigs are the package-manager configurations that mix settings with credentials:
// the jail shows them without the lines whose key (before the first sep, scope and all) ends in
// one of keys.
var registryConfigs = []struct {
	name, sep string
	keys      []string
}{
	{".npmrc", "=", []string{"_auth", "_authtoken", "_password"}},
	{".yarnrc.yml", ":", []string{"npmauthtoken", "npmauthident"}},
}

// credentialNames are the first path elements of credentialStores and registryConfigs.
var credentialNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range credentialStores {
		first, _, _ := strings.Cut(n, "/")
		m[first] = true
	}
	for _, rc := range registryConfigs {
		m[rc.name] = true
	}
	return m
}()

// systemRegistryConfigs are the registry configurations of the system trees the jail shows,
// readable by others, where an image built for CI may keep a token: npm's global npmrc (prefix
// /usr and /usr/local) without its credential lines, pip's without the userinfo of its URLs
// (index-url = https://user:token@host/simple).
var systemRegistryConfigs = []struct {
	path  string
	scrub func(string) string
}{
	{"/etc/npmrc", func(c string) string { return withoutKeys(c, "=", registryConfigs[0].keys) }},
	{"/usr/local/etc/npmrc", func(c string) string { return withoutKeys(c, "=", registryConfigs[0].keys) }},
	{"/etc/pip.conf", stripUserinfo},
	{"/etc/xdg/pip/pip.conf", stripUserinfo},
}

// credentialFiles returns, scrubbed, the credential files that entries (projectDirs) are or lead
// to, and the system's registry configs.
func credentialFiles(entries []string) []shownConfig {
	var out []shownConfig
	regular := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	for _, rc := range systemRegistryConfigs {
		if shownSystemFile(rc.path) {
			b, _ := os.ReadFile(rc.path) // unreadable: shown empty
			out = append(out, shownConfig{Path: rc.path, Content: rc.scrub(string(b))})
		}
	}
	for _, e := range entries {
		dir, name := filepath.Split(e)
		for _, n := range credentialStores {
			if first, _, _ := strings.Cut(n, "/"); first == name && regular(filepath.Join(dir, n)) {
				out = append(out, shownConfig{Path: filepath.Join(dir, n)})
			}
		}
		for _, rc := range registryConfigs {
			if rc.name == name && regular(e) {
				b, _ := os.ReadFile(e) // unreadable: shown empty
				out = append(out, shownConfig{Path: e, Content: withoutKeys(string(b), rc.sep, rc.keys)})
			}
		}
	}
	return out
}

// withoutKeys drops from content the lines whose key, what comes before the first sep, ends in
// one of keys, case-insensitively ("//registry.npmjs.org/:_authToken=..." ends in
// "_authtoken"), and the lines indented below a dropped one (a YAML block value).
func withoutKeys(content, sep string, keys []string) string {
	var b strings.Builder
	dropped := -1 // the indent of the last dropped line, while the lines below it go too
	for _, line := range strings.SplitAfter(content, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		if dropped >= 0 && (indent > dropped || strings.TrimSpace(line) == "") {
			continue
		}
		dropped = -1
		key, _, _ := strings.Cut(line, sep)
		key = strings.ToLower(strings.Trim(strings.TrimSpace(key), `"'`))
		if slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(key, k) }) {
			dropped = indent
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// shownSystemFile reports whether the jail shows system file p as it is: a regular file others
// may read. One they may not is masked (mask.go) and must stay so.
func shownSystemFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular() && !hiddenFromOthers(uint32(fi.Mode().Perm()))
}
