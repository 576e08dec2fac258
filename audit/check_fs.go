package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// daemonSockets are the container daemon sockets FS001 looks for.
var daemonSockets = []string{
	"/var/run/docker.sock", "/run/docker.sock",
	"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock",
	"/run/podman/podman.sock", "/var/run/podman/podman.sock",
	"/run/crio/crio.sock", "/var/run/crio/crio.sock",
	"/run/buildkit/buildkitd.sock", "/var/run/buildkit/buildkitd.sock",
	"/run/k3s/containerd/containerd.sock",
}

// runtimeSockets are looked for under $XDG_RUNTIME_DIR (rootless daemons).
var runtimeSockets = []string{"docker.sock", "podman/podman.sock", "containerd/containerd.sock", "buildkit/buildkitd.sock"}

// checkFS001: container daemon sockets; stat and access only, never connected.
func checkFS001(s *scan) outcome {
	paths := append([]string(nil), daemonSockets...)
	runtimeDirs := map[string]bool{}
	if rt, ok := s.env.Getenv("XDG_RUNTIME_DIR"); ok && filepath.IsAbs(rt) {
		runtimeDirs[filepath.Clean(rt)] = true
	}
	if st, err := s.procStatus(); err == nil && st.HasUID {
		runtimeDirs[fmt.Sprintf("/run/user/%d", st.UID[1])] = true
	}
	for _, rt := range sortedKeys(runtimeDirs) {
		for _, p := range runtimeSockets {
			paths = append(paths, filepath.Join(rt, p))
		}
	}
	var bad, seen []Evidence
	for _, p := range paths {
		fi, err := s.env.stat(p)
		if err != nil || fi.IsDir() {
			continue
		}
		if s.env.access(p, 6) == nil {
			bad = append(bad, note("%s is reachable (read and write allowed)", p))
		} else {
			seen = append(seen, note("%s present but not accessible", p))
		}
	}
	if len(bad) > 0 {
		return failed(append(bad, seen...)...)
	}
	return passed(append([]Evidence{note("no reachable daemon socket among %d locations", len(paths))}, seen...)...)
}

// credentialPaths are FS002's files and directories, relative to home.
var credentialPaths = []string{
	".aws/credentials", ".aws/sso/cache", ".kube/config", ".gnupg/private-keys-v1.d", ".gnupg/secring.gpg",
	".docker/config.json", ".npmrc", ".pypirc", ".netrc", ".git-credentials", ".config/gh/hosts.yml",
	".cargo/credentials", ".cargo/credentials.toml", ".config/gcloud/application_default_credentials.json",
	".config/gcloud/credentials.db", ".azure/msal_token_cache.json", ".terraform.d/credentials.tfrc.json",
	".vault-token", ".config/hub", ".local/share/keyrings",
}

// checkFS002: credentials readable by the effective user; contents never read.
func checkFS002(s *scan) outcome {
	if s.env.Home == "" {
		return skipped("home directory unknown")
	}
	paths := append([]string(nil), credentialPaths...)
	sshDir := s.env.home(".ssh")
	if ents, err := s.env.readDir(sshDir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "id_") && !strings.HasSuffix(e.Name(), ".pub") {
				paths = append(paths, filepath.Join(".ssh", e.Name()))
			}
		}
	}
	var bad, seen []Evidence
	present := 0
	for _, rel := range paths {
		p := s.env.home(rel)
		if _, err := s.env.lstat(p); err != nil {
			continue
		}
		present++
		if s.env.access(p, 4) == nil {
			bad = append(bad, note("%s is readable", p))
		} else {
			seen = append(seen, note("%s present, not readable", p))
		}
	}
	if len(bad) > 0 {
		return failed(append(bad, seen...)...)
	}
	if present == 0 {
		return passed(note("none of %d credential locations under %s is visible", len(paths), s.env.Home))
	}
	return passed(append([]Evidence{note("%s present, none readable", english.Count(present, "credential location"))}, seen...)...)
}

// persistencePaths are FS003's files and directories, relative to home.
var persistencePaths = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv",
	".zlogin", ".config/fish/config.fish", ".ssh", ".ssh/authorized_keys", ".ssh/config", ".ssh/rc",
	".gitconfig", ".config/git/config", ".config/autostart", ".config/systemd/user", ".config/environment.d",
	".pam_environment", ".xprofile", ".npmrc", ".local/bin",
}

// checkFS003: existing persistence files the user could rewrite.
func checkFS003(s *scan) outcome {
	if s.env.Home == "" {
		return skipped("home directory unknown")
	}
	var bad, ro []Evidence
	for _, rel := range persistencePaths {
		p := s.env.home(rel)
		if _, err := s.env.lstat(p); err != nil {
			continue
		}
		if s.writable(p) {
			bad = append(bad, note("%s is writable", p))
		} else {
			ro = append(ro, note("%s present, read-only", p))
		}
	}
	if len(bad) > 0 {
		return failed(append(bad, ro...)...)
	}
	return passed(append([]Evidence{note("no writable shell rc, ssh or autostart file under %s", s.env.Home)}, ro...)...)
}

