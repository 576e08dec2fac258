package audit

import (
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/shadow-sandbox/shadow/audit/manifest"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// maxEvidence caps evidence lines per finding; the rest are counted.
const maxEvidence = 25

// capEvidence keeps the first maxEvidence lines and says how many were left out.
func capEvidence(ev []Evidence) []Evidence {
	if len(ev) <= maxEvidence {
		return ev
	}
	out := append([]Evidence(nil), ev[:maxEvidence]...)
	return append(out, note("and %d more", len(ev)-maxEvidence))
}

// depOutcome turns failures, notes and unchecked inputs into an outcome:
// fail when anything failed, else skipped when something could not be checked
// (a skip is never a pass), else pass.
func depOutcome(bad, info []Evidence, unchecked []string, passNote string) outcome {
	if len(bad) > 0 {
		return failed(capEvidence(append(bad, info...))...)
	}
	if len(unchecked) > 0 {
		return skipped("%s", strings.Join(unchecked, "; "))
	}
	return passed(capEvidence(append([]Evidence{note("%s", passNote)}, info...))...)
}

// checkDEP000: the inventory, with every file that failed to parse.
func checkDEP000(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad []Evidence
	for _, p := range d.problems {
		bad = append(bad, at(p.rel, p.line, "could not be parsed: %v", trimPathPrefix(p.err, p.rel)))
	}
	for _, e := range d.inv.Errors {
		bad = append(bad, note("not searched: %v", e))
	}
	var info []Evidence
	counts := map[string]int{}
	for _, f := range d.inv.Files {
		counts[string(f.Kind)]++
	}
	var parts []string
	for _, k := range sortedKeys(counts) {
		parts = append(parts, k+" ×"+strconv.Itoa(counts[k]))
	}
	if len(d.inv.Installed) > 0 {
		parts = append(parts, "installed packages ×"+strconv.Itoa(len(d.inv.Installed)))
	}
	for _, f := range d.unparsed {
		info = append(info, at(f.Rel, 0, "%s has no parser; checks that need it are skipped", f.Kind))
	}
	inventory := "no manifests found"
	if len(parts) > 0 {
		inventory = "inventory: " + strings.Join(parts, ", ")
	}
	if len(bad) > 0 {
		return failed(capEvidence(append(append(bad, note("%s", inventory)), info...))...)
	}
	return passed(append([]Evidence{note("%s", inventory)}, info...)...)
}

// trimPathPrefix drops a leading "path: " an error repeats from the evidence file.
func trimPathPrefix(err error, rel string) string {
	msg := err.Error()
	if i := strings.Index(msg, rel); i >= 0 && i < 64 {
		rest := strings.TrimLeft(msg[i+len(rel):], ":0123456789")
		return strings.TrimSpace(rest)
	}
	return msg
}

// jsLockKinds are the lockfiles that cover a package.json.
var jsLockNames = []string{"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb"}

// hasFileUp reports whether one of names exists in dir or an ancestor up to the project root.
func (d *depState) hasFileUp(relDir string, names ...string) (string, bool) {
	have := map[string]bool{}
	for _, f := range d.inv.Files {
		have[f.Rel] = true
	}
	dir := relDir
	for {
		for _, n := range names {
			p := n
			if dir != "." && dir != "" {
				p = dir + "/" + n
			}
			if have[p] {
				return p, true
			}
		}
		if dir == "." || dir == "" {
			return "", false
		}
		dir = path.Dir(dir)
	}
}

// checkDEP001: manifests without a lockfile, and dependencies the lockfile lacks.
func checkDEP001(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad []Evidence
	var unchecked []string
	for _, p := range d.pkgs {
		if p.installed || len(p.pj.Deps) == 0 {
			continue
		}
		lock, ok := d.hasFileUp(path.Dir(p.rel), jsLockNames...)
		if !ok {
			bad = append(bad, at(p.rel, p.pj.KeyLines["dependencies"], "%s and no lockfile", english.Count(len(p.pj.Deps), "dependency")))
			continue
		}
		if path.Dir(lock) != path.Dir(p.rel) {
			continue // a workspace member, covered by the workspace root's lockfile
		}
		switch path.Base(lock) {
		case "package-lock.json", "npm-shrinkwrap.json":
			l := findLock(d.npmLocks, lock)
			if l == nil {
				unchecked = append(unchecked, lock+" did not parse")
				continue
			}
			have := map[string]bool{}
			for _, e := range l.Packages {
				if strings.HasPrefix(e.Path, "node_modules/") && !strings.Contains(strings.TrimPrefix(e.Path, "node_modules/"), "/node_modules/") {
					have[manifest.NameFromPath(e.Path)] = true
				}
			}
			for _, dep := range p.pj.Deps {
				if dep.Section == manifest.SectionPeerDependencies || dep.Section == manifest.SectionOptionalDependencies {
					continue
				}
				if !have[dep.Name] {
					bad = append(bad, at(p.rel, dep.Line, "%s is not in %s", dep.Name, lock))
				}
			}
		case "yarn.lock":
			l := findLock(d.yarnLocks, lock)
			if l == nil {
				unchecked = append(unchecked, lock+" did not parse")
				continue
			}
			for _, dep := range p.pj.Deps {
				k := manifest.ClassifySpec(dep.Spec).Kind
				if dep.Section == manifest.SectionPeerDependencies || k == manifest.SpecWorkspace || k == manifest.SpecPath {
					continue
				}
				if l.Find(dep.Name, dep.Spec) == nil {
					bad = append(bad, at(p.rel, dep.Line, "%s@%s is not in %s", dep.Name, dep.Spec, lock))
				}
			}
		case "pnpm-lock.yaml":
			l := findLock(d.pnpmLocks, lock)
			if l == nil {
				unchecked = append(unchecked, lock+" did not parse")
				continue
			}
			var imp *manifest.PnpmImporter
			for i := range l.Importers {
				if l.Importers[i].Path == "." {
					imp = &l.Importers[i]
				}
			}
			for _, dep := range p.pj.Deps {
				if dep.Section == manifest.SectionPeerDependencies {
					continue
				}
				if imp == nil || (imp.Specifiers[dep.Name] == "" && imp.Versions[dep.Name] == "") {
					bad = append(bad, at(p.rel, dep.Line, "%s is not in %s", dep.Name, lock))
				}
			}
		case "bun.lock":
			l := findLock(d.bunLocks, lock)
			if l == nil {
				unchecked = append(unchecked, lock+" did not parse")
				continue
			}
			have := map[string]bool{}
			for _, e := range l.Packages {
				have[e.Name] = true
			}
			for _, dep := range p.pj.Deps {
				k := manifest.ClassifySpec(dep.Spec).Kind
				if dep.Section == manifest.SectionPeerDependencies || k == manifest.SpecWorkspace || k == manifest.SpecPath {
					continue
				}
				if !have[dep.Name] {
					bad = append(bad, at(p.rel, dep.Line, "%s is not in %s", dep.Name, lock))
				}
			}
		default:
			unchecked = append(unchecked, lock+" has no parser, coverage not checked")
		}
	}
	for _, c := range d.crates {
		if len(c.toml.Dependencies) == 0 {
			continue
		}
		lock, ok := d.hasFileUp(path.Dir(c.rel), "Cargo.lock")
		if !ok {
			bad = append(bad, at(c.rel, c.toml.Dependencies[0].Line, "%s and no Cargo.lock", english.Count(len(c.toml.Dependencies), "dependency")))
			continue
		}
		l := findLock(d.cargoLocks, lock)
		if l == nil {
			unchecked = append(unchecked, lock+" did not parse")
			continue
		}
		have := map[string]bool{}
		for _, p := range l.Packages {
			have[p.Name] = true
		}
		for _, dep := range c.toml.Dependencies {
			if dep.Workspace || dep.Kind == manifest.CargoWorkspace || dep.Optional {
				continue
			}
			if !have[dep.CrateName()] {
				bad = append(bad, at(c.rel, dep.Line, "crate %s is not in %s", dep.CrateName(), lock))
			}
		}
	}
	return depOutcome(bad, nil, unchecked, "every manifest with dependencies has a lockfile that covers it")
}

func findLock[T any](ls []lockFile[T], rel string) T {
	for _, l := range ls {
		if l.rel == rel {
			return l.v
		}
	}
	var zero T
	return zero
}

// registryHosts are the registry hosts the project's own configuration names;
// lockfile entries resolved there are on "the registry".
func (d *depState) registryHosts() map[string]bool {
	hosts := map[string]bool{}
	for _, h := range manifest.DefaultRegistryHosts {
		hosts[h] = true
	}
	add := func(raw string) {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			hosts[strings.ToLower(u.Hostname())] = true
		}
	}
	for _, n := range d.npmrcs {
		for _, e := range n.v.Entries {
			if e.Name == "registry" {
				add(e.Value)
			}
		}
	}
	for _, y := range d.yarnrcs {
		add(y.v.NpmRegistryServer)
		for _, r := range y.v.NpmScopes {
			add(r.NpmRegistryServer)
		}
	}
	return hosts
}

