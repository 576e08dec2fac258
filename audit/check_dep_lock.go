package audit

import (
	"net/url"
	"path"
	"strings"

	"github.com/shadow-sandbox/shadow/audit/manifest"
	"github.com/shadow-sandbox/shadow/internal/english"
)

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
	var c lockCoverage
	for _, p := range d.pkgs {
		c.pkg(d, p)
	}
	for _, cr := range d.crates {
		c.crate(d, cr)
	}
	return depOutcome(c.bad, nil, c.unchecked, "every manifest with dependencies has a lockfile that covers it")
}

// lockCoverage is what DEP001 finds, manifest by manifest: dependencies no
// lockfile covers, and lockfiles it could not read.
type lockCoverage struct {
	bad       []Evidence
	unchecked []string
}

// pkg checks that a project package.json's dependencies are in its lockfile.
func (c *lockCoverage) pkg(d *depState, p pkgFile) {
	if p.installed || len(p.pj.Deps) == 0 {
		return
	}
	lock, ok := d.hasFileUp(path.Dir(p.rel), jsLockNames...)
	if !ok {
		c.bad = append(c.bad, at(p.rel, p.pj.KeyLines["dependencies"], "%s and no lockfile", english.Count(len(p.pj.Deps), "dependency")))
		return
	}
	if path.Dir(lock) != path.Dir(p.rel) {
		return // a workspace member, covered by the workspace root's lockfile
	}
	switch path.Base(lock) {
	case "package-lock.json", "npm-shrinkwrap.json":
		if l := findLock(d.npmLocks, lock); l != nil {
			c.bad = append(c.bad, npmLockMissing(p, l, lock)...)
			return
		}
	case "yarn.lock":
		if l := findLock(d.yarnLocks, lock); l != nil {
			c.bad = append(c.bad, yarnLockMissing(p, l, lock)...)
			return
		}
	case "pnpm-lock.yaml":
		if l := findLock(d.pnpmLocks, lock); l != nil {
			c.bad = append(c.bad, pnpmLockMissing(p, l, lock)...)
			return
		}
	case "bun.lock":
		if l := findLock(d.bunLocks, lock); l != nil {
			c.bad = append(c.bad, bunLockMissing(p, l, lock)...)
			return
		}
	default:
		c.unchecked = append(c.unchecked, lock+" has no parser, coverage not checked")
		return
	}
	c.unchecked = append(c.unchecked, lock+" did not parse")
}

// npmLockMissing lists the dependencies of p that package-lock.json lock lacks.
func npmLockMissing(p pkgFile, l *manifest.PackageLock, lock string) []Evidence {
	have := map[string]bool{}
	for _, e := range l.Packages {
		if strings.HasPrefix(e.Path, "node_modules/") && !strings.Contains(strings.TrimPrefix(e.Path, "node_modules/"), "/node_modules/") {
			have[manifest.NameFromPath(e.Path)] = true
		}
	}
	var bad []Evidence
	for _, dep := range p.pj.Deps {
		if dep.Section == manifest.SectionPeerDependencies || dep.Section == manifest.SectionOptionalDependencies {
			continue
		}
		if !have[dep.Name] {
			bad = append(bad, at(p.rel, dep.Line, "%s is not in %s", dep.Name, lock))
		}
	}
	return bad
}

// yarnLockMissing lists the dependencies of p that yarn.lock lock lacks.
func yarnLockMissing(p pkgFile, l *manifest.YarnLock, lock string) []Evidence {
	var bad []Evidence
	for _, dep := range p.pj.Deps {
		k := manifest.ClassifySpec(dep.Spec).Kind
		if dep.Section == manifest.SectionPeerDependencies || k == manifest.SpecWorkspace || k == manifest.SpecPath {
			continue
		}
		if l.Find(dep.Name, dep.Spec) == nil {
			bad = append(bad, at(p.rel, dep.Line, "%s@%s is not in %s", dep.Name, dep.Spec, lock))
		}
	}
	return bad
}

