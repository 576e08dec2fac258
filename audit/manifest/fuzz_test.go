package manifest

import (
	"errors"
	"testing"
)

// addSeeds adds fixture files and small hand-written inputs to a fuzz corpus.
func addSeeds(f *testing.F, fixtures []string, extra ...string) {
	for _, name := range fixtures {
		f.Add(readFixture(f, name))
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// checkResult fails when a parser returns neither a value nor an error, or an
// error that does not name the file.
func checkResult[T any](t *testing.T, v *T, err error) {
	t.Helper()
	if err == nil && v == nil {
		t.Fatal("nil result without an error")
	}
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Path != "fuzz" {
			t.Fatalf("error %v is not a ParseError naming the file", err)
		}
	}
}

func FuzzPackageJSON(f *testing.F) {
	addSeeds(f, []string{"package.json", "npm-v3-package.json"}, `{"bin":"x","name":"@s/n"}`, `{"overrides":{"a":{"b":{".":"1"}}}}`, `[]`, `{"workspaces":{"packages":[1,"a"]}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePackageJSON("fuzz", data)
		checkResult(t, p, err)
		if p != nil {
			for _, d := range p.Deps {
				ClassifySpec(d.Spec).Pinned()
			}
			p.AllowsScripts("x")
		}
	})
}

func FuzzClassifySpec(f *testing.F) {
	for _, s := range []string{"^1", "npm:a@npm:b@1", "github:a/b#c", "git@h:a", "https://github.com/a/b", "file:x", "a/b", "C:\\x", "git+http://[::1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := ClassifySpec(s)
		if d.Kind == "" {
			t.Fatalf("no kind for %q", s)
		}
		if d.Commit != "" && !isHex40(d.Commit) {
			t.Fatalf("commit %q is not 40 hex", d.Commit)
		}
		d.Pinned()
	})
}

func FuzzPackageLock(f *testing.F) {
	addSeeds(f, []string{"npm-v3-package-lock.json", "package-lock-v2.json", "package-lock-v1.json"}, `{"dependencies":{"a":{"dependencies":{"b":{}}}}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParsePackageLock("fuzz", data)
		checkResult(t, l, err)
		if l != nil {
			l.Root()
		}
	})
}

func FuzzYarnLock(f *testing.F) {
	addSeeds(f, []string{"yarn-classic.lock", "yarn-berry.lock"}, "a@1:\n  version \"1\"\n  dependencies:\n    - b\n", "\"a\":\n  x: {y: [1, {z: '2'}]}\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		y, err := ParseYarnLock("fuzz", data)
		checkResult(t, y, err)
		if y != nil {
			y.Find("a", "^1")
		}
	})
}

func FuzzPnpmLock(f *testing.F) {
	addSeeds(f, []string{"pnpm-lock-v5.yaml", "pnpm-lock-v6.yaml", "pnpm-lock-v9.yaml"}, "lockfileVersion: 9\npackages:\n  '@':\n    resolution: {\n      integrity: x}\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParsePnpmLock("fuzz", data)
		checkResult(t, l, err)
	})
}

func FuzzBunLock(f *testing.F) {
	addSeeds(f, []string{"bun.lock"}, `{"packages":{"a":["@",{},1]},}`, "{/* c */\"a\":1,// x\n}")
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBunLock("fuzz", data)
		checkResult(t, b, err)
	})
}

func FuzzCargoToml(f *testing.F) {
	addSeeds(f, []string{"Cargo.toml"}, "[package]\nbuild = true\n[target.'cfg(x)'.dependencies]\na = {git='g'}\n", "a = [[[{b = [1]}]]]\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCargoToml("fuzz", data)
		checkResult(t, c, err)
	})
}

func FuzzCargoLock(f *testing.F) {
	addSeeds(f, []string{"Cargo.lock", "Cargo-v1.lock"}, "package = [1, 'a']\n", "[[package]]\nname = 1\n[metadata]\nx = 2\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseCargoLock("fuzz", data)
		checkResult(t, l, err)
	})
}

func FuzzCargoConfig(f *testing.F) {
	addSeeds(f, []string{"cargo/config.toml"}, "[target.x]\nrunner = [1, 'a']\n[env]\nA = 1\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCargoConfig("fuzz", data)
		checkResult(t, c, err)
	})
}

func FuzzNpmrc(f *testing.F) {
	addSeeds(f, []string{"npmrc"}, "[x]\n//:_authToken=\"\\u0041\"\n@:registry\n=\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseNpmrc("fuzz", data)
		checkResult(t, n, err)
		if n != nil {
			n.ScopeRegistries()
			for _, e := range n.Entries {
				e.Unmasked()
			}
		}
	})
}

func FuzzYarnrc(f *testing.F) {
	addSeeds(f, []string{"yarnrc.yml"}, "plugins:\n- a\n-\n  - path: b\nnpmScopes: {a: {npmAuthToken: x}}\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		y, err := ParseYarnrc("fuzz", data)
		checkResult(t, y, err)
	})
}

func FuzzRustTokens(f *testing.F) {
	addSeeds(f, []string{"build.rs"}, "use a::{b::{c as d, self}, *};", "r##\"x\"#", "'\\u{1F600}' b'\\'' 'a", "/*/**/", "\"\\u{110000}\"")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ScanRust("fuzz", data)
		if s == nil {
			t.Fatalf("no result (err %v)", err)
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v has no line", err)
			}
		}
		s.Mentions("std::process::Command")
		for _, p := range s.Paths {
			s.Resolve(p.Text)
		}
	})
}

func FuzzJSScan(f *testing.F) {
	addSeeds(f, []string{"hook.js"}, "`${`${{}}`}`", "x = /[/]/ / 2 /* */", "eval(", "#!", "'\\")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ScanJS("fuzz", data)
		if err != nil || s == nil {
			t.Fatalf("ScanJS failed on small input: %v", err)
		}
		if s.LongestLine > len(data) {
			t.Fatalf("longest line %d > input %d", s.LongestLine, len(data))
		}
	})
}

func FuzzYarnrcClassic(f *testing.F) {
	f.Add([]byte("registry \"https://r/\"\n\"@a:registry\" x\n--k\n\"\n"))
	f.Add([]byte("yarn-path \".yarn/releases/yarn-1.22.19.cjs\"\n--install.ignore-scripts false\n'single' 'v'\r\n# c\n\"esc\\\"aped\" \"\\u00e9\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		y, err := ParseYarnrcClassic("fuzz", data)
		checkResult(t, y, err)
	})
}