// resolvedProblem judges a lockfile's resolved URL: "" when fine.
func resolvedProblem(resolved string, hosts map[string]bool) (msg string, insecure bool) {
	if resolved == "" {
		return "", false
	}
	low := strings.ToLower(resolved)
	switch {
	case strings.HasPrefix(low, "http://"):
		return "resolved over plain http (" + hostOf(resolved) + ")", true
	case strings.HasPrefix(low, "git+http://"), strings.HasPrefix(low, "git://"):
		return "resolved from git over an unauthenticated transport", true
	case strings.HasPrefix(low, "git+"), strings.HasPrefix(low, "github:"):
		return "resolved from git (" + hostOf(strings.TrimPrefix(resolved, "git+")) + "), not the registry", false
	case strings.HasPrefix(low, "https://"):
		if !hosts[hostOf(resolved)] {
			return "resolved off the registry (" + hostOf(resolved) + ")", false
		}
	}
	return "", false
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return strings.ToLower(u.Hostname())
}

// checkDEP002: lockfile entries without integrity, sha1-only, off the registry
// or over http; Cargo.lock sources other than crates.io and missing checksums.
func checkDEP002(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	hosts := d.registryHosts()
	var bad []Evidence
	insecure := false
	flag := func(rel string, line int, name, msg string, ins bool) {
		bad = append(bad, at(rel, line, "%s: %s", name, msg))
		insecure = insecure || ins
	}
	for _, l := range d.npmLocks {
		for _, e := range l.v.Packages {
			if e.Path == "" || e.Link || e.InBundle || !strings.Contains(e.Path, "node_modules/") {
				continue
			}
			name := e.Name + "@" + e.Version
			if msg, ins := resolvedProblem(e.Resolved, hosts); msg != "" {
				flag(l.rel, e.Line, name, msg, ins)
			}
			algs := manifest.IntegrityAlgorithms(e.Integrity)
			switch {
			case strings.HasPrefix(e.Resolved, "file:"):
			case len(algs) == 0 && !strings.HasPrefix(e.Resolved, "git+"):
				flag(l.rel, e.Line, name, "no integrity", false)
			case len(algs) > 0 && onlySHA1(algs):
				flag(l.rel, e.Line, name, "sha1-only integrity", false)
			}
		}
	}
	for _, l := range d.yarnLocks {
		for _, e := range l.v.Entries {
			name := e.Name + "@" + e.Version
			if l.v.Berry {
				if e.LinkType == "soft" || strings.Contains(e.Resolved, "@workspace:") || strings.Contains(e.Resolved, "@link:") || strings.Contains(e.Resolved, "@portal:") {
					continue
				}
				if e.Checksum == "" {
					flag(l.rel, e.Line, name, "no checksum", false)
				}
				continue
			}
			if strings.HasPrefix(e.Resolved, "file:") {
				continue
			}
			if msg, ins := resolvedProblem(e.Resolved, hosts); msg != "" {
				flag(l.rel, e.Line, name, msg, ins)
			}
			algs := manifest.IntegrityAlgorithms(e.Integrity)
			switch {
			case len(algs) == 0 && !strings.HasPrefix(e.Resolved, "git+") && !strings.Contains(e.Resolved, "codeload.github.com"):
				flag(l.rel, e.Line, name, "no integrity", false)
			case len(algs) > 0 && onlySHA1(algs):
				flag(l.rel, e.Line, name, "sha1-only integrity", false)
			}
		}
	}
	for _, l := range d.pnpmLocks {
		for _, e := range l.v.Packages {
			name := e.Name + "@" + e.Version
			switch {
			case e.Type == "directory":
				continue
			case e.Type == "git":
				if e.Commit == "" {
					flag(l.rel, e.Line, name, "git resolution without a commit", false)
				}
				continue
			}
			if msg, ins := resolvedProblem(e.Tarball, hosts); msg != "" {
				flag(l.rel, e.Line, name, msg, ins)
			}
			algs := manifest.IntegrityAlgorithms(e.Integrity)
			switch {
			case len(algs) == 0:
				flag(l.rel, e.Line, name, "no integrity", false)
			case onlySHA1(algs):
				flag(l.rel, e.Line, name, "sha1-only integrity", false)
			}
		}
	}
	for _, l := range d.bunLocks {
		for _, e := range l.v.Packages {
			name := e.Name + "@" + e.Version
			v := e.Version
			if strings.HasPrefix(v, "workspace:") || strings.HasPrefix(v, "file:") || strings.HasPrefix(v, "link:") {
				continue
			}
			if msg, ins := resolvedProblem(e.Registry, hosts); msg != "" {
				flag(l.rel, e.Line, name, msg, ins)
			}
			algs := manifest.IntegrityAlgorithms(e.Integrity)
			switch {
			case strings.Contains(v, "github:") || strings.Contains(v, "git+"):
			case len(algs) == 0:
				flag(l.rel, e.Line, name, "no integrity", false)
			case onlySHA1(algs):
				flag(l.rel, e.Line, name, "sha1-only integrity", false)
			}
		}
	}
	for _, l := range d.cargoLocks {
		for _, p := range l.v.Packages {
			name := p.Name + " " + p.Version
			switch {
			case p.Source == "":
			case manifest.IsCratesIO(p.Source):
				if p.Checksum == "" {
					flag(l.rel, p.Line, name, "no checksum", false)
				}
			case strings.HasPrefix(p.Source, "git+"):
				u := strings.TrimPrefix(p.Source, "git+")
				flag(l.rel, p.Line, name, "source is git ("+hostOf(u)+"), not crates.io", strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "git://"))
			default:
				flag(l.rel, p.Line, name, "source is "+p.Source+", not crates.io", strings.Contains(p.Source, "http://"))
			}
		}
	}
	var unchecked []string
	for _, f := range d.unparsed {
		unchecked = append(unchecked, f.Rel+" has no parser; its integrity is not checked")
	}
	for _, p := range d.problems {
		if k, ok := manifest.KindOf(p.rel); ok && k.IsLockfile() {
			unchecked = append(unchecked, p.rel+" did not parse")
		}
	}
	o := depOutcome(bad, nil, unchecked, "every lockfile entry has sha512 integrity or a checksum and comes from the registry over https")
	if o.result == Fail && insecure {
		o.severity = Critical
	}
	return o
}

