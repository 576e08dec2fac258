package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Cargo dependency kinds, as used in CargoDep.Kind.
const (
	CargoNormal    = "normal"
	CargoDev       = "dev"
	CargoBuild     = "build"
	CargoWorkspace = "workspace" // [workspace.dependencies]
)

// CargoToml is the audit-relevant content of a Cargo.toml.
type CargoToml struct {
	// HasPackage is set when the file has a [package] table (a workspace root may not).
	HasPackage bool
	Name       string
	Version    string
	// Build is package.build: "" when absent (Cargo then uses build.rs if it
	// exists), a path when set, "false" when disabled; BuildLine is its line.
	Build     string
	BuildLine int
	// ProcMacro is lib.proc-macro.
	ProcMacro bool
	// WorkspaceMembers is workspace.members.
	WorkspaceMembers []string
	// Dependencies lists every dependency of every kind and target, in table order.
	Dependencies []CargoDep
	// Patches lists [patch.<registry or URL>] entries; Dep.Target holds the registry.
	Patches []CargoDep
	// Replace lists [replace] entries, keyed by "name:version" in Dep.Name.
	Replace []CargoDep
}

// CargoDep is one dependency entry of a Cargo.toml.
type CargoDep struct {
	Name string // the key in the table
	// Package is the real crate name when renamed with package = "...".
	Package       string
	Kind          string // CargoNormal, CargoDev, CargoBuild or CargoWorkspace
	Target        string // cfg or triple of [target.X.dependencies]; registry for patches
	Version       string
	Git           string
	Rev           string
	Branch        string
	Tag           string
	Path          string
	Registry      string
	RegistryIndex string
	Workspace     bool // name.workspace = true
	Optional      bool
	Line          int
}

// Pinned reports whether a git dependency names a full commit with rev.
func (d CargoDep) Pinned() bool { return d.Git == "" || isHex40(d.Rev) }

// CrateName returns the crate's real name: Package when renamed, else Name.
func (d CargoDep) CrateName() string {
	if d.Package != "" {
		return d.Package
	}
	return d.Name
}

const maxTOMLNesting = 128

// decodeTOML decodes data into a generic table after refusing nesting that
// could exhaust the decoder's stack.
func decodeTOML(path string, data []byte) (map[string]any, error) {
	if line := tomlTooDeep(data); line > 0 {
		return nil, parseErr(path, line, "arrays or inline tables nested more than %d deep", maxTOMLNesting)
	}
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &ParseError{Path: path, Line: pe.Position.Line, Err: fmt.Errorf("invalid TOML: %s", pe.Message)}
		}
		return nil, &ParseError{Path: path, Err: fmt.Errorf("invalid TOML: %w", err)}
	}
	return m, nil
}

// tomlTooDeep returns the line where [ and { nest deeper than maxTOMLNesting, or 0.
func tomlTooDeep(data []byte) int {
	depth, line := 0, 1
	var quote byte
	comment := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\n' {
			line++
			comment = false
			if quote == '"' || quote == '\'' {
				quote = 0 // single-line strings end at the line; multi-line ones are rare enough here
			}
			continue
		}
		switch {
		case comment:
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '#':
			comment = true
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
			if depth > maxTOMLNesting {
				return line
			}
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return 0
}

