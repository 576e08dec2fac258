package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCargoToml(t *testing.T) {
	c, err := ParseCargoToml("Cargo.toml", readFixture(t, "Cargo.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasPackage || c.Name != "sample" || c.Build != "tools/build.rs" || c.BuildLine != 5 || !c.ProcMacro {
		t.Errorf("package = %+v", c)
	}
	byName := map[string]CargoDep{}
	for _, d := range c.Dependencies {
		byName[d.Kind+":"+d.Name] = d
	}
	tests := []struct {
		key    string
		line   int
		pinned bool
		check  func(CargoDep) bool
	}{
		{"normal:serde", 11, true, func(d CargoDep) bool { return d.Version == "1.0" }},
		{"normal:pinned", 12, true, func(d CargoDep) bool { return d.Rev == "0123456789abcdef0123456789abcdef01234567" }},
		{"normal:floating", 13, false, func(d CargoDep) bool { return d.Branch == "main" && d.Git == "https://github.com/acme/floating" }},
		{"normal:local", 14, true, func(d CargoDep) bool { return d.Path == "../local" }},
		{"normal:renamed", 15, true, func(d CargoDep) bool { return d.CrateName() == "real-crate" && d.Registry == "acme" }},
		{"normal:tagged", 17, false, func(d CargoDep) bool { return d.Tag == "v1.0.0" }},
		{"dev:tempfile", 22, true, func(d CargoDep) bool { return d.Version == "3" }},
		{"build:reqwest", 25, true, func(d CargoDep) bool { return d.Version == "0.12" }},
		{"build:cc", 26, true, func(d CargoDep) bool { return true }},
		{"normal:libc", 29, true, func(d CargoDep) bool { return d.Target == "cfg(unix)" }},
		{"build:winres", 32, false, func(d CargoDep) bool { return d.Target == "x86_64-pc-windows-msvc" }},
	}
	if len(c.Dependencies) != len(tests) {
		t.Errorf("%d dependencies, want %d: %+v", len(c.Dependencies), len(tests), c.Dependencies)
	}
	for _, tt := range tests {
		d, ok := byName[tt.key]
		if !ok {
			t.Errorf("%s missing", tt.key)
			continue
		}
		if d.Line != tt.line || d.Pinned() != tt.pinned || !tt.check(d) {
			t.Errorf("%s = %+v (pinned %v), want line %d pinned %v", tt.key, d, d.Pinned(), tt.line, tt.pinned)
		}
	}
	if len(c.Patches) != 2 {
		t.Fatalf("patches = %+v", c.Patches)
	}
	var crates CargoDep
	for _, p := range c.Patches {
		if p.Target == "crates-io" {
			crates = p
		}
	}
	if crates.Name != "serde" || crates.Git != "https://github.com/evil/serde" || crates.Line != 35 {
		t.Errorf("crates-io patch = %+v", crates)
	}
	if len(c.Replace) != 1 || c.Replace[0].Name != "libc:0.2.150" || c.Replace[0].Line != 41 {
		t.Errorf("replace = %+v", c.Replace)
	}
}

func TestParseCargoTomlShapes(t *testing.T) {
	c, err := ParseCargoToml("Cargo.toml", []byte("[package]\nname = \"x\"\nbuild = false\n[workspace]\nmembers = [\"a\", \"b\"]\n[workspace.dependencies]\nw = { git = \"https://g/w\" }\n[dependencies]\nw.workspace = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Build != "false" || !reflect.DeepEqual(c.WorkspaceMembers, []string{"a", "b"}) || len(c.Dependencies) != 2 {
		t.Fatalf("= %+v", c)
	}
	if d := c.Dependencies[0]; d.Kind != CargoWorkspace || d.Git != "https://g/w" || d.Line != 7 {
		t.Errorf("workspace dep = %+v", d)
	}
	if d := c.Dependencies[1]; !d.Workspace || d.Line != 9 {
		t.Errorf("inherited dep = %+v", d)
	}
	c, err = ParseCargoToml("Cargo.toml", []byte("[workspace]\nmembers = []\n"))
	if err != nil || c.HasPackage || c.Build != "" {
		t.Errorf("virtual manifest = %+v, %v", c, err)
	}
}

func TestParseCargoErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
	}{
		{"bad toml", "[package]\nname = \"x\"\nversion = \n", 3},
		{"duplicate key", "[dependencies]\na = \"1\"\na = \"2\"\n", 3},
		{"deep nesting", "a = " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n", 1},
		{"unterminated table", "[package\n", 2},
	}
	for _, tt := range tests {
		for name, parse := range map[string]func([]byte) error{
			"toml":   func(b []byte) error { _, err := ParseCargoToml("Cargo.toml", b); return err },
			"lock":   func(b []byte) error { _, err := ParseCargoLock("Cargo.toml", b); return err },
			"config": func(b []byte) error { _, err := ParseCargoConfig("Cargo.toml", b); return err },
		} {
			err := parse([]byte(tt.in))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tt.line || pe.Path != "Cargo.toml" {
				t.Errorf("%s/%s: err = %v, want line %d", tt.name, name, err, tt.line)
			}
		}
	}
	if _, err := ParseCargoLock("Cargo.lock", []byte("package = 3\n")); err == nil {
		t.Error("Cargo.lock with a scalar package parsed")
	}
}

func TestParseCargoLock(t *testing.T) {
	l, err := ParseCargoLock("Cargo.lock", readFixture(t, "Cargo.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != 3 || len(l.Packages) != 4 {
		t.Fatalf("lock = %+v", l)
	}
	cc, floating, libc, sample := l.Packages[0], l.Packages[1], l.Packages[2], l.Packages[3]
	if cc.Name != "cc" || !IsCratesIO(cc.Source) || cc.Checksum == "" || cc.Line != 5 || !reflect.DeepEqual(cc.Dependencies, []string{"libc"}) {
		t.Errorf("cc = %+v", cc)
	}
	if IsCratesIO(floating.Source) || !strings.HasPrefix(floating.Source, "git+") || floating.Checksum != "" {
		t.Errorf("floating = %+v", floating)
	}
	if !IsCratesIO(libc.Source) || libc.Checksum != "" || libc.Line != 19 {
		t.Errorf("libc = %+v", libc)
	}
	if sample.Source != "" || len(sample.Dependencies) != 2 {
		t.Errorf("sample = %+v", sample)
	}

	old, err := ParseCargoLock("Cargo.lock", readFixture(t, "Cargo-v1.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if old.Version != 0 || len(old.Packages) != 2 || old.Packages[0].Checksum != "4785bdd1c96b2a846b2bd7cc02e86b6b3dbf14e7e53446c4f54c92a361040822" {
		t.Errorf("v1 lock = %+v", old)
	}
}

func TestParseCargoConfig(t *testing.T) {
	c, err := ParseCargoConfig("config.toml", readFixture(t, "cargo/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]CargoSource{}
	for _, s := range c.Sources {
		srcs[s.Name] = s
	}
	if s := srcs["crates-io"]; s.ReplaceWith != "vendored-sources" || s.Line != 1 {
		t.Errorf("crates-io = %+v", s)
	}
	if s := srcs["vendored-sources"]; s.Directory != "vendor" || s.Line != 4 {
		t.Errorf("vendored = %+v", s)
	}
	if srcs["mirror"].Registry != "sparse+https://mirror.acme.invalid/index/" {
		t.Errorf("mirror = %+v", srcs["mirror"])
	}
	if c.Build["rustc-wrapper"] != "/tmp/wrap.sh" || c.Build["rustc-workspace-wrapper"] != "sccache --flag" || c.Lines["build.rustc-wrapper"] != 11 {
		t.Errorf("build = %v lines %v", c.Build, c.Lines)
	}
	if len(c.Targets) != 1 || c.Targets[0].Linker != "./tools/ld.sh" || c.Targets[0].Runner != "qemu-x86_64 -L /" || len(c.Targets[0].Rustflags) != 2 || c.Targets[0].Line != 14 {
		t.Errorf("targets = %+v", c.Targets)
	}
	if c.Env["OPENSSL_DIR"] != "/opt/openssl" || c.Env["SECRET"] != "x" || c.Lines["env.SECRET"] != 21 {
		t.Errorf("env = %v", c.Env)
	}
	if c.Registries["acme"] != "sparse+https://cargo.acme.invalid/index/" {
		t.Errorf("registries = %v", c.Registries)
	}
}

func TestFindCargoConfigs(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "a", "b", "proj")
	home := filepath.Join(root, "home", ".cargo")
	for _, f := range []string{
		filepath.Join(proj, ".cargo", "config.toml"),
		filepath.Join(root, "a", ".cargo", "config"),
		filepath.Join(root, "a", ".cargo", "config.toml"),
		filepath.Join(home, "config.toml"),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("[build]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A directory named config is not a config file.
	if err := os.MkdirAll(filepath.Join(root, "a", "b", ".cargo", "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := FindCargoConfigs(proj, home)
	want := []string{
		filepath.Join(proj, ".cargo", "config.toml"),
		filepath.Join(root, "a", ".cargo", "config"),
		filepath.Join(root, "a", ".cargo", "config.toml"),
		filepath.Join(home, "config.toml"),
	}
	// Directories above the temporary root may hold their own configs; keep ours.
	var ours []string
	for _, p := range got {
		if strings.HasPrefix(p, root) {
			ours = append(ours, p)
		}
	}
	if !reflect.DeepEqual(ours, want) {
		t.Errorf("FindCargoConfigs = %v, want %v", ours, want)
	}
	// CARGO_HOME inside the walked tree is listed once.
	got = FindCargoConfigs(proj, filepath.Join(root, "a", ".cargo"))
	n := 0
	for _, p := range got {
		if p == filepath.Join(root, "a", ".cargo", "config") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("config listed %d times: %v", n, got)
	}
}