func onlySHA1(algs []string) bool {
	for _, a := range algs {
		if a != "sha1" {
			return false
		}
	}
	return true
}

// checkDEP003: install lifecycle scripts that are not allow-listed.
func checkDEP003(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var roots []*manifest.PackageJSON
	for _, p := range d.pkgs {
		if !p.installed {
			roots = append(roots, p.pj)
		}
	}
	allowed := func(name string) bool {
		for _, r := range roots {
			if r.AllowsScripts(name) {
				return true
			}
		}
		return false
	}
	scriptsOff := d.scriptsDisabled()
	var bad, info []Evidence
	seen := map[string]bool{}
	for _, p := range d.pkgs {
		name := p.pj.Name
		var hooks []string
		for _, h := range hookNames(p.installed) {
			if _, ok := p.pj.Scripts[h]; ok {
				hooks = append(hooks, h)
			}
		}
		if p.pnpmfile != "" {
			if scriptsOff != "" {
				info = append(info, at(p.pnpmfile, 0, "pnpm loads %s on every install (%s does not stop it)", path.Base(p.pnpmfile), scriptsOff))
			} else {
				bad = append(bad, at(p.pnpmfile, 0, "pnpm loads %s as code on every install", path.Base(p.pnpmfile)))
			}
		}
		implicitGyp := p.gyp && len(hooks) == 0 && p.installed
		if len(hooks) == 0 && !implicitGyp {
			continue
		}
		if p.installed {
			seen[name] = true
		}
		switch {
		case p.installed && allowed(name):
			info = append(info, at(p.rel, 0, "%s runs %s (allow-listed)", name, strings.Join(hooks, ", ")))
		case scriptsOff != "":
			info = append(info, at(p.rel, 0, "%s declares %s, disabled by %s", name, strings.Join(hooks, ", "), scriptsOff))
		case implicitGyp:
			bad = append(bad, at(p.rel, 0, "%s has binding.gyp: node-gyp rebuild runs at install", name))
		default:
			for _, h := range hooks {
				who := "dependency " + name + " runs " + h
				if !p.installed {
					hook, _ := hookOf(h)
					who = "project package runs " + h + " (" + hook.when + ")"
				}
				bad = append(bad, at(p.rel, p.pj.ScriptLines[h], "%s: %s", who, oneLine(truncate(p.pj.Scripts[h], 120))))
			}
		}
	}
	for _, l := range d.npmLocks {
		for _, e := range l.v.Packages {
			if !e.HasInstallScript || e.Path == "" || seen[e.Name] {
				continue
			}
			seen[e.Name] = true
			switch {
			case allowed(e.Name):
				info = append(info, at(l.rel, e.Line, "%s has install scripts (allow-listed)", e.Name))
			case scriptsOff != "":
				info = append(info, at(l.rel, e.Line, "%s has install scripts, disabled by %s", e.Name, scriptsOff))
			default:
				bad = append(bad, at(l.rel, e.Line, "%s@%s has install scripts (hasInstallScript)", e.Name, e.Version))
			}
		}
	}
	for _, l := range d.pnpmLocks {
		for _, e := range l.v.Packages {
			if !e.RequiresBuild || seen[e.Name] {
				continue
			}
			seen[e.Name] = true
			if allowed(e.Name) {
				info = append(info, at(l.rel, e.Line, "%s requires a build (allow-listed)", e.Name))
			} else if scriptsOff != "" {
				info = append(info, at(l.rel, e.Line, "%s requires a build, disabled by %s", e.Name, scriptsOff))
			} else {
				bad = append(bad, at(l.rel, e.Line, "%s@%s requires a build (install scripts)", e.Name, e.Version))
			}
		}
	}
	return depOutcome(bad, info, nil, "no install lifecycle scripts outside the allow-list")
}

