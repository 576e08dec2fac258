package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParsePackageJSON(t *testing.T) {
	p, err := ParsePackageJSON("package.json", readFixture(t, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "@acme/widget" || p.Version != "2.3.0" || !p.Private {
		t.Errorf("name/version/private = %q %q %v", p.Name, p.Version, p.Private)
	}
	if got := p.Scripts["postinstall"]; !strings.Contains(got, "curl -fsSL") {
		t.Errorf("postinstall = %q", got)
	}
	if p.ScriptLines["postinstall"] != 9 || p.ScriptLines["preinstall"] != 8 {
		t.Errorf("script lines = %v", p.ScriptLines)
	}
	if !p.HasLifecycleScript() {
		t.Error("HasLifecycleScript = false")
	}
	if p.Dependencies["lodash"] != "4.17.21" || p.DevDependencies["typescript"] != "~5.4.0" ||
		p.OptionalDependencies["fsevents"] != "^2.3.3" || p.PeerDependencies["react"] != ">=17" {
		t.Errorf("dependency maps wrong: %v %v %v %v", p.Dependencies, p.DevDependencies, p.OptionalDependencies, p.PeerDependencies)
	}
	if len(p.Deps) != 11 {
		t.Fatalf("Deps has %d entries, want 11", len(p.Deps))
	}
	if d := p.Deps[0]; d.Name != "left-pad" || d.Section != SectionDependencies || d.Line != 13 {
		t.Errorf("first dep = %+v", d)
	}
	if d := p.Deps[len(p.Deps)-1]; d.Name != "react" || d.Section != SectionPeerDependencies {
		t.Errorf("last dep = %+v", d)
	}
	if !reflect.DeepEqual(p.Bin, map[string]string{"widget": "./cli.js"}) {
		t.Errorf("bin = %v", p.Bin)
	}
	if !reflect.DeepEqual(p.Workspaces, []string{"packages/*", "tools/cli"}) {
		t.Errorf("workspaces = %v", p.Workspaces)
	}
	if !p.LavamoatAllowScripts["esbuild"] || p.LavamoatAllowScripts["core-js"] {
		t.Errorf("lavamoat = %v", p.LavamoatAllowScripts)
	}
	if p.Pnpm == nil || !p.Pnpm.HasOnlyBuilt || !p.Pnpm.HasNeverBuilt || len(p.Pnpm.NeverBuiltDependencies) != 0 ||
		!reflect.DeepEqual(p.Pnpm.OnlyBuiltDependencies, []string{"esbuild"}) {
		t.Errorf("pnpm = %+v", p.Pnpm)
	}
	if !p.HasTrustedDependencies || !reflect.DeepEqual(p.TrustedDependencies, []string{"sharp"}) {
		t.Errorf("trustedDependencies = %v", p.TrustedDependencies)
	}
	if p.Gypfile == nil || *p.Gypfile {
		t.Errorf("gypfile = %v", p.Gypfile)
	}
	if p.PublishConfig["registry"] != "https://npm.acme.invalid/" {
		t.Errorf("publishConfig = %v", p.PublishConfig)
	}
	wantOv := map[string]string{"semver": "7.5.4", "foo": "1.0.0", "foo>bar": "2.0.0"}
	if !reflect.DeepEqual(p.Overrides, wantOv) {
		t.Errorf("overrides = %v, want %v", p.Overrides, wantOv)
	}
	for _, name := range []string{"esbuild", "sharp"} {
		if !p.AllowsScripts(name) {
			t.Errorf("AllowsScripts(%q) = false", name)
		}
	}
	if p.AllowsScripts("core-js") {
		t.Error("AllowsScripts(core-js) = true")
	}
	if p.KeyLines["gypfile"] != 45 {
		t.Errorf("gypfile line = %d", p.KeyLines["gypfile"])
	}
}

func TestParsePackageJSONShapes(t *testing.T) {
	tests := []struct {
		name, in string
		check    func(*PackageJSON) bool
	}{
		{"bin map", `{"name":"x","bin":{"node":"./n.js","x":"./x.js"}}`, func(p *PackageJSON) bool {
			return p.Bin["node"] == "./n.js" && p.Bin["x"] == "./x.js"
		}},
		{"bin string unscoped", `{"bin":"./a.js","name":"tool"}`, func(p *PackageJSON) bool { return p.Bin["tool"] == "./a.js" }},
		{"workspaces array", `{"workspaces":["a","b"]}`, func(p *PackageJSON) bool { return len(p.Workspaces) == 2 }},
		{"wrong types ignored", `{"name":1,"scripts":{"postinstall":["x"],"test":"t"},"dependencies":[]}`, func(p *PackageJSON) bool {
			return p.Name == "" && p.Scripts["test"] == "t" && len(p.Scripts) == 1 && len(p.Dependencies) == 0
		}},
		{"duplicate section last wins", `{"dependencies":{"a":"1"},"dependencies":{"b":"2"}}`, func(p *PackageJSON) bool {
			return len(p.Deps) == 1 && p.Deps[0].Name == "b"
		}},
		{"dependenciesMeta", `{"dependenciesMeta":{"esbuild":{"built":false,"x":"y"},"a":1}}`, func(p *PackageJSON) bool {
			m := p.DependenciesMeta["esbuild"]
			b, ok := m["built"]
			return ok && !b && len(m) == 1 && len(p.DependenciesMeta) == 2
		}},
		{"no pnpm field", `{}`, func(p *PackageJSON) bool { return p.Pnpm == nil && !p.HasTrustedDependencies && p.Gypfile == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePackageJSON("package.json", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(p) {
				t.Errorf("unexpected result %+v", p)
			}
		})
	}
}

func TestParsePackageJSONErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
	}{
		{"not json", "hello", 1},
		{"array", "[1,2]", 1},
		{"truncated", "{\n  \"name\": \"x\",\n  \"scripts\": {\n", 4},
		{"syntax on line 3", "{\n \"a\": 1,\n \"b\": ,\n}", 3},
		{"trailing data", "{} {}", 1},
		{"empty", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePackageJSON("dir/package.json", []byte(tt.in))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *ParseError", err)
			}
			if pe.Path != "dir/package.json" || pe.Line != tt.line {
				t.Errorf("err = %v (line %d), want line %d", err, pe.Line, tt.line)
			}
			if errors.Is(err, ErrTooLarge) {
				t.Error("syntax error reported as too large")
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte{' '}, MaxLockfileSize+1)
	parsers := map[string]func() error{
		"package.json": func() error { _, err := ParsePackageJSON("p", big[:MaxManifestSize+1]); return err },
		"package-lock": func() error { _, err := ParsePackageLock("p", big); return err },
		"yarn.lock":    func() error { _, err := ParseYarnLock("p", big); return err },
		"pnpm-lock":    func() error { _, err := ParsePnpmLock("p", big); return err },
		"bun.lock":     func() error { _, err := ParseBunLock("p", big); return err },
		"Cargo.toml":   func() error { _, err := ParseCargoToml("p", big[:MaxManifestSize+1]); return err },
		"Cargo.lock":   func() error { _, err := ParseCargoLock("p", big[:MaxCargoLockSize+1]); return err },
		"cargo config": func() error { _, err := ParseCargoConfig("p", big[:MaxConfigSize+1]); return err },
		".npmrc":       func() error { _, err := ParseNpmrc("p", big[:MaxConfigSize+1]); return err },
		".yarnrc.yml":  func() error { _, err := ParseYarnrc("p", big[:MaxConfigSize+1]); return err },
		".yarnrc":      func() error { _, err := ParseYarnrcClassic("p", big[:MaxConfigSize+1]); return err },
		"build.rs":     func() error { _, err := ScanRust("p", big[:MaxSourceSize+1]); return err },
		"hook.js":      func() error { _, err := ScanJS("p", big[:MaxSourceSize+1]); return err },
	}
	for name, parse := range parsers {
		if err := parse(); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: err = %v, want ErrTooLarge", name, err)
		}
	}
	// Too many entries within the size cap is refused the same way.
	many := []byte(strings.Repeat("a:\n", maxEntries+1))
	if _, err := ParseYarnLock("yarn.lock", many); !errors.Is(err, ErrTooLarge) {
		t.Errorf("yarn.lock with too many entries: err = %v", err)
	}
	// At the cap the parsers run (and here fail on content, not size).
	if _, err := ParsePackageJSON("p", big[:MaxManifestSize]); err == nil || errors.Is(err, ErrTooLarge) {
		t.Errorf("package.json at the cap: err = %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "package.json")
	if err := os.WriteFile(p, []byte(`{"name":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(p, 12); err != nil || string(data) != `{"name":"x"}` {
		t.Errorf("ReadFile at limit = %q, %v", data, err)
	}
	if _, err := ReadFile(p, 11); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over limit: err = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile missing: err = %v", err)
	}
	if _, err := ReadFile(dir, 10); err == nil {
		t.Error("ReadFile of a directory succeeded")
	}
}

func TestClassifySpec(t *testing.T) {
	const sha = "9f2c3a1b4d5e6f708192a3b4c5d6e7f8091a2b3c"
	tests := []struct {
		spec   string
		kind   SpecKind
		host   string
		commit string
		pinned bool
		insec  bool
	}{
		{"^1.2.3", SpecRegistry, "", "", false, false},
		{"1.2.3", SpecRegistry, "", "", true, false},
		{"latest", SpecRegistry, "", "", false, false},
		{"*", SpecRegistry, "", "", false, false},
		{"", SpecRegistry, "", "", false, false},
		{">=1.0.0 <2.0.0 || 3.x", SpecRegistry, "", "", false, false},
		{"git+ssh://git@github.com/acme/x.git#" + sha, SpecGit, "github.com", sha, true, false},
		{"git+https://github.com/acme/x.git", SpecGit, "github.com", "", false, false},
		{"git+https://github.com/acme/x.git#v1.0.0", SpecGit, "github.com", "", false, false},
		{"git://github.com/acme/x.git#" + sha, SpecGit, "github.com", sha, true, true},
		{"github:acme/x", SpecGit, "github.com", "", false, false},
		{"github:acme/x#" + sha, SpecGit, "github.com", sha, true, false},
		{"gitlab:acme/x#semver:^1.0", SpecGit, "gitlab.com", "", false, false},
		{"acme/x", SpecGit, "github.com", "", false, false},
		{"acme/x#" + sha, SpecGit, "github.com", sha, true, false},
		{"git@github.com:acme/x.git", SpecGit, "github.com", "", false, false},
		{"git+ssh://git@github.com:acme/x.git#" + sha, SpecGit, "github.com", sha, true, false},
		{"git+https://user:pw@git.acme.invalid:8443/x.git", SpecGit, "git.acme.invalid", "", false, false},
		{"https://[::1]:8080/x.tgz", SpecURL, "::1", "", false, false},
		{"https://github.com/acme/x", SpecGit, "github.com", "", false, false},
		{"https://example.invalid/x-1.0.0.tgz", SpecURL, "example.invalid", "", false, false},
		{"http://example.invalid/x-1.0.0.tgz", SpecURL, "example.invalid", "", false, true},
		{"https://github.com/acme/x/archive/main.tar.gz", SpecURL, "github.com", "", false, false},
		{"file:../x", SpecPath, "", "", false, false},
		{"link:../x", SpecPath, "", "", false, false},
		{"portal:../x", SpecPath, "", "", false, false},
		{"./vendor/x", SpecPath, "", "", false, false},
		{"../x", SpecPath, "", "", false, false},
		{"/abs/x", SpecPath, "", "", false, false},
		{"~/x", SpecPath, "", "", false, false},
		{"workspace:*", SpecWorkspace, "", "", false, false},
		{"workspace:^1.0.0", SpecWorkspace, "", "", false, false},
		{"npm:real@^3.0.0", SpecAlias, "", "", false, false},
		{"npm:real@3.0.0", SpecAlias, "", "", true, false},
		{"npm:@s/real@1.0.0", SpecAlias, "", "", true, false},
		{"catalog:", SpecCatalog, "", "", false, false},
		{"patch:lodash@npm%3A4.17.21#./p.patch", SpecPatch, "", "", false, false},
		{"exec:./gen.js", SpecExec, "", "", false, false},
	}
	for _, tt := range tests {
		d := ClassifySpec(tt.spec)
		if d.Kind != tt.kind || d.Host != tt.host || d.Commit != tt.commit || d.Pinned() != tt.pinned || d.Insecure != tt.insec {
			t.Errorf("ClassifySpec(%q) = kind %s host %q commit %q pinned %v insecure %v; want %s %q %q %v %v",
				tt.spec, d.Kind, d.Host, d.Commit, d.Pinned(), d.Insecure, tt.kind, tt.host, tt.commit, tt.pinned, tt.insec)
		}
	}
	if d := ClassifySpec("npm:@s/real@^1"); d.AliasName != "@s/real" || d.Alias == nil || d.Alias.Raw != "^1" {
		t.Errorf("alias = %+v", d)
	}
	if d := ClassifySpec("file:../x"); d.Path != "../x" {
		t.Errorf("file path = %q", d.Path)
	}
}

func TestIntegrityAndRegistry(t *testing.T) {
	if got := IntegrityAlgorithms("sha1-abc= sha512-def=="); !reflect.DeepEqual(got, []string{"sha1", "sha512"}) {
		t.Errorf("IntegrityAlgorithms = %v", got)
	}
	if IntegrityAlgorithms("") != nil {
		t.Error("empty integrity has algorithms")
	}
	for u, want := range map[string]bool{
		"https://registry.npmjs.org/ms/-/ms-2.1.3.tgz":     true,
		"https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz":   true,
		"http://registry.npmjs.org/ms/-/ms-2.1.3.tgz":      false,
		"https://npm.acme.invalid/ms/-/ms-2.1.3.tgz":       false,
		"https://registry.npmjs.org.evil.invalid/ms.tgz":   false,
		"git+https://registry.npmjs.org/ms/-/ms-2.1.3.tgz": false,
	} {
		if IsDefaultRegistry(u) != want {
			t.Errorf("IsDefaultRegistry(%q) = %v", u, !want)
		}
	}
}

func TestParsePackageLockV3Real(t *testing.T) {
	l, err := ParsePackageLock("package-lock.json", readFixture(t, "npm-v3-package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if l.LockfileVersion != 3 || l.Name != "lockfixture" || len(l.Packages) != 4 {
		t.Fatalf("lock = v%d %q with %d packages", l.LockfileVersion, l.Name, len(l.Packages))
	}
	root := l.Root()
	if root == nil || root.Dependencies["ms"] != "^2.1.3" || root.DevDependencies["kleur"] != "^4.1.5" {
		t.Fatalf("root = %+v", root)
	}
	byName := map[string]LockPackage{}
	for _, p := range l.Packages[1:] {
		byName[p.Name] = p
		if !IsDefaultRegistry(p.Resolved) || !reflect.DeepEqual(IntegrityAlgorithms(p.Integrity), []string{"sha512"}) {
			t.Errorf("%s: resolved %q integrity %q", p.Path, p.Resolved, p.Integrity)
		}
		if p.Line == 0 {
			t.Errorf("%s: no line", p.Path)
		}
	}
	if !byName["kleur"].Dev || byName["ms"].Dev || byName["ms"].Version != "2.1.3" || byName["ms"].License != "MIT" {
		t.Errorf("entries = %+v", byName)
	}
}

func TestParsePackageLockV2(t *testing.T) {
	l, err := ParsePackageLock("package-lock.json", readFixture(t, "package-lock-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if l.LockfileVersion != 2 || len(l.Packages) != 6 {
		t.Fatalf("v%d, %d packages", l.LockfileVersion, len(l.Packages))
	}
	byPath := map[string]LockPackage{}
	for _, p := range l.Packages {
		byPath[p.Path] = p
	}
	native := byPath["node_modules/@scope/native"]
	if native.Name != "@scope/native" || !native.HasInstallScript || !native.Optional || native.Bin["native-cli"] != "bin/cli.js" || native.Line != 17 {
		t.Errorf("native = %+v", native)
	}
	if lp := byPath["node_modules/evil/node_modules/left-pad"]; lp.Name != "left-pad" || lp.Integrity != "sha1-W4o6d2Xf4AEmHd6RVYnngvjJTR4=" || !lp.Dev {
		t.Errorf("nested = %+v", lp)
	}
	if ws := byPath["node_modules/ws-pkg"]; !ws.Link || ws.Resolved != "packages/ws-pkg" {
		t.Errorf("link = %+v", ws)
	}
	if byPath["node_modules/evil"].Integrity != "" {
		t.Error("evil has integrity")
	}
	if !l.Root().HasInstallScript {
		t.Error("root hasInstallScript lost")
	}
}

func TestParsePackageLockV1(t *testing.T) {
	l, err := ParsePackageLock("package-lock.json", readFixture(t, "package-lock-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if l.LockfileVersion != 1 || l.Root() != nil {
		t.Fatalf("v%d root %v", l.LockfileVersion, l.Root())
	}
	var paths []string
	byPath := map[string]LockPackage{}
	for _, p := range l.Packages {
		paths = append(paths, p.Path)
		byPath[p.Path] = p
	}
	want := []string{"node_modules/debug", "node_modules/debug/node_modules/ms", "node_modules/git-dep", "node_modules/ms"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths = %v", paths)
	}
	if g := byPath["node_modules/git-dep"]; !strings.HasPrefix(g.Resolved, "git+https://") {
		t.Errorf("git dep resolved = %q", g.Resolved)
	}
	if ms := byPath["node_modules/ms"]; !ms.Dev || !strings.HasPrefix(ms.Resolved, "http://") || ms.Line != 26 {
		t.Errorf("ms = %+v", ms)
	}
	if d := byPath["node_modules/debug"]; d.Dependencies["ms"] != "2.0.0" || d.Line != 7 {
		t.Errorf("debug = %+v", d)
	}
}

func TestParsePackageLockErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        "lockfileVersion: 3",
		"packages typed":  `{"lockfileVersion":3,"packages":{"node_modules/a":{"version":1}}}`,
		"truncated":       `{"lockfileVersion":3,"packages":{"node_modules/a":{`,
		"number document": `3`,
	} {
		if _, err := ParsePackageLock("package-lock.json", []byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "package-lock.json") {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
}

func TestNameFromPath(t *testing.T) {
	for in, want := range map[string]string{
		"node_modules/a":                            "a",
		"node_modules/a/node_modules/@s/b":          "@s/b",
		"node_modules/.pnpm/c@1.0.0/node_modules/c": "c",
		"packages/x":                                "",
	} {
		if got := NameFromPath(in); got != want {
			t.Errorf("NameFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}