// checkFS004: system directories writable.
func checkFS004(s *scan) outcome {
	var bad, ok []Evidence
	checked := 0
	for _, p := range []string{"/usr", "/etc", "/boot", "/lib", "/bin", "/sbin"} {
		fi, err := s.env.lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		checked++
		if s.writable(p) {
			bad = append(bad, note("%s is writable", p))
		} else {
			ok = append(ok, note("%s read-only", p))
		}
	}
	if checked == 0 {
		return skipped("none of /usr, /etc, /boot, /lib, /bin, /sbin could be examined")
	}
	if len(bad) > 0 {
		return failed(bad...)
	}
	return passed(ok...)
}

// checkFS005: workload identity tokens and variables; contents never read.
func checkFS005(s *scan) outcome {
	var bad, granted []Evidence
	for _, p := range []string{
		"/var/run/secrets/kubernetes.io/serviceaccount/token", "/run/secrets/kubernetes.io/serviceaccount/token",
		"/var/run/secrets/eks.amazonaws.com/serviceaccount/token", "/var/run/secrets/tokens",
		"/var/run/secrets/azure/tokens/azure-identity-token",
	} {
		if _, err := s.env.lstat(p); err == nil {
			bad = append(bad, note("%s present", p))
		}
	}
	for _, name := range []string{"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"GOOGLE_APPLICATION_CREDENTIALS", "AZURE_FEDERATED_TOKEN_FILE", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL"} {
		if _, ok := s.env.Getenv(name); !ok {
			continue
		}
		if s.env.granted(name) {
			granted = append(granted, note("%s granted deliberately", name))
		} else {
			bad = append(bad, note("%s is set", name))
		}
	}
	if len(bad) > 0 {
		return failed(append(bad, granted...)...)
	}
	return passed(append([]Evidence{note("no service-account token or cloud identity variable")}, granted...)...)
}

// checkFS006: project registry config holding a literal token.
func checkFS006(s *scan) outcome {
	configs, err := projectRegistryConfigs(s.project)
	if err != nil {
		return skipped("%v", err)
	}
	var bad []Evidence
	for _, rc := range configs {
		if rc.err != nil {
			return skipped("%v", rc.err)
		}
		for _, t := range rc.tokens {
			bad = append(bad, at(rc.rel, t.line, "%s holds a literal credential", t.key))
		}
	}
	if len(bad) > 0 {
		return failed(bad...)
	}
	if len(configs) == 0 {
		return passed(note("no project .npmrc, .yarnrc or .yarnrc.yml"))
	}
	return passed(note("%s, credentials only as ${VAR} references", english.Count(len(configs), "registry config file")))
}

var (
	secretNamePart = lazyRE(`(?i)(^|_)(TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PWD_HASH|APIKEY|API_KEY|PRIVATE_KEY|ACCESS_KEY|CREDENTIALS?|AUTH|SESSION_KEY|KEY)($|_)`)
	secretValue    = lazyRE(`^(AKIA|ASIA)[0-9A-Z]{16}$|^(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|^github_pat_|^xox[abprs]-|^glpat-|^sk-ant-|^sk-[A-Za-z0-9_-]{20,}|^npm_[A-Za-z0-9]{30,}|^AIza[0-9A-Za-z_-]{30,}|-----BEGIN [A-Z ]*PRIVATE KEY|^eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.`)
	// notSecretNames are common variables whose names match the pattern but hold no secret.
	notSecretNames = map[string]bool{"GPG_TTY": true, "KEYTIMEOUT": true, "PWD": true, "OLDPWD": true, "SSH_AUTH_SOCK": true}
)