func table(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func tstr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func tbool(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

func tstrings(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// ParseCargoToml parses a Cargo.toml; path is used only in errors.
func ParseCargoToml(path string, data []byte) (*CargoToml, error) {
	if len(data) > MaxManifestSize {
		return nil, tooLarge(path, len(data), MaxManifestSize)
	}
	m, err := decodeTOML(path, data)
	if err != nil {
		return nil, err
	}
	idx := newTOMLIndex(data)
	c := &CargoToml{}
	if pkg := table(m["package"]); pkg != nil {
		c.HasPackage = true
		c.Name = tstr(pkg, "name")
		if v, ok := pkg["version"].(string); ok {
			c.Version = v
		}
		switch b := pkg["build"].(type) {
		case string:
			c.Build = b
		case bool:
			c.Build = fmt.Sprint(b)
		}
		if _, ok := pkg["build"]; ok {
			c.BuildLine = idx.keyLine("package", "build")
		}
	}
	if lib := table(m["lib"]); lib != nil {
		c.ProcMacro = tbool(lib, "proc-macro") || tbool(lib, "proc_macro")
	}
	ws := table(m["workspace"])
	if ws != nil {
		c.WorkspaceMembers = tstrings(ws["members"])
		c.Dependencies = append(c.Dependencies, cargoDeps(idx, "workspace.dependencies", table(ws["dependencies"]), CargoWorkspace, "")...)
	}
	for _, k := range [][2]string{{"dependencies", CargoNormal}, {"dev-dependencies", CargoDev}, {"dev_dependencies", CargoDev}, {"build-dependencies", CargoBuild}, {"build_dependencies", CargoBuild}} {
		c.Dependencies = append(c.Dependencies, cargoDeps(idx, k[0], table(m[k[0]]), k[1], "")...)
	}
	targets := table(m["target"])
	for _, t := range sortedKeys(targets) {
		tt := table(targets[t])
		for _, k := range [][2]string{{"dependencies", CargoNormal}, {"dev-dependencies", CargoDev}, {"build-dependencies", CargoBuild}} {
			c.Dependencies = append(c.Dependencies, cargoDeps(idx, "target."+t+"."+k[0], table(tt[k[0]]), k[1], t)...)
		}
	}
	patch := table(m["patch"])
	for _, reg := range sortedKeys(patch) {
		c.Patches = append(c.Patches, cargoDeps(idx, "patch."+reg, table(patch[reg]), "", reg)...)
	}
	c.Replace = cargoDeps(idx, "replace", table(m["replace"]), "", "")
	return c, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cargoDeps(idx *tomlIndex, tablePath string, deps map[string]any, kind, target string) []CargoDep {
	var out []CargoDep
	for _, name := range sortedKeys(deps) {
		d := CargoDep{Name: name, Kind: kind, Target: target, Line: idx.keyLine(tablePath, name)}
		switch v := deps[name].(type) {
		case string:
			d.Version = v
		case map[string]any:
			d.Version = tstr(v, "version")
			d.Package = tstr(v, "package")
			d.Git = tstr(v, "git")
			d.Rev = tstr(v, "rev")
			d.Branch = tstr(v, "branch")
			d.Tag = tstr(v, "tag")
			d.Path = tstr(v, "path")
			d.Registry = tstr(v, "registry")
			d.RegistryIndex = tstr(v, "registry-index")
			d.Workspace = tbool(v, "workspace")
			d.Optional = tbool(v, "optional")
		default:
			continue
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// tomlIndex maps dotted key paths to the line that defines them, built from
// table headers and key lines, since the TOML decoder does not report key
// positions. A key "a.b.c" defined on a line also records "a.b" and "a".
type tomlIndex struct {
	lines map[string]int
}

func newTOMLIndex(data []byte) *tomlIndex {
	x := &tomlIndex{lines: map[string]int{}}
	cur := ""
	record := func(full string, line int) {
		for {
			if _, ok := x.lines[full]; !ok {
				x.lines[full] = line
			}
			i := strings.LastIndexByte(full, '.')
			if i < 0 {
				return
			}
			full = full[:i]
		}
	}
	i := -1
	for raw := range strings.Lines(string(data)) {
		i++
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "[") {
			cur = normKey(strings.Trim(strings.TrimSpace(strings.SplitN(l, "#", 2)[0]), "[]"))
			record(cur, i+1)
			continue
		}
		eq := strings.IndexByte(l, '=')
		if eq <= 0 || strings.HasPrefix(l, "#") {
			continue
		}
		full := normKey(l[:eq])
		if cur != "" {
			full = cur + "." + full
		}
		record(full, i+1)
	}
	return x
}

// normKey normalizes a dotted key: no spaces or quotes around its parts.
// Dots inside quoted parts are not told apart, which only affects lines.
func normKey(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, ".") {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.Trim(strings.TrimSpace(part), "\"'"))
	}
	return b.String()
}

// keyLine returns the line where key is defined under table, or 0.
func (x *tomlIndex) keyLine(table, key string) int {
	return x.lines[table+"."+key]
}

// CargoLock is a Cargo.lock.
type CargoLock struct {
	Version  int // the "version" key; 0 for the oldest format without one
	Packages []CargoLockPackage
}

// CargoLockPackage is one [[package]] of a Cargo.lock.
type CargoLockPackage struct {
	Name    string
	Version string
	// Source is "registry+https://github.com/rust-lang/crates.io-index",
	// "sparse+https://index.crates.io/", "git+URL#commit", or "" for path crates.
	Source       string
	Checksum     string
	Dependencies []string
	Line         int
}

// CratesIOSources are the Cargo.lock sources of crates.io.
var CratesIOSources = []string{
	"registry+https://github.com/rust-lang/crates.io-index",
	"sparse+https://index.crates.io/",
}

// IsCratesIO reports whether a Cargo.lock source is crates.io.
func IsCratesIO(source string) bool {
	for _, s := range CratesIOSources {
		if source == s {
			return true
		}
	}
	return false
}

// ParseCargoLock parses a Cargo.lock; path is used only in errors.
func ParseCargoLock(path string, data []byte) (*CargoLock, error) {
	if len(data) > MaxCargoLockSize {
		return nil, tooLarge(path, len(data), MaxCargoLockSize)
	}
	m, err := decodeTOML(path, data)
	if err != nil {
		return nil, err
	}
	l := &CargoLock{}
	if v, ok := m["version"].(int64); ok && v >= 0 && v < 1000 {
		l.Version = int(v)
	}
	// Lines of each [[package]] header, in order.
	var headers []int
	i := -1
	for raw := range strings.Lines(string(data)) {
		i++
		if strings.TrimSpace(raw) == "[[package]]" {
			headers = append(headers, i+1)
		}
	}
	pkgs, _ := m["package"].([]map[string]any)
	if pkgs == nil {
		if arr, ok := m["package"].([]any); ok {
			for _, e := range arr {
				if t := table(e); t != nil {
					pkgs = append(pkgs, t)
				}
			}
		} else if _, present := m["package"]; present {
			return nil, parseErr(path, 0, "package is not an array of tables")
		}
	}
	meta := table(m["metadata"])
	for i, p := range pkgs {
		lp := CargoLockPackage{
			Name: tstr(p, "name"), Version: tstr(p, "version"), Source: tstr(p, "source"),
			Checksum: tstr(p, "checksum"), Dependencies: tstrings(p["dependencies"]),
		}
		if i < len(headers) {
			lp.Line = headers[i]
		}
		if lp.Checksum == "" && meta != nil && lp.Source != "" {
			// Format 1 keeps checksums in [metadata]: "checksum NAME VERSION (SOURCE)" = "HASH".
			lp.Checksum = tstr(meta, fmt.Sprintf("checksum %s %s (%s)", lp.Name, lp.Version, lp.Source))
			if lp.Checksum == "<none>" {
				lp.Checksum = ""
			}
		}
		l.Packages = append(l.Packages, lp)
	}
	return l, nil
}

// CargoConfig is a .cargo/config or .cargo/config.toml.
type CargoConfig struct {
	Sources []CargoSource
	// Build holds [build] rustc, rustc-wrapper, rustc-workspace-wrapper, rustdoc, target-dir.
	Build   map[string]string
	Targets []CargoTarget
	// Env is [env]: a string value or the "value" of a table.
	Env        map[string]string
	Registries map[string]string // [registries.NAME] index
	// DefaultRegistry is registry.default.
	DefaultRegistry string
	// Lines maps "section.key" (e.g. "build.rustc-wrapper", "source.x") to its line.
	Lines map[string]int
}

// CargoSource is one [source.NAME] table.
type CargoSource struct {
	Name          string
	ReplaceWith   string
	Directory     string
	Registry      string
	LocalRegistry string
	Git           string
	Rev           string
	Line          int
}

// CargoTarget is one [target.TRIPLE-or-cfg] table.
type CargoTarget struct {
	Name   string
	Linker string
	// Runner is the runner command; an array is joined with spaces.
	Runner    string
	Rustflags []string
	Line      int
}

// ParseCargoConfig parses a Cargo configuration file; path is used only in errors.
func ParseCargoConfig(path string, data []byte) (*CargoConfig, error) {
	if len(data) > MaxConfigSize {
		return nil, tooLarge(path, len(data), MaxConfigSize)
	}
	m, err := decodeTOML(path, data)
	if err != nil {
		return nil, err
	}
	idx := newTOMLIndex(data)
	c := &CargoConfig{Build: map[string]string{}, Env: map[string]string{}, Registries: map[string]string{}, Lines: map[string]int{}}
	src := table(m["source"])
	for _, name := range sortedKeys(src) {
		t := table(src[name])
		if t == nil {
			continue
		}
		s := CargoSource{
			Name: name, ReplaceWith: tstr(t, "replace-with"), Directory: tstr(t, "directory"),
			Registry: tstr(t, "registry"), LocalRegistry: tstr(t, "local-registry"),
			Git: tstr(t, "git"), Rev: tstr(t, "rev"), Line: idx.keyLine("source", name),
		}
		c.Sources = append(c.Sources, s)
		c.Lines["source."+name] = s.Line
	}
	if b := table(m["build"]); b != nil {
		for _, k := range []string{"rustc", "rustc-wrapper", "rustc-workspace-wrapper", "rustdoc", "target-dir", "target"} {
			if v := cmdString(b[k]); v != "" {
				c.Build[k] = v
				c.Lines["build."+k] = idx.keyLine("build", k)
			}
		}
	}
	tg := table(m["target"])
	for _, name := range sortedKeys(tg) {
		t := table(tg[name])
		if t == nil {
			continue
		}
		ct := CargoTarget{Name: name, Linker: tstr(t, "linker"), Runner: cmdString(t["runner"]), Rustflags: tstrings(t["rustflags"]), Line: idx.keyLine("target", name)}
		if s, ok := t["rustflags"].(string); ok {
			ct.Rustflags = strings.Fields(s)
		}
		c.Targets = append(c.Targets, ct)
	}
	env := table(m["env"])
	for _, k := range sortedKeys(env) {
		switch v := env[k].(type) {
		case string:
			c.Env[k] = v
		case map[string]any:
			c.Env[k] = tstr(v, "value")
		default:
			continue
		}
		c.Lines["env."+k] = idx.keyLine("env", k)
	}
	regs := table(m["registries"])
	for _, k := range sortedKeys(regs) {
		if t := table(regs[k]); t != nil {
			c.Registries[k] = tstr(t, "index")
		}
	}
	if r := table(m["registry"]); r != nil {
		c.DefaultRegistry = tstr(r, "default")
	}
	return c, nil
}

// cmdString returns a string value, or a string array joined with spaces.
func cmdString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		return strings.Join(tstrings(t), " ")
	}
	return ""
}

// FindCargoConfigs returns the Cargo configuration files that apply to a build
// in dir, in Cargo's precedence order: dir's own .cargo first, then each parent
// up to the root, then cargoHome (when not already seen). For each directory
// both ".cargo/config" and ".cargo/config.toml" are returned if present.
func FindCargoConfigs(dir, cargoHome string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(cargoDir string) {
		for _, name := range []string{"config", "config.toml"} {
			p := filepath.Join(cargoDir, name)
			if seen[p] {
				continue
			}
			seen[p] = true
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for d := filepath.Clean(dir); ; {
		add(filepath.Join(d, ".cargo"))
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if cargoHome != "" {
		if abs, err := filepath.Abs(cargoHome); err == nil {
			add(abs)
		}
	}
	return out
}
