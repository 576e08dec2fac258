package changeset

import (
	"strings"

	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// ProtectedPath is one entry of SPEC §4's protected list: a gitignore-style pattern, matched at any
// depth, and why an agent's change to it must not reach the project silently.
type ProtectedPath struct {
	Pattern string
	// Group is the kind of tool that reads the path, for listings ("CI", "editors"...).
	Group string
	// Why names the tool that reads the path as configuration or runs it as code, unasked.
	Why string
}

// The reasons given for protected paths that are not entries of ProtectedPaths.
const (
	ConfigProtectedWhy = "protected by the config's `protected` key"
	GitShapedWhy       = "inside a directory shaped like a git repository (*.git, or HEAD with objects or refs): git runs its hooks and reads its config"
)

// ProtectedPaths is the protected list: every file that a tool on the host reads as configuration or
// runs as code without the developer asking for it (SPEC §4). It is the one place the list is kept;
// DefaultProtected, classification, review and `shadow apply --help` all read it.
var ProtectedPaths = []ProtectedPath{
	// ".git" protects a .git file (gitdir: points git elsewhere) and, as a directory, all inside it.
	{".git", "git", "git runs its hooks and reads its config (aliases, core.fsmonitor, filters) on the next git command"},
	{".gitmodules", "git", "git clones and checks out the submodules it names (clone --recursive, submodule update)"},
	{".gitattributes", "git", "git runs the filters and diff and merge drivers it names (clean, smudge, textconv) on add, checkout and diff"},
	{".lfsconfig", "git", "Git LFS reads its endpoints and transfer settings from it on every fetch, push and checkout"},
	{".githooks/**", "git", "git runs its scripts as hooks where core.hooksPath names it"},

	{".hg", "other version control", "Mercurial runs the hooks and extensions its hgrc names on the next hg command"},
	{".hgsub", "other version control", "Mercurial clones and checks out the subrepositories it names on update"},
	{".sl", "other version control", "Sapling runs the hooks and extensions its config names on the next sl command"},
	{".jj", "other version control", "Jujutsu reads its repo config (aliases, fsmonitor, diff and signing commands) on the next jj command"},

	{".github/**", "CI", "GitHub Actions runs its workflows on push"},
	{".gitlab-ci.yml", "CI", "GitLab CI runs it on push"},
	{".gitlab/**", "CI", "GitLab CI includes its files, and GitLab reads its templates and CODEOWNERS"},
	{".gitea/**", "CI", "Gitea Actions runs its workflows on push"},
	{".forgejo/**", "CI", "Forgejo Actions runs its workflows on push"},
	{".circleci/**", "CI", "CircleCI runs its config on push"},
	{"Jenkinsfile", "CI", "Jenkins runs it as the pipeline on push"},
	{".travis.yml", "CI", "Travis CI runs it on push"},
	{".buildkite/**", "CI", "Buildkite runs its pipeline on push"},
	{"azure-pipelines.yml", "CI", "Azure Pipelines runs it on push"},
	{"azure-pipelines.yaml", "CI", "Azure Pipelines runs it on push"},
	{".azure-pipelines/**", "CI", "Azure Pipelines runs the pipelines kept there on push"},
	{"bitbucket-pipelines.yml", "CI", "Bitbucket Pipelines runs it on push"},
	{".drone.yml", "CI", "Drone CI runs it on push"},
	{".woodpecker*", "CI", "Woodpecker CI runs its pipelines on push"},
	{".cirrus.yml", "CI", "Cirrus CI runs it on push"},
	{".cirrus.star", "CI", "Cirrus CI runs it (Starlark) to make its tasks on push"},
	{".semaphore/**", "CI", "Semaphore runs its pipelines on push"},
	{"appveyor.yml", "CI", "AppVeyor runs it on push"},
	{".appveyor.yml", "CI", "AppVeyor runs it on push"},
	{"cloudbuild.y*ml", "CI", "Google Cloud Build runs it on push (a trigger)"},
	{"cloudbuild.json", "CI", "Google Cloud Build runs it on push (a trigger)"},
	{"buildspec.y*ml", "CI", "AWS CodeBuild runs it on push"},
	{".tekton/**", "CI", "Tekton Pipelines as Code runs its pipelines on push and pull request"},
	{"netlify.toml", "CI", "Netlify runs its build command and plugins on push"},
	{"vercel.json", "CI", "Vercel runs its build and install commands on push"},
	{"railway.json", "CI", "Railway runs its build and start commands on push"},
	{"railway.toml", "CI", "Railway runs its build and start commands on push"},
	{"render.yaml", "CI", "Render runs the build and start commands of its blueprint on push"},
	{"codemagic.yaml", "CI", "Codemagic runs its workflows on push"},
	{".gitpod.yml", "CI", "Gitpod runs its tasks when a workspace opens"},
	{".build.yml", "CI", "sourcehut builds runs it on push"},
	{".builds/**", "CI", "sourcehut builds runs its manifests on push"},
	{"bitrise.yml", "CI", "Bitrise runs its workflows on push"},
	{".harness/**", "CI", "Harness runs its pipelines on push"},
	{".onedev-buildspec.yml", "CI", "OneDev runs its jobs on push"},
	{"renovate.json*", "CI", "Renovate reads it on its next run: the packages and registries it opens pull requests for, and its postUpgradeTasks commands"},
	{".renovaterc*", "CI", "Renovate reads it on its next run: the packages and registries it opens pull requests for, and its postUpgradeTasks commands"},

	{".husky/**", "git hooks", "husky runs its hooks on git commit and push"},
	{".pre-commit-config.yaml", "git hooks", "pre-commit runs the hooks it names on git commit"},
	{"lefthook*.yml", "git hooks", "lefthook runs the commands it names on git hooks"},
	{".lefthook*.yml", "git hooks", "lefthook runs the commands it names on git hooks"},
	{"lefthook*.yaml", "git hooks", "lefthook runs the commands it names on git hooks"},
	{".lefthook*.yaml", "git hooks", "lefthook runs the commands it names on git hooks"},
	{"lefthook*.json*", "git hooks", "lefthook runs the commands it names on git hooks"},
	{".lefthook*.json*", "git hooks", "lefthook runs the commands it names on git hooks"},
	{"lefthook*.toml", "git hooks", "lefthook runs the commands it names on git hooks"},
	{".lefthook*.toml", "git hooks", "lefthook runs the commands it names on git hooks"},
	{".overcommit.yml", "git hooks", "overcommit runs the hooks it names on git commit"},
	{".simple-git-hooks*", "git hooks", "simple-git-hooks installs the commands it names as git hooks"},
	{"simple-git-hooks.*", "git hooks", "simple-git-hooks installs the commands it names as git hooks"},
	{".huskyrc*", "git hooks", "husky 4 runs the commands it names on git hooks"},
	{"husky.config.*", "git hooks", "husky 4 runs it and the commands it names on git hooks"},
	{"lint-staged.config.*", "git hooks", "lint-staged runs it and the commands it names from the pre-commit hook"},
	{".lintstagedrc*", "git hooks", "lint-staged runs it (as code when .js, .cjs, .mjs or .ts) and the commands it names from the pre-commit hook"},
	{"commitlint.config.*", "git hooks", "commitlint runs it (as code when .js, .cjs, .mjs or .ts) from the commit-msg hook"},
	{".commitlintrc*", "git hooks", "commitlint runs it (as code when .js, .cjs, .mjs or .ts) from the commit-msg hook"},

	{".claude/**", "agents", "Claude Code reads its settings, hooks and MCP servers from it"},
	{"CLAUDE.md", "agents", "Claude Code reads it as instructions at every start"},
	{"CLAUDE.local.md", "agents", "Claude Code reads it as instructions at every start"},
	{".mcp.json", "agents", "Claude Code and other agents start the MCP servers it names"},
	{"AGENTS.md", "agents", "Codex, opencode and other agents read it as instructions at every start"},
	{"AGENTS.override.md", "agents", "Codex reads it as instructions at every start"},
	{".codex/**", "agents", "Codex CLI reads its config and MCP servers from it"},
	{".gemini/**", "agents", "Gemini CLI reads its settings, MCP servers and commands from it"},
	{"GEMINI.md", "agents", "Gemini CLI reads it as instructions at every start"},
	{".aider*", "agents", "aider reads its config (lint and test commands it runs) and env from it"},
	{"opencode.json*", "agents", "opencode reads its config, MCP servers and commands from it"},
	{".opencode/**", "agents", "opencode loads its agents, commands and plugins from it"},
	{".cursor/**", "agents", "Cursor reads its rules and MCP servers from it"},
	{".cursorrules", "agents", "Cursor reads it as instructions"},
	{".windsurf*", "agents", "Windsurf reads its rules and workflows from it"},
	{".continue/**", "agents", "Continue reads its config and MCP servers from it"},
	{".clinerules", "agents", "Cline reads its rules and workflows from it as instructions"},
	{".roo/**", "agents", "Roo Code reads its rules and MCP servers from it"},
	{".roomodes", "agents", "Roo Code reads its modes (tools and instructions) from it"},
	{".kilocode/**", "agents", "Kilo Code reads its rules, workflows and MCP servers from it"},
	{".kilocodemodes", "agents", "Kilo Code reads its modes (tools and instructions) from it"},
	{".amazonq/**", "agents", "Amazon Q Developer reads its rules and MCP servers from it"},
	{".goosehints", "agents", "Goose reads it as instructions at every start"},
	{".junie/**", "agents", "Junie reads its guidelines and MCP servers from it"},
	{".rules", "agents", "Zed's agent reads it as instructions"},
	{".kiro/**", "agents", "Kiro runs its hooks and reads its steering and MCP servers from it"},
	{"crush.json", "agents", "Crush reads its config, MCP servers and language servers from it"},
	{".crush.json", "agents", "Crush reads its config, MCP servers and language servers from it"},
	{"AGENT.md", "agents", "Amp and other agents read it as instructions at every start"},
	{".qwen/**", "agents", "Qwen Code reads its settings and MCP servers from it"},
	{"QWEN.md", "agents", "Qwen Code reads it as instructions at every start"},
	{".trae/**", "agents", "Trae reads its rules and MCP servers from it"},
	{".augment/**", "agents", "Augment reads its settings, rules and MCP servers from it"},
	{".augment-guidelines", "agents", "Augment reads it as instructions"},
	{".openhands/**", "agents", "OpenHands runs its setup script and reads its microagents from it"},
	{"WARP.md", "agents", "Warp's agent reads it as instructions at every start"},

	{".vscode/**", "editors", "VS Code runs its tasks and applies its settings (terminal env, interpreters) on open"},
	{".idea/**", "editors", "JetBrains IDEs run its run configurations and apply its settings on open"},
	{".zed/**", "editors", "Zed reads its settings and tasks (language servers, commands) from it"},
	{".helix/**", "editors", "Helix reads its config and language servers from it"},
	{".nvim.lua", "editors", "Neovim runs it on start with 'exrc' set"},
	{".nvimrc", "editors", "Neovim runs it on start with 'exrc' set"},
	{".exrc", "editors", "Vim and Neovim run it on start with 'exrc' set"},
	{".vimrc", "editors", "Vim runs it on start with 'exrc' set"},
	{".lazy.lua", "editors", "lazy.nvim runs it on start in the project"},
	{".devcontainer/**", "editors", "Dev Containers build and run it (Dockerfile, postCreateCommand) on open"},
	{".devcontainer.json", "editors", "Dev Containers build and run it (postCreateCommand) on open"},

	{".envrc", "environment and tool managers", "direnv runs it on cd"},
	{".mise.toml", "environment and tool managers", "mise reads its tools, env and tasks from it on cd"},
	{"mise.toml", "environment and tool managers", "mise reads its tools, env and tasks from it on cd"},
	{".mise.*.toml", "environment and tool managers", "mise reads its tools, env and tasks from it on cd"},
	{"mise.*.toml", "environment and tool managers", "mise reads its tools, env and tasks from it on cd"},
	{".mise/**", "environment and tool managers", "mise reads its config and tasks from it on cd"},
	{".config/mise/**", "environment and tool managers", "mise reads its config and tasks from it on cd"},
	{".tool-versions", "environment and tool managers", "asdf and mise pick the tool versions, so the binaries run, from it on cd"},
	{"bunfig.toml", "environment and tool managers", "Bun reads its preload scripts and registry from it on every bun command"},
	{".npmrc", "environment and tool managers", "npm and pnpm read registries, tokens and script settings from it"},
	{".yarnrc*", "environment and tool managers", "Yarn reads its registry, plugins and yarnPath (a script it runs) from it"},
	{".pnpmfile.cjs", "environment and tool managers", "pnpm runs it on every install"},
	{".cargo/config*", "environment and tool managers", "Cargo reads its runners, linkers and aliases from it on every build"},
	{"rust-toolchain*", "environment and tool managers", "rustup runs the toolchain it names, which may be a path into the project, for every cargo and rustc command"},

	{".shadow.toml", "shadow", "shadow reads it as the project's config (protected paths, policy)"},

	{".bashrc", "shell rc files", "bash runs it at every interactive start"},
	{".bash_profile", "shell rc files", "bash runs it at login"},
	{".bash_login", "shell rc files", "bash runs it at login"},
	{".bash_logout", "shell rc files", "bash runs it at logout"},
	{".profile", "shell rc files", "sh and bash run it at login"},
	{".zshrc", "shell rc files", "zsh runs it at every interactive start"},
	{".zshenv", "shell rc files", "zsh runs it at every start"},
	{".zprofile", "shell rc files", "zsh runs it at login"},
	{".zlogin", "shell rc files", "zsh runs it at login"},
	{".zlogout", "shell rc files", "zsh runs it at logout"},
	{".kshrc", "shell rc files", "ksh runs it at every interactive start"},
	{".mkshrc", "shell rc files", "mksh runs it at every interactive start"},
	{".cshrc", "shell rc files", "csh and tcsh run it at every start"},
	{".tcshrc", "shell rc files", "tcsh runs it at every start"},
	{".login", "shell rc files", "csh and tcsh run it at login"},
	{"fish/config.fish", "shell rc files", "fish runs it at every start"},
	{"fish/conf.d/**", "shell rc files", "fish runs its files at every start"},
}

// DefaultProtected is the patterns of ProtectedPaths. Config's `protected` key extends it.
var DefaultProtected = protectedPatterns(ProtectedPaths)

func protectedPatterns(list []ProtectedPath) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Pattern
	}
	return out
}

