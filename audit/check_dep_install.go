package audit

import (
	"path"
	"regexp"
	"strings"

	"github.com/shadow-sandbox/shadow/audit/manifest"
)

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
