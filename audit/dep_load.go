package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shadow-sandbox/shadow/audit/manifest"
)

// depState is the project's parsed manifests, read once per audit by whichever
// DEP (or FS006) rule asks first.
type depState struct {
	err error // discovery of the project failed
	inv manifest.Inventory

	problems []parseProblem // files that failed to read or parse

	pkgs       []pkgFile
	npmLocks   []lockFile[*manifest.PackageLock]
	yarnLocks  []lockFile[*manifest.YarnLock]
	pnpmLocks  []lockFile[*manifest.PnpmLock]
	cargoLocks []lockFile[*manifest.CargoLock]
	bunLocks   []lockFile[*manifest.BunLock]
	unparsed   []manifest.File // lockfiles with no parser (bun.lockb)
	crates     []crateFile
	cargoCfgs  []cargoCfg
	npmrcs     []lockFile[*manifest.Npmrc]
	yarnrcs    []lockFile[*manifest.Yarnrc]
	yarnrcs1   []lockFile[*manifest.YarnrcClassic] // yarn 1 .yarnrc

	hooks  []hookCode
	builds []buildScript
}

// buildScript is a crate's build script (or a proc-macro crate's library),
// tokenized outside comments.
type buildScript struct {
	rel       string
	procMacro bool
	scan      *manifest.RustScan
	err       error // unreadable, too large or not tokenizable: its checks are skipped
}

// parseProblem is a file the audit could not read or parse.
type parseProblem struct {
	rel  string
	line int
	err  error
}

// pkgFile is a package.json of the project (installed is false) or of a
// package under node_modules (installed is true).
type pkgFile struct {
	rel       string // the package.json, relative to the project
	dir       string // the package directory, absolute
	pj        *manifest.PackageJSON
	installed bool
	gyp       bool   // has binding.gyp
	pnpmfile  string // the .pnpmfile.cjs beside a project package.json, project-relative; "" when none
}

type lockFile[T any] struct {
	rel string
	v   T
}

type crateFile struct {
	rel  string // the Cargo.toml
	dir  string // absolute
	toml *manifest.CargoToml
}

// cargoCfg is a Cargo configuration that applies to a crate of the project:
// inside it, in a parent directory, or in $CARGO_HOME.
type cargoCfg struct {
	shown     string // project-relative, or absolute when outside the project
	inProject bool
	cfg       *manifest.CargoConfig
}

type registryConfig struct {
	rel    string
	tokens []tokenHit
	err    error
}

type tokenHit struct {
	key  string
	line int
}

// hookCode is code an install runs: a lifecycle script's command, and the file
// that command runs when it is "node FILE" (or bun, sh, bash).
type hookCode struct {
	pkgRel   string // the package.json declaring the hook
	script   string // an installHooks name, or the pnpmfile's name
	line     int    // of the script in package.json
	command  string
	file     string           // hook target, project-relative; "" when none
	data     []byte           // target contents
	js       *manifest.JSScan // target scanned as JavaScript; nil when not JavaScript
	tooLarge bool             // target above the scan cap: checks over it are skipped
	err      error            // target unreadable
}

// scanLimit caps how much of one hook target is scanned.
const scanLimit = manifest.MaxSourceSize

func (s *scan) deps() *depState {
	s.depOnce.Do(func() { s.dep = loadDeps(s.project, s.env) })
	return s.dep
}

func (d *depState) problem(rel string, err error) {
	p := parseProblem{rel: rel, err: err}
	var pe *manifest.ParseError
	if errors.As(err, &pe) {
		p.line = pe.Line
	}
	d.problems = append(d.problems, p)
}