// scriptsDisabled names the project setting that turns dependency scripts off, or "".
func (d *depState) scriptsDisabled() string {
	for _, n := range d.npmrcs {
		if v, ok := n.v.Get("ignore-scripts"); ok && strings.EqualFold(v, "true") {
			return n.rel + " ignore-scripts=true"
		}
	}
	for _, y := range d.yarnrcs {
		if y.v.EnableScripts != nil && !*y.v.EnableScripts {
			return y.rel + " enableScripts: false"
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// codeUnit is a piece of install-time code scanned by DEP004, 005, 012, 013, 014.
type codeUnit struct {
	file string // where it lives, project-relative
	line int    // line of a script in package.json or of a string in build.rs; 0 for whole files
	what string // "postinstall script", "run by postinstall of ...", "build script string"
	text string
	js   *manifest.JSScan // set for a JavaScript hook target
	hook bool             // run by an install lifecycle hook (not a plain project script)
}

// installCode returns every script an install runs, the files those scripts
// run, and the string literals of the project's build scripts; with
// allRootScripts also the project's other scripts (run by hand). unchecked
// names what could not be scanned.
func (s *scan) installCode(allRootScripts bool) (units []codeUnit, unchecked []string) {
	d := s.deps()
	for _, h := range d.hooks {
		if h.command != "" {
			units = append(units, codeUnit{file: h.pkgRel, line: h.line, what: h.script + " script", text: h.command, hook: true})
		}
		switch {
		case h.tooLarge:
			unchecked = append(unchecked, h.file+" (run by "+h.script+") is too large to scan")
		case h.err != nil:
			unchecked = append(unchecked, h.file+" (run by "+h.script+") could not be read")
		case h.file != "":
			units = append(units, codeUnit{file: h.file, what: "code run by " + h.script, text: string(h.data), js: h.js, hook: true})
		}
	}
	if allRootScripts {
		for _, p := range d.pkgs {
			if p.installed {
				continue
			}
			for _, name := range sortedKeys(p.pj.Scripts) {
				if _, ok := hookOf(name); ok {
					continue // scanned above, as a hook
				}
				units = append(units, codeUnit{file: p.rel, line: p.pj.ScriptLines[name], what: name + " script", text: p.pj.Scripts[name]})
			}
		}
	}
	for _, b := range d.builds {
		if b.err != nil && b.scan == nil {
			unchecked = append(unchecked, b.rel+" could not be scanned")
			continue
		}
		if b.err != nil {
			unchecked = append(unchecked, b.rel+" was scanned only in part")
		}
		for _, t := range b.scan.Strings {
			units = append(units, codeUnit{file: b.rel, line: t.Line, what: "build script string", text: t.Text, hook: true})
		}
	}
	return units, unchecked
}

// match is a pattern hit with its line inside a code unit.
func (u codeUnit) at(re *regexp.Regexp) (string, int, bool) {
	loc := re.FindStringIndex(u.text)
	if loc == nil {
		return "", 0, false
	}
	line := u.line
	if line == 0 {
		line = strings.Count(u.text[:loc[0]], "\n") + 1
	}
	return u.text[loc[0]:loc[1]], line, true
}

var pipedShell = lazyRE(`(?i)\b(curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|;&\n]{0,300}\|\s*(sudo\s+)?(-?\s*)(sh|bash|zsh|dash|ksh|iex|invoke-expression|python3?|node|perl|ruby)\b|\b(sh|bash|zsh)\s+(-c\s+)?["']?\$\(\s*(curl|wget)\b|\b(sh|bash)\s+<\(\s*(curl|wget)\b|\biex\s*\(\s*(new-object\s+net\.webclient|iwr|irm|invoke-webrequest)`)

// checkDEP004: piped shell installers.
func checkDEP004(s *scan) outcome {
	if d := s.deps(); d.err != nil {
		return skipped("%v", d.err)
	}
	units, unchecked := s.installCode(true)
	var bad []Evidence
	automatic := false
	for _, u := range units {
		if hit, line, ok := u.at(pipedShell()); ok {
			bad = append(bad, at(u.file, line, "%s pipes a download into a shell: %s", u.what, oneLine(truncate(hit, 100))))
			automatic = automatic || u.hook
		}
	}
	return byHand(depOutcome(bad, nil, unchecked, "no piped shell installer in scripts, hook code or build scripts"), automatic)
}

// byHand lowers a critical failure to high when every hit is in a project
// script run by hand (npm run x), not in code an install or build runs on its own.
func byHand(o outcome, automatic bool) outcome {
	if o.result == Fail && !automatic {
		o.severity = High
	}
	return o
}

var (
	downloadExec = []func() *regexp.Regexp{
		lazyRE(`(?i)\b(curl|wget)\b[^\n;&|]*\s(-o|-O|--output)\s*\S+[^\n]{0,200}?(&&|;)\s*(chmod\s+\+?[0-7x]+|sh\s|bash\s|\./|node\s|python3?\s)`),
		lazyRE(`\bnode\s+(-e|--eval|-p)\s+["'][^"']*https?://`),
		lazyRE(`(?i)\b(bun\.sh/install|deno\.land/install|deno\.land/x/install|get\.pnpm\.io|install\.python-poetry\.org)\b`),
		lazyRE(`(?i)\b(setup_bun|bun_environment)\.js\b`),
	}
	jsFetch = lazyRE(`\b(https?\.get|https?\.request|fetch\(|axios|got\(|request\()`)
	jsExec  = lazyRE(`\b(chmodSync|chmod\(|execFileSync|execFile\(|spawnSync|spawn\(|execSync|exec\()`)
	jsWrite = lazyRE(`\b(createWriteStream|writeFileSync|writeFile\()`)
)

// checkDEP005: download-then-execute.
func checkDEP005(s *scan) outcome {
	if d := s.deps(); d.err != nil {
		return skipped("%v", d.err)
	}
	units, unchecked := s.installCode(true)
	var bad []Evidence
	automatic := false
	for _, u := range units {
		found := false
		for _, re := range downloadExec {
			if hit, line, ok := u.at(re()); ok {
				bad = append(bad, at(u.file, line, "%s downloads and runs code: %s", u.what, oneLine(truncate(hit, 100))))
				automatic = automatic || u.hook
				found = true
				break
			}
		}
		if found || u.line != 0 {
			continue
		}
		if fetchesOnlyFromRegistry(u) {
			// A package fetching its own platform binary from the package registry (esbuild's
			// install.js) downloads nothing npm would not; DEP003 still reports the hook.
			continue
		}
		if _, l1, ok1 := u.at(jsFetch()); ok1 {
			if _, _, ok2 := u.at(jsWrite()); ok2 {
				if _, _, ok3 := u.at(jsExec()); ok3 {
					bad = append(bad, at(u.file, l1, "%s fetches over the network, writes a file and executes", u.what))
					automatic = automatic || u.hook
				}
			}
		}
	}
	return byHand(depOutcome(bad, nil, unchecked, "no download-then-execute in scripts or hook code"), automatic)
}

// fetchesOnlyFromRegistry reports whether every URL a hook file names is on a default package
// registry. A file that names no URL at all fetches from somewhere it computes: not this case.
func fetchesOnlyFromRegistry(u codeUnit) bool {
	if u.js == nil || len(u.js.URLs) == 0 {
		return false
	}
	for _, hit := range u.js.URLs {
		if !manifest.IsDefaultRegistry(hit.Text) {
			return false
		}
	}
	return true
}

// checkDEP006: unpinned git refs, URL tarballs, paths outside the workspace.
func checkDEP006(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad []Evidence
	for _, p := range d.pkgs {
		if p.installed {
			continue
		}
		for _, dep := range p.pj.Deps {
			spec := manifest.ClassifySpec(dep.Spec)
			if spec.Kind == manifest.SpecAlias && spec.Alias != nil {
				spec = *spec.Alias
			}
			switch spec.Kind {
			case manifest.SpecGit:
				if spec.Commit == "" {
					ref := spec.Ref
					if ref == "" {
						ref = "default branch"
					}
					bad = append(bad, at(p.rel, dep.Line, "%s follows git %s at %s, not a 40-hex commit", dep.Name, spec.URL, ref))
				}
			case manifest.SpecURL:
				bad = append(bad, at(p.rel, dep.Line, "%s is a URL tarball (%s)", dep.Name, spec.Host))
			case manifest.SpecExec:
				bad = append(bad, at(p.rel, dep.Line, "%s is built by running %s", dep.Name, spec.Path))
			case manifest.SpecPath:
				if outside(s.project, p.dir, spec.Path) {
					bad = append(bad, at(p.rel, dep.Line, "%s is a path outside the project (%s)", dep.Name, spec.Path))
				}
			}
		}
	}
	for _, c := range d.crates {
		for _, dep := range c.toml.Dependencies {
			switch {
			case dep.Git != "" && !dep.Pinned():
				ref := "default branch"
				switch {
				case dep.Branch != "":
					ref = "branch " + dep.Branch
				case dep.Tag != "":
					ref = "tag " + dep.Tag
				case dep.Rev != "":
					ref = "rev " + dep.Rev
				}
				bad = append(bad, at(c.rel, dep.Line, "%s follows git %s at %s, not a full rev", dep.Name, dep.Git, ref))
			case dep.Path != "" && outside(s.project, c.dir, dep.Path):
				bad = append(bad, at(c.rel, dep.Line, "%s is a path outside the workspace (%s)", dep.Name, dep.Path))
			}
		}
	}
	return depOutcome(bad, nil, nil, "every dependency is a registry version, a pinned commit or inside the workspace")
}

// outside reports whether a path dependency written in dir leaves the project.
func outside(project, dir, p string) bool {
	p = strings.TrimPrefix(p, "//")
	if strings.HasPrefix(p, "~") {
		return true
	}
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(project, full)
	return err != nil || rel == ".." || strings.HasPrefix(rel, "../")
}