// ProtectedRules compiles patterns so that each matches at any depth.
func ProtectedRules(patterns []string) []ignoreRule {
	var rules []ignoreRule
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		p = strings.TrimPrefix(p, "/")
		dirOnly := strings.HasSuffix(p, "/")
		p = strings.TrimRight(p, "/")
		if strings.Contains(p, "/") && !strings.HasPrefix(p, "**/") {
			p = "**/" + p
		}
		rules = append(rules, ignoreRule{pattern: p, negate: neg, dirOnly: dirOnly, anchored: strings.Contains(p, "/")})
		if dirOnly {
			// A protected directory protects what is inside it.
			rules = append(rules, ignoreRule{pattern: p + "/**", negate: neg, anchored: true})
		}
	}
	return rules
}

// IsProtected reports whether p, or a directory above it, matches a protected rule.
func IsProtected(rules []ignoreRule, p string) bool {
	prot := false
	for _, r := range rules {
		if r.match(p, false) {
			prot = !r.negate
		}
	}
	if prot {
		return true
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		for _, r := range rules {
			if !r.negate && r.match(d, true) {
				return true
			}
		}
	}
	return false
}

// protectedMatcher is the protected list compiled, each rule with the reason of its entry.
type protectedMatcher struct {
	rules []ignoreRule
	whys  []string // whys[i] is the reason of rules[i]
}