// loadDeps discovers and parses every manifest of the project.
func loadDeps(project string, env Env) *depState {
	d := &depState{}
	inv, err := manifest.Discover(project)
	if err != nil {
		d.err = err
		return d
	}
	d.inv = inv
	read := func(f manifest.File) ([]byte, bool) {
		b, err := readCapped(f.Path, f.Kind.Limit())
		if err != nil {
			d.problem(f.Rel, err)
			return nil, false
		}
		return b, true
	}
	for _, f := range inv.Files {
		switch f.Kind {
		case manifest.KindPackageJSON:
			if b, ok := read(f); ok {
				pj, err := manifest.ParsePackageJSON(f.Rel, b)
				if err != nil {
					d.problem(f.Rel, err)
					continue
				}
				dir := filepath.Dir(f.Path)
				_, gypErr := os.Lstat(filepath.Join(dir, "binding.gyp"))
				d.pkgs = append(d.pkgs, pkgFile{rel: f.Rel, dir: dir, pj: pj, gyp: gypErr == nil, pnpmfile: findPnpmfile(dir, f.Rel)})
			}
		case manifest.KindPackageLock, manifest.KindShrinkwrap:
			if b, ok := read(f); ok {
				if l, err := manifest.ParsePackageLock(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.npmLocks = append(d.npmLocks, lockFile[*manifest.PackageLock]{f.Rel, l})
				}
			}
		case manifest.KindYarnLock:
			if b, ok := read(f); ok {
				if l, err := manifest.ParseYarnLock(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.yarnLocks = append(d.yarnLocks, lockFile[*manifest.YarnLock]{f.Rel, l})
				}
			}
		case manifest.KindPnpmLock:
			if b, ok := read(f); ok {
				if l, err := manifest.ParsePnpmLock(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.pnpmLocks = append(d.pnpmLocks, lockFile[*manifest.PnpmLock]{f.Rel, l})
				}
			}
		case manifest.KindCargoLock:
			if b, ok := read(f); ok {
				if l, err := manifest.ParseCargoLock(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.cargoLocks = append(d.cargoLocks, lockFile[*manifest.CargoLock]{f.Rel, l})
				}
			}
		case manifest.KindBunLock:
			if b, ok := read(f); ok {
				if l, err := manifest.ParseBunLock(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.bunLocks = append(d.bunLocks, lockFile[*manifest.BunLock]{f.Rel, l})
				}
			}
		case manifest.KindBunLockb:
			d.unparsed = append(d.unparsed, f)
		case manifest.KindCargoToml:
			if b, ok := read(f); ok {
				if t, err := manifest.ParseCargoToml(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.crates = append(d.crates, crateFile{rel: f.Rel, dir: filepath.Dir(f.Path), toml: t})
				}
			}
		case manifest.KindNpmrc:
			rc, n := readNpmrc(f.Path, f.Rel)
			if rc.err != nil {
				d.problem(f.Rel, rc.err)
			} else {
				d.npmrcs = append(d.npmrcs, lockFile[*manifest.Npmrc]{f.Rel, n})
			}
		case manifest.KindYarnrc:
			rc, y := readYarnrc(f.Path, f.Rel)
			if rc.err != nil {
				d.problem(f.Rel, rc.err)
			} else {
				d.yarnrcs = append(d.yarnrcs, lockFile[*manifest.Yarnrc]{f.Rel, y})
			}
		case manifest.KindYarnrcClassic:
			if b, ok := read(f); ok {
				if y, err := manifest.ParseYarnrcClassic(f.Rel, b); err != nil {
					d.problem(f.Rel, err)
				} else {
					d.yarnrcs1 = append(d.yarnrcs1, lockFile[*manifest.YarnrcClassic]{f.Rel, y})
				}
			}
		}
	}
	for _, ip := range inv.Installed {
		pjRel := ip.Rel + "/package.json"
		if ip.Err != nil {
			if !errors.Is(ip.Err, os.ErrNotExist) {
				d.problem(pjRel, ip.Err)
			}
			continue
		}
		d.pkgs = append(d.pkgs, pkgFile{rel: pjRel, dir: ip.Dir, pj: ip.Manifest, installed: true, gyp: ip.HasBindingGyp})
	}
	d.loadCargoConfigs(project, env)
	d.loadHooks(project)
	d.loadBuildScripts(project)
	return d
}

// loadBuildScripts tokenizes each crate's build script (build.rs, or the
// path in package.build) and each proc-macro crate's library.
func (d *depState) loadBuildScripts(project string) {
	for i := range d.crates {
		c := &d.crates[i]
		var files []string
		switch c.toml.Build {
		case "false":
		case "", "true":
			files = append(files, "build.rs")
		default:
			files = append(files, c.toml.Build)
		}
		if c.toml.ProcMacro {
			files = append(files, "src/lib.rs")
		}
		for j, name := range files {
			full := filepath.Join(c.dir, filepath.FromSlash(name))
			rel := filepath.ToSlash(filepath.Join(filepath.Dir(c.rel), filepath.FromSlash(name)))
			b, err := readCapped(full, manifest.MaxSourceSize)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			bs := buildScript{rel: rel, procMacro: c.toml.ProcMacro && j == len(files)-1 && name == "src/lib.rs"}
			if err != nil {
				bs.err = err
			} else {
				bs.scan, bs.err = manifest.ScanRust(rel, b)
			}
			d.builds = append(d.builds, bs)
		}
	}
}

// readNpmrc parses a project .npmrc and lists its literal credentials.
func readNpmrc(path, rel string) (registryConfig, *manifest.Npmrc) {
	rc := registryConfig{rel: rel}
	b, err := readCapped(path, manifest.MaxManifestSize)
	if err != nil {
		rc.err = err
		return rc, nil
	}
	n, err := manifest.ParseNpmrc(rel, b)
	if err != nil {
		rc.err = err
		return rc, nil
	}
	for _, e := range n.Entries {
		if e.Unmasked() {
			rc.tokens = append(rc.tokens, tokenHit{key: e.Key, line: e.Line})
		}
	}
	return rc, n
}