// pnpmLockMissing lists the dependencies of p that pnpm-lock.yaml lock
// lacks in its root importer.
func pnpmLockMissing(p pkgFile, l *manifest.PnpmLock, lock string) []Evidence {
	var imp *manifest.PnpmImporter
	for i := range l.Importers {
		if l.Importers[i].Path == "." {
			imp = &l.Importers[i]
		}
	}
	var bad []Evidence
	for _, dep := range p.pj.Deps {
		if dep.Section == manifest.SectionPeerDependencies {
			continue
		}
		if imp == nil || (imp.Specifiers[dep.Name] == "" && imp.Versions[dep.Name] == "") {
			bad = append(bad, at(p.rel, dep.Line, "%s is not in %s", dep.Name, lock))
		}
	}
	return bad
}

// bunLockMissing lists the dependencies of p that bun.lock lock lacks.
func bunLockMissing(p pkgFile, l *manifest.BunLock, lock string) []Evidence {
	have := map[string]bool{}
	for _, e := range l.Packages {
		have[e.Name] = true
	}
	var bad []Evidence
	for _, dep := range p.pj.Deps {
		k := manifest.ClassifySpec(dep.Spec).Kind
		if dep.Section == manifest.SectionPeerDependencies || k == manifest.SpecWorkspace || k == manifest.SpecPath {
			continue
		}
		if !have[dep.Name] {
			bad = append(bad, at(p.rel, dep.Line, "%s is not in %s", dep.Name, lock))
		}
	}
	return bad
}