// NewProtectedMatcher compiles a protected list (ProtectedPaths) and the config's extra patterns.
func NewProtectedMatcher(list []ProtectedPath, extra []string) *protectedMatcher {
	m := &protectedMatcher{}
	add := func(pattern, why string) {
		for _, r := range ProtectedRules([]string{pattern}) {
			m.rules = append(m.rules, r)
			m.whys = append(m.whys, why)
		}
	}
	for _, p := range list {
		add(p.Pattern, p.Why)
	}
	for _, p := range extra {
		add(p, ConfigProtectedWhy)
	}
	return m
}

// Why says why p is protected, or "" when it is not. It decides as IsProtected does (the last rule
// matching p wins; a protected directory above p protects it) and names the first entry that
// protects p, so that the list's own reason is given before the config's.
func (m *protectedMatcher) Why(p string) string {
	first := -1
	for i, r := range m.rules {
		if !r.match(p, false) {
			continue
		}
		if r.negate {
			first = -1
		} else if first < 0 {
			first = i
		}
	}
	if first >= 0 {
		return m.whys[first]
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		for j, r := range m.rules {
			if !r.negate && r.match(d, true) {
				return m.whys[j]
			}
		}
	}
	return ""
}

// looksLikeGitDir reports whether dir (in the staged view: upper first, then host) holds a HEAD
// file and an objects or refs directory, the shape git recognises as a repository.
func looksLikeGitDir(upper, host *projectfs.Root, dir string) bool {
	exists := func(name string) bool {
		for _, root := range []*projectfs.Root{upper, host} {
			if h, err := root.Lstat(projectfs.RelJoin(dir, name)); err == nil && h.Exists {
				return true
			}
		}
		return false
	}
	return exists("HEAD") && (exists("objects") || exists("refs"))
}

