package manifest

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseYarnLockClassic(t *testing.T) {
	y, err := ParseYarnLock("yarn.lock", readFixture(t, "yarn-classic.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if y.Berry || y.Version != "1" || len(y.Entries) != 4 {
		t.Fatalf("berry %v version %q entries %d", y.Berry, y.Version, len(y.Entries))
	}
	cf := y.Entries[0]
	if !reflect.DeepEqual(cf.Specs, []string{"@babel/code-frame@^7.0.0", "@babel/code-frame@^7.10.4"}) ||
		cf.Name != "@babel/code-frame" || cf.Version != "7.12.13" || cf.Line != 5 ||
		cf.Dependencies["@babel/highlight"] != "^7.12.13" || IntegrityAlgorithms(cf.Integrity)[0] != "sha512" {
		t.Errorf("code-frame = %+v", cf)
	}
	jt := y.Entries[1]
	if !reflect.DeepEqual(jt.Specs, []string{"js-tokens@^4.0.0", "js-tokens@^4.0.1"}) || jt.Name != "js-tokens" {
		t.Errorf("js-tokens = %+v", jt)
	}
	lp := y.Entries[2]
	if lp.Integrity != "" || lp.Resolved != "http://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz" || lp.OptionalDependencies["fsevents"] != "^2.0.0" {
		t.Errorf("left-pad = %+v", lp)
	}
	if e := y.Find("js-tokens", "^4.0.1"); e == nil || e.Version != "4.0.0" {
		t.Errorf("Find js-tokens = %+v", e)
	}
	if e := y.Find("js-tokens", "^5"); e != nil {
		t.Errorf("Find js-tokens@^5 = %+v", e)
	}
	if y.Entries[3].Name != "my-fork" {
		t.Errorf("git entry name = %q", y.Entries[3].Name)
	}
}

func TestParseYarnLockBerry(t *testing.T) {
	y, err := ParseYarnLock("yarn.lock", readFixture(t, "yarn-berry.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if !y.Berry || y.Version != "8" || y.CacheKey != "10c0" || len(y.Entries) != 3 {
		t.Fatalf("berry %v version %q cacheKey %q entries %d", y.Berry, y.Version, y.CacheKey, len(y.Entries))
	}
	app, lodash, esb := y.Entries[0], y.Entries[1], y.Entries[2]
	if app.LinkType != "soft" || app.Resolved != "app@workspace:." || app.Dependencies["lodash"] != "npm:^4.17.21" {
		t.Errorf("app = %+v", app)
	}
	if lodash.Name != "lodash" || lodash.Checksum == "" || lodash.LinkType != "hard" || lodash.Resolved != "lodash@npm:4.17.21" || lodash.Line != 16 {
		t.Errorf("lodash = %+v", lodash)
	}
	if esb.Dependencies["@esbuild/linux-x64"] != "npm:0.20.2" {
		t.Errorf("esbuild = %+v", esb)
	}
	if e := y.Find("lodash", "^4.17.20"); e == nil || e.Version != "4.17.21" {
		t.Errorf("Find lodash with implied npm: = %+v", e)
	}
}

func TestParseYarnLockErrors(t *testing.T) {
	for name, in := range map[string]string{
		"unterminated quote": "\"lodash@^4:\n  version \"4.17.21\n",
		"top-level scalar":   "# yarn lockfile v1\nversion \"1\"\n",
	} {
		_, err := ParseYarnLock("yarn.lock", []byte(in))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line == 0 {
			t.Errorf("%s: err = %v, want ParseError with a line", name, err)
		}
	}
}

func TestParsePnpmLock(t *testing.T) {
	type pkg struct {
		name, version, integrity, tarball string
		build, dev                        bool
	}
	tests := []struct {
		file      string
		version   string
		importers map[string]map[string]string // path -> name -> specifier
		pkgs      []pkg
	}{
		{"pnpm-lock-v5.yaml", "5.4",
			map[string]map[string]string{".": {"esbuild": "^0.17.0", "is-number": "^7.0.0"}},
			[]pkg{
				{"esbuild", "0.17.19", "sha512-XQ0jAPFkK/u3LcVRcvVHQcTIqD6E2H1fvZMA5dQPSOWb3suUbWbfbRf94pjc0bNzRYLfIrDRQXr7X+LHIm5oHw==", "", true, false},
				{"is-number", "7.0.0", "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==", "", false, false},
				{"react-dom", "17.0.2", "sha512-s4h96KtLDUQlsENhMn1ar8t2bEa+q/YAtj8pPPdIjPDGBDIVNsrD9aXNWqspUe6AzKCIG0C1HZZLqLV7qpOBGA==", "", false, true},
			}},
		{"pnpm-lock-v6.yaml", "6.0",
			map[string]map[string]string{".": {"ms": "^2.1.3", "tarpkg": "https://example.invalid/tarpkg-1.0.0.tgz", "@types/node": "^20.0.0"}},
			[]pkg{
				{"@types/node", "20.11.5", "sha512-g557vgQjUUfN76MZAN/dt1z3dzcUsimuysco0KeluHgrPdJXkP/XdAURgyO2W9fZWHRtRBiVKzKn8vyOAwlG+w==", "", false, true},
				{"ms", "2.1.3", "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==", "", false, false},
				{"tarpkg", "1.0.0", "", "https://example.invalid/tarpkg-1.0.0.tgz", true, false},
			}},
		{"pnpm-lock-v9.yaml", "9.0",
			map[string]map[string]string{".": {"ms": "^2.1.3", "gitdep": "github:acme/gitdep#main"}, "packages/a": {"@babel/core": "7.24.0"}},
			[]pkg{
				{"@babel/core", "7.24.0", "sha512-fQfkg0Gjkza3nf0c7/w6Xf34BW4YvzNfACRLmmb7XRLa6XHdR+K9AlJlxneFfWYf6uhOzuzZVTjF/8KfndZANw==", "", false, false},
				{"gitdep", "1.0.0", "", "https://codeload.github.com/acme/gitdep/tar.gz/0123456789abcdef0123456789abcdef01234567", false, false},
				{"ms", "2.1.3", "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==", "", false, false},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			l, err := ParsePnpmLock(tt.file, readFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if l.LockfileVersion != tt.version {
				t.Errorf("version = %q", l.LockfileVersion)
			}
			got := map[string]map[string]string{}
			for _, imp := range l.Importers {
				got[imp.Path] = imp.Specifiers
			}
			if !reflect.DeepEqual(got, tt.importers) {
				t.Errorf("importers = %v, want %v", got, tt.importers)
			}
			var pkgs []pkg
			for _, p := range l.Packages {
				pkgs = append(pkgs, pkg{p.Name, p.Version, p.Integrity, p.Tarball, p.RequiresBuild, p.Dev})
				if p.Line == 0 {
					t.Errorf("%s: no line", p.Key)
				}
			}
			if !reflect.DeepEqual(pkgs, tt.pkgs) {
				t.Errorf("packages =\n%+v\nwant\n%+v", pkgs, tt.pkgs)
			}
		})
	}
}

func TestParsePnpmLockErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no version":     "packages:\n  /a/1.0.0:\n    dev: false\n",
		"bad flow":       "lockfileVersion: 5.4\npackages:\n  /a/1.0.0:\n    resolution: {integrity: 'abc}\n",
		"unterminated":   "lockfileVersion: '6.0\n",
		"sequence packs": "lockfileVersion: '9.0'\npackages:\n  - a\n",
	} {
		if _, err := ParsePnpmLock("pnpm-lock.yaml", []byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPnpmKeyNameVersion(t *testing.T) {
	for key, want := range map[string][2]string{
		"/lodash/4.17.21":                      {"lodash", "4.17.21"},
		"/@babel/core/7.0.0_supports-color@5":  {"@babel/core", "7.0.0"},
		"/lodash@4.17.21":                      {"lodash", "4.17.21"},
		"/@babel/core@7.0.0(supports-color@5)": {"@babel/core", "7.0.0"},
		"@babel/core@7.24.0":                   {"@babel/core", "7.24.0"},
		"ms@2.1.3":                             {"ms", "2.1.3"},
	} {
		n, v := pnpmKeyNameVersion(key)
		if n != want[0] || v != want[1] {
			t.Errorf("pnpmKeyNameVersion(%q) = %q %q, want %v", key, n, v, want)
		}
	}
}

func TestYAMLTree(t *testing.T) {
	in := "a:\n  b: 'it''s'\n  c: \"x\\ty\"\n  d: {k: v, 'q': \"w, z\", n: {m: 1}}\n  e: [x, 'y']\n  f: plain # comment\nlist:\n- one\n- two\nblock: |\n  line1\n  line2\nafter: 1\n"
	root, err := parseYAML("f.yaml", []byte(in), 1)
	if err != nil {
		t.Fatal(err)
	}
	a := root.get("a")
	if a.str("b") != "it's" || a.str("c") != "x\ty" || a.str("f") != "plain" {
		t.Errorf("scalars: %q %q %q", a.str("b"), a.str("c"), a.str("f"))
	}
	d := a.get("d")
	if d.str("k") != "v" || d.str("q") != "w, z" || d.get("n").str("m") != "1" {
		t.Errorf("flow map = %+v", d.strMap())
	}
	if !reflect.DeepEqual(a.get("e").list(), []string{"x", "y"}) {
		t.Errorf("flow seq = %v", a.get("e").list())
	}
	if !reflect.DeepEqual(root.get("list").list(), []string{"one", "two"}) {
		t.Errorf("block seq = %v", root.get("list").list())
	}
	if root.str("block") != "line1\nline2\n" || root.str("after") != "1" {
		t.Errorf("block scalar %q after %q", root.str("block"), root.str("after"))
	}
}

func TestParseBunLock(t *testing.T) {
	b, err := ParseBunLock("bun.lock", readFixture(t, "bun.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if b.LockfileVersion != 1 || len(b.Packages) != 2 || !reflect.DeepEqual(b.TrustedDependencies, []string{"esbuild"}) {
		t.Fatalf("bun = %+v", b)
	}
	root := b.Workspaces[""]
	if root.Name != "bunapp" || root.Dependencies["ms"] != "^2.1.3" || root.Dependencies["kleur"] != "^4.1.5" {
		t.Errorf("root workspace = %+v", root)
	}
	ms := b.Packages[1]
	if ms.Name != "ms" || ms.Version != "2.1.3" || ms.Integrity == "" || ms.Line != 21 {
		t.Errorf("ms = %+v", ms)
	}
	if _, err := ParseBunLock("bun.lock", []byte("{\"packages\": {\"a\": [1,}")); err == nil {
		t.Error("broken bun.lock parsed")
	}
}