// crate checks that a Cargo.toml's dependencies are in its Cargo.lock.
func (c *lockCoverage) crate(d *depState, cr crateFile) {
	if len(cr.toml.Dependencies) == 0 {
		return
	}
	lock, ok := d.hasFileUp(path.Dir(cr.rel), "Cargo.lock")
	if !ok {
		c.bad = append(c.bad, at(cr.rel, cr.toml.Dependencies[0].Line, "%s and no Cargo.lock", english.Count(len(cr.toml.Dependencies), "dependency")))
		return
	}
	l := findLock(d.cargoLocks, lock)
	if l == nil {
		c.unchecked = append(c.unchecked, lock+" did not parse")
		return
	}
	have := map[string]bool{}
	for _, p := range l.Packages {
		have[p.Name] = true
	}
	for _, dep := range cr.toml.Dependencies {
		if dep.Workspace || dep.Kind == manifest.CargoWorkspace || dep.Optional {
			continue
		}
		if !have[dep.CrateName()] {
			c.bad = append(c.bad, at(cr.rel, dep.Line, "crate %s is not in %s", dep.CrateName(), lock))
		}
	}
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

// checkDEP002: lockfile entries without integrity, sha1-only, off the registry
// or over http; Cargo.lock sources other than crates.io and missing checksums.
func checkDEP002(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	g := integrityGaps{hosts: d.registryHosts()}
	for _, l := range d.npmLocks {
		g.npm(l)
	}
	for _, l := range d.yarnLocks {
		g.yarn(l)
	}
	for _, l := range d.pnpmLocks {
		g.pnpm(l)
	}
	for _, l := range d.bunLocks {
		g.bun(l)
	}
	for _, l := range d.cargoLocks {
		g.cargo(l)
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
	o := depOutcome(g.bad, nil, unchecked, "every lockfile entry has sha512 integrity or a checksum and comes from the registry over https")
	if o.result == Fail && g.insecure {
		o.severity = Critical
	}
	return o
}

// integrityGaps is what DEP002 finds, lockfile entry by lockfile entry.
type integrityGaps struct {
	hosts    map[string]bool // the registry hosts (registryHosts)
	bad      []Evidence
	insecure bool // an entry comes over a transport anyone on the path can change
}

func (g *integrityGaps) flag(rel string, line int, name, msg string, ins bool) {
	g.bad = append(g.bad, at(rel, line, "%s: %s", name, msg))
	g.insecure = g.insecure || ins
}

// resolved flags an entry resolved off the registry or over an unauthenticated transport.
func (g *integrityGaps) resolved(rel string, line int, name, resolved string) {
	if msg, ins := resolvedProblem(resolved, g.hosts); msg != "" {
		g.flag(rel, line, name, msg, ins)
	}
}

func (g *integrityGaps) npm(l lockFile[*manifest.PackageLock]) {
	for _, e := range l.v.Packages {
		if e.Path == "" || e.Link || e.InBundle || !strings.Contains(e.Path, "node_modules/") {
			continue
		}
		name := e.Name + "@" + e.Version
		g.resolved(l.rel, e.Line, name, e.Resolved)
		algs := manifest.IntegrityAlgorithms(e.Integrity)
		switch {
		case strings.HasPrefix(e.Resolved, "file:"):
		case len(algs) == 0 && !strings.HasPrefix(e.Resolved, "git+"):
			g.flag(l.rel, e.Line, name, "no integrity", false)
		case len(algs) > 0 && onlySHA1(algs):
			g.flag(l.rel, e.Line, name, "sha1-only integrity", false)
		}
	}
}

func (g *integrityGaps) yarn(l lockFile[*manifest.YarnLock]) {
	for _, e := range l.v.Entries {
		name := e.Name + "@" + e.Version
		if l.v.Berry {
			if e.LinkType == "soft" || strings.Contains(e.Resolved, "@workspace:") || strings.Contains(e.Resolved, "@link:") || strings.Contains(e.Resolved, "@portal:") {
				continue
			}
			if e.Checksum == "" {
				g.flag(l.rel, e.Line, name, "no checksum", false)
			}
			continue
		}
		if strings.HasPrefix(e.Resolved, "file:") {
			continue
		}
		g.resolved(l.rel, e.Line, name, e.Resolved)
		algs := manifest.IntegrityAlgorithms(e.Integrity)
		switch {
		case len(algs) == 0 && !strings.HasPrefix(e.Resolved, "git+") && !strings.Contains(e.Resolved, "codeload.github.com"):
			g.flag(l.rel, e.Line, name, "no integrity", false)
		case len(algs) > 0 && onlySHA1(algs):
			g.flag(l.rel, e.Line, name, "sha1-only integrity", false)
		}
	}
}

func (g *integrityGaps) pnpm(l lockFile[*manifest.PnpmLock]) {
	for _, e := range l.v.Packages {
		name := e.Name + "@" + e.Version
		switch {
		case e.Type == "directory":
			continue
		case e.Type == "git":
			if e.Commit == "" {
				g.flag(l.rel, e.Line, name, "git resolution without a commit", false)
			}
			continue
		}
		g.resolved(l.rel, e.Line, name, e.Tarball)
		algs := manifest.IntegrityAlgorithms(e.Integrity)
		switch {
		case len(algs) == 0:
			g.flag(l.rel, e.Line, name, "no integrity", false)
		case onlySHA1(algs):
			g.flag(l.rel, e.Line, name, "sha1-only integrity", false)
		}
	}
}

func (g *integrityGaps) bun(l lockFile[*manifest.BunLock]) {
	for _, e := range l.v.Packages {
		name := e.Name + "@" + e.Version
		v := e.Version
		if strings.HasPrefix(v, "workspace:") || strings.HasPrefix(v, "file:") || strings.HasPrefix(v, "link:") {
			continue
		}
		g.resolved(l.rel, e.Line, name, e.Registry)
		algs := manifest.IntegrityAlgorithms(e.Integrity)
		switch {
		case strings.Contains(v, "github:") || strings.Contains(v, "git+"):
		case len(algs) == 0:
			g.flag(l.rel, e.Line, name, "no integrity", false)
		case onlySHA1(algs):
			g.flag(l.rel, e.Line, name, "sha1-only integrity", false)
		}
	}
}

func (g *integrityGaps) cargo(l lockFile[*manifest.CargoLock]) {
	for _, p := range l.v.Packages {
		name := p.Name + " " + p.Version
		switch {
		case p.Source == "":
		case manifest.IsCratesIO(p.Source):
			if p.Checksum == "" {
				g.flag(l.rel, p.Line, name, "no checksum", false)
			}
		case strings.HasPrefix(p.Source, "git+"):
			u := strings.TrimPrefix(p.Source, "git+")
			g.flag(l.rel, p.Line, name, "source is git ("+hostOf(u)+"), not crates.io", strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "git://"))
		default:
			g.flag(l.rel, p.Line, name, "source is "+p.Source+", not crates.io", strings.Contains(p.Source, "http://"))
		}
	}
}

func onlySHA1(algs []string) bool {
	for _, a := range algs {
		if a != "sha1" {
			return false
		}
	}
	return true
}