// The reasons the dot-file rule gives (SPEC §4): a list always trails the tools, and tools read
// dot-files and dot-directories as their configuration, so a change to any path with an element
// starting with '.' is protected, unless the user's config takes it off (`unprotected`).
const (
	NewDotFileWhy     = "new dot-file: tools read dot-files as configuration"
	ChangedDotFileWhy = "changed dot-file: tools read dot-files as configuration"
	DeletedDotFileWhy = "deleted dot-file: tools read dot-files as configuration"
	NewDotDirWhy      = "in a new dot-directory: tools read dot-directories as configuration"
	DotDirWhy         = "in a dot-directory: tools read dot-directories as configuration"
)

// DotWhy says why the dot-file rule protects a change of p, or "" when it does not: no element of
// p starts with '.', or the config takes each such element off (a negated pattern, from the
// `unprotected` key or a `!` in `protected`, matching it or a path below it that leads to p).
// st is the change's status; baseHasDir reports whether the base has a directory.
func (m *protectedMatcher) DotWhy(p string, st Status, baseHasDir func(string) bool) string {
	parts := strings.Split(p, "/")
	for i, e := range parts {
		if !strings.HasPrefix(e, ".") || m.exempt(parts, i) {
			continue
		}
		if i < len(parts)-1 {
			if baseHasDir(strings.Join(parts[:i+1], "/")) {
				return DotDirWhy
			}
			return NewDotDirWhy
		}
		switch st {
		case Added:
			return NewDotFileWhy
		case Deleted:
			return DeletedDotFileWhy
		}
		return ChangedDotFileWhy
	}
	return ""
}

// exempt reports whether the config takes the element i of the path parts off the dot-file rule:
// the last rule matching that element's path, or one below it on the way to the path, negates.
func (m *protectedMatcher) exempt(parts []string, i int) bool {
	for j := i + 1; j <= len(parts); j++ {
		d := strings.Join(parts[:j], "/")
		neg := false
		for _, r := range m.rules {
			if r.match(d, j < len(parts)) {
				neg = r.negate
			}
		}
		if neg {
			return true
		}
	}
	return false
}