// checkFS007: secret-looking variables; names only, never values.
func checkFS007(s *scan) outcome {
	var bad, granted, placeholders []string
	for _, kv := range s.env.Vars {
		name, val, _ := strings.Cut(kv, "=")
		if val == "" || notSecretNames[name] {
			continue
		}
		if !secretNamePart().MatchString(name) && !secretValue().MatchString(val) {
			continue
		}
		if proxy.IsPlaceholder(name, val) {
			placeholders = append(placeholders, name)
		} else if s.env.granted(name) {
			granted = append(granted, name)
		} else {
			bad = append(bad, name)
		}
	}
	sort.Strings(bad)
	sort.Strings(granted)
	var ev []Evidence
	for _, n := range bad {
		ev = append(ev, note("%s looks secret and reaches the command", n))
	}
	if sock, ok := s.env.Getenv("SSH_AUTH_SOCK"); ok && sock != "" && !s.env.granted("SSH_AUTH_SOCK") {
		if _, err := s.env.stat(sock); err == nil {
			ev = append(ev, note("SSH_AUTH_SOCK points at a reachable ssh-agent socket"))
		}
	}
	var gev []Evidence
	for _, n := range granted {
		gev = append(gev, note("%s granted deliberately", n))
	}
	sort.Strings(placeholders)
	for _, n := range placeholders {
		gev = append(gev, note("%s holds only a placeholder: the proxy puts the real value into requests to its hosts", n))
	}
	if len(ev) > 0 {
		return failed(append(ev, gev...)...)
	}
	return passed(append([]Evidence{note("no secret-looking variable among %d", len(s.env.Vars))}, gev...)...)
}

// checkFS008: agent and VCS control surfaces shipped with the project.
func checkFS008(s *scan) outcome {
	var bad, info []Evidence
	for _, rel := range []string{".claude/settings.json", ".claude/settings.local.json"} {
		b, err := readRegular(filepath.Join(s.project, rel), 1<<20)
		if err != nil {
			continue
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(b, &doc); err != nil {
			bad = append(bad, at(rel, 0, "does not parse as JSON (%v): its hooks cannot be checked", err))
			continue
		}
		if h, ok := doc["hooks"]; ok && nonEmptyJSON(h) {
			bad = append(bad, at(rel, lineOf(b, `"hooks"`), "defines hooks that run commands automatically"))
		}
	}
	for _, rel := range []string{".claude/agents", ".claude/commands", ".claude/skills"} {
		if ents, err := os.ReadDir(filepath.Join(s.project, rel)); err == nil && len(ents) > 0 {
			bad = append(bad, at(rel, 0, "ships %s", english.Count(len(ents), "agent definition")))
		}
	}
	gitDir, err := resolveGitDir(s.project)
	if err == nil {
		relGit, _ := filepath.Rel(s.project, gitDir)
		if ents, err := os.ReadDir(filepath.Join(gitDir, "hooks")); err == nil {
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".sample") {
					continue
				}
				if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					bad = append(bad, at(filepath.ToSlash(filepath.Join(relGit, "hooks", e.Name())), 0, "executable git hook"))
				}
			}
		}
		cfg := filepath.Join(gitDir, "config")
		if b, err := readRegular(cfg, 1<<20); err == nil {
			for _, kv := range gitConfigCore(b) {
				bad = append(bad, at(filepath.ToSlash(filepath.Join(relGit, "config")), kv.line, "core.%s is set: git runs it", kv.key))
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(s.project, ".github/workflows")); err == nil && len(ents) > 0 {
		info = append(info, at(".github/workflows", 0, "%s present; changes to them are staged for review", english.Count(len(ents), "workflow")))
	}
	if len(bad) > 0 {
		return failed(append(bad, info...)...)
	}
	return passed(append([]Evidence{note("no agent hooks, agent definitions, executable git hooks, fsmonitor or hooksPath")}, info...)...)
}

// nonEmptyJSON reports a JSON value that is not null, {}, [] or "".
func nonEmptyJSON(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true // present but odd: treat as hooks
	}
	switch t := v.(type) {
	case nil:
		return false
	case map[string]any:
		return len(t) > 0
	case []any:
		return len(t) > 0
	case string:
		return t != ""
	}
	return true
}

type gitConfigEntry struct {
	key  string
	line int
}

// gitConfigCore finds core.fsmonitor and core.hooksPath in a git config file.
func gitConfigCore(b []byte) []gitConfigEntry {
	var out []gitConfigEntry
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.Index(line, "]")
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
		}
		if section != "core" || line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if (k == "fsmonitor" && v != "" && !strings.EqualFold(v, "false")) || k == "hookspath" {
			out = append(out, gitConfigEntry{key: map[string]string{"fsmonitor": "fsmonitor", "hookspath": "hooksPath"}[k], line: n})
		}
	}
	return out
}

// lineOf returns the 1-based line of the first occurrence of needle, or 0.
func lineOf(b []byte, needle string) int {
	i := bytes.Index(b, []byte(needle))
	if i < 0 {
		return 0
	}
	return bytes.Count(b[:i], []byte{'\n'}) + 1
}

// resolveGitDir finds the git directory of a project: .git itself, or the
// gitdir a .git file points at (worktrees, submodules).
func resolveGitDir(project string) (string, error) {
	dot := filepath.Join(project, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dot, nil
	}
	b, err := readRegular(dot, 4096)
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(b))
	rest, ok := strings.CutPrefix(line, "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", dot)
	}
	dir := strings.TrimSpace(rest)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(project, dir)
	}
	return dir, nil
}
