package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	pkg := func(name string) string { return fmt.Sprintf(`{"name":%q,"version":"1.0.0"}`, name) }
	writeTree(t, root, map[string]string{
		"package.json":                               pkg("root"),
		"package-lock.json":                          `{"lockfileVersion":3}`,
		".npmrc":                                     "registry=https://registry.npmjs.org/\n",
		".yarnrc.yml":                                "nodeLinker: node-modules\n",
		"Cargo.toml":                                 "[package]\nname = \"r\"\n",
		"Cargo.lock":                                 "version = 3\n",
		"build.rs":                                   "fn main() {}\n",
		".cargo/config.toml":                         "[build]\n",
		"src/build.rs":                               "fn main() {}\n", // not next to a Cargo.toml
		"src/config.toml":                            "",               // not in .cargo
		"target/debug/Cargo.toml":                    "",               // Cargo's output
		".git/package.json":                          pkg("git"),
		"crates/c/Cargo.toml":                        "[package]\nname = \"c\"\n",
		"crates/c/build.rs":                          "fn main() {}\n",
		"crates/c/.cargo/config":                     "[build]\n",
		"packages/w/package.json":                    pkg("w"),
		"packages/w/binding.gyp":                     "{}",
		"packages/w/node_modules/f/package.json":     pkg("f"),
		"pnpm-lock.yaml":                             "lockfileVersion: '9.0'\n",
		"yarn.lock":                                  "",
		"bun.lockb":                                  "",
		"node_modules/.package-lock.json":            `{"lockfileVersion":3}`,
		"node_modules/.bin/a":                        "",
		"node_modules/a/package.json":                pkg("a"),
		"node_modules/a/binding.gyp":                 "{}",
		"node_modules/@s/c/npm-shrinkwrap.json":      "{}",
		"node_modules/a/node_modules/b/package.json": pkg("b"),
		"node_modules/a/node_modules/b/node_modules/b2/package.json":   pkg("b2"),
		"node_modules/a/test/node_modules/z/package.json":              pkg("z"),
		"node_modules/a/Cargo.toml":                                    "",
		"node_modules/@s/c/package.json":                               pkg("@s/c"),
		"node_modules/bad/package.json":                                "{not json",
		"node_modules/nopkg/index.js":                                  "",
		"node_modules/.pnpm/d@1.0.0/node_modules/d/package.json":       pkg("d"),
		"node_modules/.pnpm/@s+e@1.0.0/node_modules/@s/e/package.json": pkg("@s/e"),
	})
	if err := os.Symlink(filepath.Join(root, "packages", "w"), filepath.Join(root, "node_modules", "w")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../d@1.0.0/node_modules/d", filepath.Join(root, "node_modules/.pnpm/@s+e@1.0.0/node_modules/d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	// A FIFO under a manifest's name must be neither listed nor opened.
	if err := os.MkdirAll(filepath.Join(root, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", "package.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "node_modules", "fifopkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "node_modules", "fifopkg", "package.json"), 0o644); err != nil {
		t.Fatal(err)
	}

	inv, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range inv.Files {
		files = append(files, string(f.Kind)+" "+f.Rel)
		if f.Path != filepath.Join(root, filepath.FromSlash(f.Rel)) {
			t.Errorf("%s: path %s", f.Rel, f.Path)
		}
	}
	wantFiles := []string{
		".cargo/config.toml .cargo/config.toml",
		".npmrc .npmrc",
		".yarnrc.yml .yarnrc.yml",
		"Cargo.lock Cargo.lock",
		"Cargo.toml Cargo.toml",
		"build.rs build.rs",
		"bun.lockb bun.lockb",
		".cargo/config.toml crates/c/.cargo/config",
		"Cargo.toml crates/c/Cargo.toml",
		"build.rs crates/c/build.rs",
		"node_modules/.package-lock.json node_modules/.package-lock.json",
		"package-lock.json package-lock.json",
		"package.json package.json",
		"binding.gyp packages/w/binding.gyp",
		"package.json packages/w/package.json",
		"pnpm-lock.yaml pnpm-lock.yaml",
		"yarn.lock yarn.lock",
	}
	if !reflect.DeepEqual(files, wantFiles) {
		t.Errorf("files =\n%q\nwant\n%q", files, wantFiles)
	}
	type inst struct {
		rel, pathName, name string
		gyp, ok, shrink     bool
	}
	var got []inst
	for _, p := range inv.Installed {
		name := ""
		if p.Manifest != nil {
			name = p.Manifest.Name
		}
		got = append(got, inst{p.Rel, p.PathName, name, p.HasBindingGyp, p.Err == nil, p.HasShrinkwrap})
	}
	want := []inst{
		{"node_modules/.pnpm/@s+e@1.0.0/node_modules/@s/e", "@s/e", "@s/e", false, true, false},
		{"node_modules/.pnpm/d@1.0.0/node_modules/d", "d", "d", false, true, false},
		{"node_modules/@s/c", "@s/c", "@s/c", false, true, true},
		{"node_modules/a", "a", "a", true, true, false},
		{"node_modules/a/node_modules/b", "b", "b", false, true, false},
		{"node_modules/a/node_modules/b/node_modules/b2", "b2", "b2", false, true, false},
		{"node_modules/bad", "bad", "", false, false, false},
		{"node_modules/fifopkg", "fifopkg", "", false, false, false},
		{"node_modules/nopkg", "nopkg", "", false, false, false},
		{"packages/w/node_modules/f", "f", "f", false, true, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("installed =\n%+v\nwant\n%+v", got, want)
	}
	for _, p := range inv.Installed {
		switch p.PathName {
		case "bad":
			var pe *ParseError
			if !errors.As(p.Err, &pe) || pe.Line != 1 {
				t.Errorf("bad package error = %v", p.Err)
			}
		case "nopkg", "fifopkg":
			if !errors.Is(p.Err, fs.ErrNotExist) {
				t.Errorf("%s error = %v", p.PathName, p.Err)
			}
		}
	}
	if len(inv.Errors) != 0 {
		t.Errorf("errors = %v", inv.Errors)
	}
	if locks := inv.FilesOf(KindPackageLock, KindYarnLock); len(locks) != 2 {
		t.Errorf("FilesOf = %+v", locks)
	}
}

func TestDiscoverErrors(t *testing.T) {
	if _, err := Discover(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing root accepted")
	}
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(f); err == nil {
		t.Error("file root accepted")
	}
	if os.Geteuid() == 0 {
		return // root reads unreadable directories
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"locked/package.json": "{}"})
	if err := os.Chmod(filepath.Join(root, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(root, "locked"), 0o755)
	inv, err := Discover(root)
	if err != nil || len(inv.Errors) != 1 {
		t.Errorf("unreadable directory: err %v, errors %v", err, inv.Errors)
	}
}

func TestKindOf(t *testing.T) {
	for rel, want := range map[string]Kind{
		"a/.cargo/config":                 KindCargoConfig,
		"a/cargo/config":                  "",
		"node_modules/.package-lock.json": KindHiddenLock,
		"x/.package-lock.json":            "",
		"npm-shrinkwrap.json":             KindShrinkwrap,
		"bun.lock":                        KindBunLock,
		".yarnrc":                         KindYarnrcClassic,
		"README.md":                       "",
	} {
		got, ok := KindOf(rel)
		if got != want || ok != (want != "") {
			t.Errorf("KindOf(%q) = %q %v, want %q", rel, got, ok, want)
		}
	}
	if !KindCargoLock.IsLockfile() || KindCargoToml.IsLockfile() || KindPnpmLock.Limit() != MaxLockfileSize || KindBuildRS.Limit() != MaxSourceSize {
		t.Error("kind properties wrong")
	}
}

// BenchmarkDiscover measures Discover over a node_modules of 1,500 packages.
func BenchmarkDiscover(b *testing.B) {
	root := b.TempDir()
	files := map[string]string{"package.json": `{"name":"bench"}`}
	for i := 0; i < 1500; i++ {
		rel := fmt.Sprintf("node_modules/pkg-%04d", i)
		if i%10 == 0 {
			rel = fmt.Sprintf("node_modules/@scope%d/pkg-%04d", i%7, i)
		}
		files[rel+"/package.json"] = fmt.Sprintf(`{"name":"pkg-%04d","version":"1.0.%d","scripts":{"test":"node t.js"},"dependencies":{"a":"^1.0.0","b":"~2.1.0"},"license":"MIT","description":"a package used to measure discovery over a realistic node_modules tree"}`, i, i)
		files[rel+"/index.js"] = "module.exports = 1\n"
	}
	writeTree(b, root, files)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		inv, err := Discover(root)
		if err != nil || len(inv.Installed) != 1500 {
			b.Fatalf("discover: %v, %d installed", err, len(inv.Installed))
		}
	}
}