// readYarnrc parses a project .yarnrc.yml and lists its literal credentials.
func readYarnrc(path, rel string) (registryConfig, *manifest.Yarnrc) {
	rc := registryConfig{rel: rel}
	b, err := readCapped(path, manifest.MaxManifestSize)
	if err != nil {
		rc.err = err
		return rc, nil
	}
	y, err := manifest.ParseYarnrc(rel, b)
	if err != nil {
		rc.err = err
		return rc, nil
	}
	if literalSecret(y.NpmAuthToken) {
		rc.tokens = append(rc.tokens, tokenHit{key: "npmAuthToken", line: y.Lines["npmAuthToken"]})
	}
	if literalSecret(y.NpmAuthIdent) {
		rc.tokens = append(rc.tokens, tokenHit{key: "npmAuthIdent", line: y.Lines["npmAuthIdent"]})
	}
	for _, group := range []map[string]manifest.YarnRegistry{y.NpmScopes, y.NpmRegistries} {
		for _, k := range sortedKeys(group) {
			r := group[k]
			if literalSecret(r.NpmAuthToken) || literalSecret(r.NpmAuthIdent) {
				rc.tokens = append(rc.tokens, tokenHit{key: k + ".npmAuthToken", line: r.Line})
			}
		}
	}
	return rc, y
}

// readYarnrcClassic parses a project yarn 1 .yarnrc and lists its literal
// credentials ("//host/:_authToken" and the other npm credential keys).
func readYarnrcClassic(path, rel string) registryConfig {
	rc := registryConfig{rel: rel}
	b, err := readCapped(path, manifest.MaxConfigSize)
	if err != nil {
		rc.err = err
		return rc
	}
	y, err := manifest.ParseYarnrcClassic(rel, b)
	if err != nil {
		rc.err = err
		return rc
	}
	for _, e := range y.Entries {
		name := e.Key[strings.LastIndexByte(e.Key, ':')+1:]
		if (manifest.NpmrcEntry{Name: name}).IsSecret() && literalSecret(e.Value) {
			rc.tokens = append(rc.tokens, tokenHit{key: e.Key, line: e.Line})
		}
	}
	return rc
}

// projectRegistryConfigs finds and parses the project's .npmrc, .yarnrc and
// .yarnrc.yml files without reading node_modules (FS006 runs inside the jail
// without the dependency rules, and must stay cheap there).
func projectRegistryConfigs(project string) ([]registryConfig, error) {
	var out []registryConfig
	err := filepath.WalkDir(project, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == project {
				return err
			}
			return nil
		}
		if e.IsDir() {
			switch e.Name() {
			case "node_modules", ".git", ".hg", ".svn", ".jj", "target", ".cache", ".yarn", ".pnpm-store", ".npm":
				if p != project {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(project, p)
		rel = filepath.ToSlash(rel)
		switch e.Name() {
		case ".npmrc":
			rc, _ := readNpmrc(p, rel)
			out = append(out, rc)
		case ".yarnrc.yml":
			rc, _ := readYarnrc(p, rel)
			out = append(out, rc)
		case ".yarnrc":
			out = append(out, readYarnrcClassic(p, rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find registry configuration in %s: %w", project, err)
	}
	return out, nil
}

// literalSecret reports a credential written out rather than a ${VAR} reference.
func literalSecret(v string) bool {
	return strings.TrimSpace(v) != "" && !manifest.IsEnvReference(v)
}

// loadCargoConfigs parses the Cargo configurations that apply to each crate of
// the project, once each, in Cargo's precedence order.
func (d *depState) loadCargoConfigs(project string, env Env) {
	if len(d.crates) == 0 {
		return
	}
	cargoHome := ""
	if v, ok := env.Getenv("CARGO_HOME"); ok && v != "" {
		cargoHome = env.path(v)
	} else if env.Home != "" {
		cargoHome = env.path(filepath.Join(env.Home, ".cargo"))
	}
	seen := map[string]bool{}
	for _, c := range d.crates {
		for _, p := range manifest.FindCargoConfigs(c.dir, cargoHome) {
			if seen[p] {
				continue
			}
			seen[p] = true
			shown, inProject := p, false
			if rel, err := filepath.Rel(project, p); err == nil && !strings.HasPrefix(rel, "..") {
				shown, inProject = filepath.ToSlash(rel), true
			}
			b, err := readCapped(p, manifest.MaxManifestSize)
			if err != nil {
				d.problem(shown, err)
				continue
			}
			cfg, err := manifest.ParseCargoConfig(shown, b)
			if err != nil {
				d.problem(shown, err)
				continue
			}
			d.cargoCfgs = append(d.cargoCfgs, cargoCfg{shown: shown, inProject: inProject, cfg: cfg})
		}
	}
}

// loadHooks collects the code installs run: the install hooks of installed
// packages, and every install hook and pnpmfile of the project's own packages.
func (d *depState) loadHooks(project string) {
	for _, p := range d.pkgs {
		if p.pnpmfile != "" {
			h := hookCode{pkgRel: p.pnpmfile, script: path.Base(p.pnpmfile)}
			h.readTarget(filepath.Join(p.dir, path.Base(p.pnpmfile)), p.pnpmfile)
			d.hooks = append(d.hooks, h)
		}
		for _, name := range hookNames(p.installed) {
			cmd, ok := p.pj.Scripts[name]
			if !ok {
				continue
			}
			h := hookCode{pkgRel: p.rel, script: name, line: p.pj.ScriptLines[name], command: cmd}
			if target := hookTarget(cmd); target != "" {
				full := filepath.Join(p.dir, filepath.FromSlash(target))
				if rel, err := filepath.Rel(p.dir, full); err == nil && !strings.HasPrefix(rel, "..") {
					h.readTarget(full, path.Join(path.Dir(p.rel), filepath.ToSlash(rel)))
				}
			}
			d.hooks = append(d.hooks, h)
		}
	}
}

// readTarget reads and scans the file a hook runs (full on disk, rel in the project).
func (h *hookCode) readTarget(full, rel string) {
	h.file = rel
	h.data, h.err = readCapped(full, scanLimit)
	if errors.Is(h.err, manifest.ErrTooLarge) {
		h.tooLarge, h.err = true, nil
	}
	if errors.Is(h.err, os.ErrNotExist) {
		// The script names a file that is not there: nothing to scan.
		h.file, h.err = "", nil
	}
	if h.err == nil && h.data != nil && isJSFile(rel) {
		js, err := manifest.ScanJS(h.file, h.data)
		switch {
		case errors.Is(err, manifest.ErrTooLarge):
			h.tooLarge = true
		case err == nil:
			h.js = js
		}
		// Another scan error leaves the raw-text checks to run on the file.
	}
}

// findPnpmfile returns the pnpmfile beside a package.json (dir on disk, pjRel
// in the project), project-relative, or "".
func findPnpmfile(dir, pjRel string) string {
	for _, name := range pnpmfiles {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			return path.Join(path.Dir(pjRel), name)
		}
	}
	return ""
}

// hookTarget returns the file a script command runs with an interpreter
// ("node setup.js", "bun run x.js", "sh ./install.sh"), or "".
func hookTarget(cmd string) string {
	for _, seg := range splitCommand(cmd) {
		f := strings.Fields(seg)
		for len(f) > 0 && strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-") {
			f = f[1:] // VAR=value prefixes
		}
		if len(f) < 2 {
			continue
		}
		switch path.Base(f[0]) {
		case "node", "nodejs", "bun", "deno", "sh", "bash", "python", "python3", "tsx", "ts-node":
		default:
			continue
		}
		for _, a := range f[1:] {
			if a == "run" || strings.HasPrefix(a, "-") {
				continue
			}
			a = strings.Trim(a, `"'`)
			if strings.Contains(a, "://") || strings.ContainsAny(a, "$`()") {
				break
			}
			return a
		}
	}
	return ""
}

func isJSFile(name string) bool {
	switch path.Ext(name) {
	case ".js", ".cjs", ".mjs", "":
		return true
	}
	return false
}

// splitCommand splits a shell command at &&, ||, ; and |.
func splitCommand(cmd string) []string {
	return strings.FieldsFunc(cmd, func(r rune) bool { return r == '&' || r == '|' || r == ';' || r == '\n' })
}

// ManifestFiles lists the manifests and lockfiles of a project (relative,
// slash-separated, sorted): the files the attestation digests.
func ManifestFiles(project string) ([]string, error) {
	inv, err := manifest.Discover(project)
	if err != nil {
		return nil, err
	}
	return manifestRels(inv), nil
}

// manifestRels lists an inventory's manifests and lockfiles, sorted.
func manifestRels(inv manifest.Inventory) []string {
	out := []string{}
	for _, f := range inv.Files {
		switch f.Kind {
		case manifest.KindNpmrc, manifest.KindYarnrc, manifest.KindYarnrcClassic, manifest.KindBuildRS, manifest.KindBindingGyp:
			// configuration and sources, not manifests or lockfiles
		default:
			out = append(out, f.Rel)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
