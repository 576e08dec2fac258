package audit

import (
	"math/bits"
	"net/netip"
	"path"
	"path/filepath"
	"strings"

	"github.com/shadow-sandbox/shadow/audit/manifest"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// checkDEP007: Cargo source replacement and [patch]/[replace].
func checkDEP007(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad, info []Evidence
	for _, c := range d.cargoCfgs {
		for _, src := range c.cfg.Sources {
			switch {
			case src.Directory != "" && c.inProject && !outside(s.project, filepath.Join(s.project, filepath.Dir(filepath.Dir(c.shown))), src.Directory):
				info = append(info, at(c.shown, src.Line, "[source.%s] is the vendored directory %s inside the project", src.Name, src.Directory))
			case src.ReplaceWith != "":
				bad = append(bad, at(c.shown, src.Line, "[source.%s] replace-with = %q", src.Name, src.ReplaceWith))
			case src.Directory != "":
				bad = append(bad, at(c.shown, src.Line, "[source.%s] directory = %q", src.Name, src.Directory))
			case src.Registry != "":
				bad = append(bad, at(c.shown, src.Line, "[source.%s] registry = %q", src.Name, src.Registry))
			case src.LocalRegistry != "":
				bad = append(bad, at(c.shown, src.Line, "[source.%s] local-registry = %q", src.Name, src.LocalRegistry))
			case src.Git != "":
				bad = append(bad, at(c.shown, src.Line, "[source.%s] git = %q", src.Name, src.Git))
			}
		}
	}
	for _, c := range d.crates {
		for _, p := range c.toml.Patches {
			bad = append(bad, at(c.rel, p.Line, "[patch.%s] %s replaces the crate's source", p.Target, p.Name))
		}
		for _, r := range c.toml.Replace {
			bad = append(bad, at(c.rel, r.Line, "[replace] %s", r.Name))
		}
	}
	return depOutcome(bad, info, cargoConfigProblems(d), "no source replacement, [patch] or [replace]")
}

// cargoConfigProblems lists Cargo configuration files that did not parse.
func cargoConfigProblems(d *depState) []string {
	var out []string
	for _, p := range d.problems {
		if strings.HasSuffix(p.rel, ".cargo/config") || strings.HasSuffix(p.rel, ".cargo/config.toml") {
			out = append(out, p.rel+" did not parse")
		}
	}
	return out
}

// Build-script APIs of DEP008 and DEP009, as full paths for RustScan.Mentions.
var (
	rustNetProc = []string{"std::process::Command", "std::process", "std::net", "std::os::unix::net",
		"tokio::process", "tokio::net", "reqwest", "ureq", "curl", "hyper", "attohttpc", "minreq", "isahc", "ssh2", "async_std::net"}
	netBuildDeps = map[string]bool{"reqwest": true, "ureq": true, "curl": true, "hyper": true, "attohttpc": true,
		"minreq": true, "isahc": true, "surf": true, "http_req": true, "ssh2": true, "ehttp": true}
	rustTraversal = []string{"std::fs::read_dir", "walkdir", "glob", "ignore::Walk", "jwalk", "std::env::home_dir",
		"dirs::home_dir", "home::home_dir", "dirs", "directories"}
	rustWrites  = []string{"std::fs::write", "std::fs::File::create", "std::fs::OpenOptions", "std::fs::copy", "std::fs::rename", "std::fs::remove_dir_all"}
	secretPaths = lazyRE(`(?i)(\.ssh(/|$)|id_rsa|id_ed25519|\.aws/|\.kube/|\.gnupg|\.npmrc|\.netrc|\.git-credentials|\.docker/config|\.config/gh|\.cargo/credentials|/etc/shadow|/etc/passwd|\.pypirc)`)
)

// checkDEP008: build scripts and proc-macros using processes or the network.
func checkDEP008(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad []Evidence
	var unchecked []string
	for _, b := range d.builds {
		if b.err != nil {
			unchecked = append(unchecked, b.rel+" could not be fully scanned: "+b.err.Error())
		}
		if b.scan == nil {
			continue
		}
		what := "build script"
		if b.procMacro {
			what = "proc-macro"
		}
		var reported []string
	apis:
		for _, api := range rustNetProc {
			for _, r := range reported {
				if strings.HasPrefix(r, api+"::") {
					continue apis // std::process after std::process::Command
				}
			}
			if hit, ok := firstUse(b.scan, api); ok {
				reported = append(reported, api)
				bad = append(bad, at(b.rel, hit.Line, "%s uses %s", what, api))
			}
		}
	}
	for _, c := range d.crates {
		for _, dep := range c.toml.Dependencies {
			if dep.Kind == manifest.CargoBuild && netBuildDeps[dep.CrateName()] {
				bad = append(bad, at(c.rel, dep.Line, "[build-dependencies] includes the network client %s", dep.CrateName()))
			}
		}
	}
	return depOutcome(bad, nil, unchecked, "no build script or proc-macro uses processes or the network")
}

// firstUse returns where code uses api, preferring a call site over the use
// declaration that imports it.
func firstUse(scan *manifest.RustScan, api string) (manifest.RustToken, bool) {
	hits := scan.Mentions(api)
	if len(hits) == 0 {
		return manifest.RustToken{}, false
	}
	useLines := map[int]bool{}
	for _, u := range scan.Uses {
		useLines[u.Line] = true
	}
	for _, h := range hits {
		if !useLines[h.Line] {
			return h, true
		}
	}
	return hits[0], true
}

// checkDEP009: build scripts walking directories, reading home or secrets,
// or writing files without OUT_DIR.
func checkDEP009(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad []Evidence
	var unchecked []string
	for _, b := range d.builds {
		if b.procMacro {
			continue
		}
		if b.err != nil {
			unchecked = append(unchecked, b.rel+" could not be fully scanned: "+b.err.Error())
		}
		if b.scan == nil {
			continue
		}
		for _, api := range rustTraversal {
			if hit, ok := firstUse(b.scan, api); ok {
				bad = append(bad, at(b.rel, hit.Line, "build script uses %s", api))
			}
		}
		outDir := false
		for _, t := range b.scan.Strings {
			switch {
			case t.Text == "OUT_DIR":
				outDir = true
			case t.Text == "HOME" || t.Text == "USERPROFILE":
				bad = append(bad, at(b.rel, t.Line, "build script reads %s", t.Text))
			case secretPaths().MatchString(t.Text):
				bad = append(bad, at(b.rel, t.Line, "build script names a credential path %q", truncate(t.Text, 60)))
			}
		}
		if !outDir {
			for _, api := range rustWrites {
				if hit, ok := firstUse(b.scan, api); ok {
					bad = append(bad, at(b.rel, hit.Line, "build script writes with %s and never uses OUT_DIR", api))
					break
				}
			}
		}
	}
	return depOutcome(bad, nil, unchecked, "no build script walks directories, reads home or credentials, or writes outside OUT_DIR")
}

// checkDEP010: rustc wrappers, linkers, runners and [env] from Cargo config.
func checkDEP010(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad, info []Evidence
	judge := func(file string, line int, inProject bool, what, cmd string) {
		// A project shipping any of these runs its choice on every build; a
		// user-level setting naming a tool on PATH (sccache) is the user's own.
		if inProject || strings.ContainsAny(cmd, "/\\") {
			bad = append(bad, at(file, line, "%s = %q", what, cmd))
		} else {
			info = append(info, at(file, line, "user-level %s = %q", what, cmd))
		}
	}
	for _, c := range d.cargoCfgs {
		for _, k := range []string{"rustc-wrapper", "rustc-workspace-wrapper", "rustc", "rustdoc"} {
			if v := c.cfg.Build[k]; v != "" {
				judge(c.shown, c.cfg.Lines["build."+k], c.inProject, "[build] "+k, v)
			}
		}
		for _, t := range c.cfg.Targets {
			if t.Linker != "" {
				judge(c.shown, t.Line, c.inProject, "[target."+t.Name+"] linker", t.Linker)
			}
			if t.Runner != "" {
				judge(c.shown, t.Line, c.inProject, "[target."+t.Name+"] runner", t.Runner)
			}
			for _, f := range t.Rustflags {
				if strings.HasPrefix(f, "linker=") || strings.Contains(f, "-Clinker=") {
					judge(c.shown, t.Line, c.inProject, "[target."+t.Name+"] rustflags linker", f)
				}
			}
		}
		for _, k := range sortedKeys(c.cfg.Env) {
			if c.inProject {
				bad = append(bad, at(c.shown, c.cfg.Lines["env."+k], "[env] sets %s for every build", k))
			} else {
				info = append(info, at(c.shown, c.cfg.Lines["env."+k], "user-level [env] sets %s", k))
			}
		}
	}
	for _, name := range []string{"RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER", "RUSTC"} {
		if v, ok := s.env.Getenv(name); ok && v != "" {
			judge("", 0, false, name, v)
		}
	}
	return depOutcome(bad, info, cargoConfigProblems(d), "no rustc wrapper, linker, runner or [env] from the project")
}

// shadowedBins are commands a package must not install a bin over.
var shadowedBins = map[string]bool{"node": true, "npm": true, "npx": true, "pnpm": true, "pnpx": true, "yarn": true,
	"corepack": true, "git": true, "sh": true, "bash": true, "bun": true, "bunx": true, "deno": true, "env": true, "sudo": true}

// checkDEP011: npm configuration overrides and bin shadowing.
func checkDEP011(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	var bad, info []Evidence
	for _, n := range d.npmrcs {
		for _, e := range n.v.Entries {
			switch {
			case e.Key == "ignore-scripts" && strings.EqualFold(e.Value, "false"):
				bad = append(bad, at(n.rel, e.Line, "ignore-scripts=false forces install scripts on"))
			case e.Key == "script-shell", e.Key == "node-options", e.Key == "onload-script", e.Key == "git",
				e.Key == "userconfig", e.Key == "globalconfig", e.Key == "prefix", e.Key == "init-module", e.Key == "shell",
				e.Key == "pnpmfile", e.Key == "global-pnpmfile":
				bad = append(bad, at(n.rel, e.Line, "%s is overridden (%s)", e.Key, truncate(e.Value, 60)))
			case e.Key == "registry" && !manifest.IsDefaultRegistry(strings.TrimSuffix(e.Value, "/")+"/"):
				bad = append(bad, at(n.rel, e.Line, "registry is %s, not the public registry", hostOrValue(e.Value)))
			case e.Key == "strict-ssl" && strings.EqualFold(e.Value, "false"):
				bad = append(bad, at(n.rel, e.Line, "strict-ssl=false accepts any certificate"))
			}
		}
	}
	for _, y := range d.yarnrcs {
		if y.v.YarnPath != "" {
			bad = append(bad, at(y.rel, y.v.Lines["yarnPath"], "yarnPath runs %s instead of yarn", y.v.YarnPath))
		}
		for _, p := range y.v.Plugins {
			bad = append(bad, at(y.rel, y.v.Lines["plugins"], "plugin %s runs on every yarn command", truncate(p, 60)))
		}
		if y.v.NpmRegistryServer != "" && !manifest.IsDefaultRegistry(strings.TrimSuffix(y.v.NpmRegistryServer, "/")+"/") {
			bad = append(bad, at(y.rel, y.v.Lines["npmRegistryServer"], "npmRegistryServer is %s", hostOrValue(y.v.NpmRegistryServer)))
		}
		if len(y.v.UnsafeHTTPWhitelist) > 0 {
			bad = append(bad, at(y.rel, y.v.Lines["unsafeHttpWhitelist"], "unsafeHttpWhitelist allows plain http to %s", strings.Join(y.v.UnsafeHTTPWhitelist, ", ")))
		}
	}
	for _, y := range d.yarnrcs1 {
		bad = append(bad, yarnrcClassicOverrides(y.rel, y.v)...)
	}
	for _, p := range d.pkgs {
		for _, name := range sortedKeys(p.pj.Bin) {
			if shadowedBins[name] && !(p.installed && p.pj.Name == name) {
				bad = append(bad, at(p.rel, p.pj.KeyLines["bin"], "%s installs a bin named %q, shadowing the system command", pkgLabel(p), name))
			}
		}
		if p.installed {
			continue
		}
		if p.pj.Pnpm != nil && p.pj.Pnpm.HasNeverBuilt && len(p.pj.Pnpm.NeverBuiltDependencies) == 0 {
			bad = append(bad, at(p.rel, p.pj.KeyLines["pnpm"], "pnpm.neverBuiltDependencies is empty: every dependency may build"))
		}
		if p.pj.HasTrustedDependencies {
			info = append(info, at(p.rel, p.pj.KeyLines["trustedDependencies"], "bun trustedDependencies lets %s run scripts", english.Count(len(p.pj.TrustedDependencies), "package")))
		}
	}
	return depOutcome(bad, info, nil, "no npm configuration override and no bin shadowing a system command")
}

// yarnrcClassicOverrides lists what a yarn 1 .yarnrc changes that runs code or
// moves where packages come from. A "--flag value" line (or "--command.flag")
// is passed to every yarn command as that flag; a plain "key value" is a
// setting: both are read the same way here.
func yarnrcClassicOverrides(rel string, y *manifest.YarnrcClassic) []Evidence {
	var bad []Evidence
	for _, e := range y.Entries {
		key := e.Key
		if flag, ok := strings.CutPrefix(key, "--"); ok {
			if _, after, dotted := strings.Cut(flag, "."); dotted && !strings.ContainsAny(flag, "/:") {
				flag = after // --install.ignore-scripts
			}
			key = flag
		}
		switch {
		case key == "yarn-path":
			bad = append(bad, at(rel, e.Line, "yarn-path runs %s instead of yarn", truncate(e.Value, 60)))
		case key == "ignore-scripts" && !strings.EqualFold(e.Value, "true"):
			bad = append(bad, at(rel, e.Line, "%s %s forces install scripts on", e.Key, e.Value))
		case key == "script-shell", key == "use-yarnrc", key == "global-folder", key == "prefix":
			bad = append(bad, at(rel, e.Line, "%s is overridden (%s)", e.Key, truncate(e.Value, 60)))
		case key == "registry" && !manifest.IsDefaultRegistry(strings.TrimSuffix(e.Value, "/")+"/"):
			bad = append(bad, at(rel, e.Line, "%s is %s, not the public registry", e.Key, hostOrValue(e.Value)))
		case key == "strict-ssl" && strings.EqualFold(e.Value, "false"):
			bad = append(bad, at(rel, e.Line, "%s false accepts any certificate", e.Key))
		}
	}
	return bad
}

func pkgLabel(p pkgFile) string {
	if p.installed {
		return "dependency " + p.pj.Name
	}
	return "the project"
}

func hostOrValue(v string) string {
	if h := hostOf(v); h != "" && h != "?" {
		return h
	}
	return truncate(v, 60)
}

// Large or minified hook code (DEP012).
const (
	longLineLimit   = 5000
	largeHookFile   = 1 << 20
	hexIdentMinimum = 5
)

var base64Shell = lazyRE(`base64\s+(-d|--decode)[^|\n]*\|\s*(sh|bash|node)\b`)

// checkDEP012: obfuscated or encoded code run by hooks.
func checkDEP012(s *scan) outcome {
	if d := s.deps(); d.err != nil {
		return skipped("%v", d.err)
	}
	units, unchecked := s.installCode(false)
	var bad []Evidence
	for _, u := range units {
		if u.js == nil {
			if _, line, ok := u.at(base64Shell()); ok {
				bad = append(bad, at(u.file, line, "%s decodes base64 into a shell", u.what))
			}
			continue
		}
		js := u.js
		if js.HexIdents >= hexIdentMinimum {
			line := 0
			if len(js.HexIdentSamples) > 0 {
				line = js.HexIdentSamples[0].Line
			}
			bad = append(bad, at(u.file, line, "%s: %d _0x identifiers (obfuscator output)", u.what, js.HexIdents))
		}
		for _, h := range js.EvalDecode {
			bad = append(bad, at(u.file, h.Line, "%s: eval/Function over decoded data: %s", u.what, oneLine(truncate(h.Text, 80))))
			break
		}
		switch {
		case len(u.text) >= largeHookFile && js.LongestLine >= longLineLimit:
			bad = append(bad, at(u.file, js.LongestLineNo, "%s: a large minified bundle (%d bytes, longest line %d bytes)", u.what, len(u.text), js.LongestLine))
		case js.LongestLine >= longLineLimit:
			bad = append(bad, at(u.file, js.LongestLineNo, "%s: a %d-byte line (minified or packed code)", u.what, js.LongestLine))
		}
	}
	return depOutcome(bad, nil, unchecked, "hook code is readable: no _0x identifiers, eval over decoded data or minified bundles")
}

var (
	exfilDomains = lazyRE(`(?i)\b(webhook\.site|requestbin\.(com|net)|pipedream\.net|[a-z0-9-]+\.workers\.dev|ngrok(-free)?\.(io|app|dev)|pastebin\.com|paste\.ee|hastebin\.com|transfer\.sh|api\.telegram\.org|discord(app)?\.com/api/webhooks|interact\.sh|oast\.(fun|pro|live|site|online|me)|oastify\.com|burpcollaborator\.net|canarytokens\.com|dnslog\.cn|ceye\.io|beeceptor\.com|requestcatcher\.com|hookbin\.com|trycloudflare\.com|serveo\.net|localtunnel\.me|loca\.lt)\b`)
	rawIPURL     = lazyRE(`(?i)\b(https?|wss?|ftp)://(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})`)
	envDump      = lazyRE(`JSON\.stringify\(\s*process\.env\s*\)|\bprintenv\b[^\n]*\|\s*(curl|wget|nc|base64)|\benv\s*\|\s*(curl|wget|nc|base64)`)
)

// checkDEP013: exfiltration indicators in hook code and build scripts.
func checkDEP013(s *scan) outcome {
	if d := s.deps(); d.err != nil {
		return skipped("%v", d.err)
	}
	units, unchecked := s.installCode(false)
	var bad []Evidence
	for _, u := range units {
		var hits []Evidence
		if hit, line, ok := u.at(exfilDomains()); ok {
			hits = append(hits, at(u.file, line, "%s names the exfiltration endpoint %s", u.what, strings.ToLower(hit)))
		}
		if m := rawIPURL().FindStringSubmatchIndex(u.text); m != nil {
			ip, err := netip.ParseAddr(u.text[m[4]:m[5]])
			if err == nil && !ip.IsLoopback() && !ip.IsUnspecified() {
				line := u.line
				if line == 0 {
					line = strings.Count(u.text[:m[0]], "\n") + 1
				}
				hits = append(hits, at(u.file, line, "%s contacts the raw IP address %s", u.what, ip))
			}
		}
		if _, line, ok := u.at(envDump()); ok {
			hits = append(hits, at(u.file, line, "%s serialises the whole environment", u.what))
		} else if u.js != nil && len(u.js.EnvDump) > 0 {
			hits = append(hits, at(u.file, u.js.EnvDump[0].Line, "%s collects process.env: %s", u.what, oneLine(truncate(u.js.EnvDump[0].Text, 60))))
		}
		if u.file != "" && !strings.HasSuffix(u.what, "build script string") {
			if hit, line, ok := u.at(secretPaths()); ok {
				hits = append(hits, at(u.file, line, "%s reads a credential path (%s)", u.what, hit))
			}
		}
		bad = append(bad, hits...)
	}
	return depOutcome(bad, nil, unchecked, "no exfiltration endpoint, raw IP, environment dump or credential path in hook code")
}

var (
	npmPublish   = lazyRE(`\bnpm\s+(publish|whoami|token)\b|/-/npm/v1/tokens|/-/whoami`)
	childProcess = lazyRE(`\bchild_process\b|\bexecSync\b|\bspawnSync\b|\bBun\.spawn\b`)
	pkgWrite     = lazyRE(`(?s)(writeFileSync|writeFile)\s*\([^)]{0,200}package\.json|package\.json.{0,200}(writeFileSync|writeFile)\s*\(`)
	workflows    = lazyRE(`\.github/workflows`)
	secretScan   = lazyRE(`(?i)\btrufflehog\b|\bgitleaks\b`)
	aiYolo       = lazyRE(`--dangerously-skip-permissions|--dangerously-bypass-approvals-and-sandbox|--trust-all-tools|--yolo\b`)
)

// checkDEP014: self-propagation and CI tampering from hooks.
func checkDEP014(s *scan) outcome {
	if d := s.deps(); d.err != nil {
		return skipped("%v", d.err)
	}
	units, unchecked := s.installCode(false)
	var bad []Evidence
	for _, u := range units {
		if hit, line, ok := u.at(npmPublish()); ok {
			_, _, proc := u.at(childProcess())
			_, _, write := u.at(pkgWrite())
			isCommand := u.js == nil && u.line != 0
			if proc || write || isCommand {
				extra := ""
				if write {
					extra = ", rewrites package.json"
				}
				if proc {
					extra += ", spawns processes"
				}
				bad = append(bad, at(u.file, line, "%s runs %q%s (worm pattern)", u.what, oneLine(hit), extra))
			}
		}
		if _, line, ok := u.at(workflows()); ok {
			bad = append(bad, at(u.file, line, "%s touches .github/workflows", u.what))
		}
		if hit, line, ok := u.at(secretScan()); ok {
			bad = append(bad, at(u.file, line, "%s runs the secret scanner %s", u.what, strings.ToLower(hit)))
		}
		if hit, line, ok := u.at(aiYolo()); ok {
			bad = append(bad, at(u.file, line, "%s launches an AI CLI with %s", u.what, hit))
		}
	}
	return depOutcome(bad, nil, unchecked, "no npm publish, workflow write, secret scanner or permission-skipping AI CLI in hook code")
}

// checkDEP015: scoped packages resolved from a registry other than their scope's.
func checkDEP015(s *scan) outcome {
	d := s.deps()
	if d.err != nil {
		return skipped("%v", d.err)
	}
	scopes := map[string]string{} // "@acme" -> host
	where := map[string]Evidence{}
	for _, n := range d.npmrcs {
		for _, e := range n.v.Entries {
			if e.Scope != "" && e.Name == "registry" {
				scopes[e.Scope] = hostOf(e.Value)
				where[e.Scope] = at(n.rel, e.Line, "")
			}
		}
	}
	for _, y := range d.yarnrcs1 {
		for _, e := range y.v.Entries {
			if scope, ok := strings.CutSuffix(e.Key, ":registry"); ok && strings.HasPrefix(scope, "@") {
				scopes[scope] = hostOf(e.Value)
				where[scope] = at(y.rel, e.Line, "")
			}
		}
	}
	for _, y := range d.yarnrcs {
		for name, r := range y.v.NpmScopes {
			if r.NpmRegistryServer != "" {
				scopes["@"+strings.TrimPrefix(name, "@")] = hostOf(r.NpmRegistryServer)
				where["@"+strings.TrimPrefix(name, "@")] = at(y.rel, r.Line, "")
			}
		}
	}
	if len(scopes) == 0 {
		return passed(note("no scope registries configured"))
	}
	var bad []Evidence
	checkEntry := func(rel string, line int, name, resolved string) {
		scope, _, ok := strings.Cut(name, "/")
		if !ok || !strings.HasPrefix(scope, "@") {
			return
		}
		want, ok := scopes[scope]
		if !ok || resolved == "" || !strings.Contains(resolved, "://") {
			return
		}
		if got := hostOf(resolved); got != want {
			w := where[scope]
			bad = append(bad, at(rel, line, "%s resolved from %s, but %s:%d sends %s to %s", name, got, w.File, w.Line, scope, want))
		}
	}
	for _, l := range d.npmLocks {
		for _, e := range l.v.Packages {
			if e.Path != "" {
				checkEntry(l.rel, e.Line, e.Name, e.Resolved)
			}
		}
	}
	for _, l := range d.yarnLocks {
		for _, e := range l.v.Entries {
			checkEntry(l.rel, e.Line, e.Name, e.Resolved)
		}
	}
	for _, l := range d.pnpmLocks {
		for _, e := range l.v.Packages {
			checkEntry(l.rel, e.Line, e.Name, e.Tarball)
		}
	}
	return depOutcome(bad, nil, nil, english.Count(len(scopes), "scope registry")+", and the lockfiles agree with them")
}

// checkDEP016: names close to popular packages, and installed packages that
// differ from the lockfile.
func checkDEP016(s *scan) outcome {
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
			if near, ok := typosquatOf(dep.Name, popularNPM()); ok {
				bad = append(bad, at(p.rel, dep.Line, "%s is %s from the popular package %s", dep.Name, english.Count(editDistance(dep.Name, near), "edit"), near))
			}
		}
	}
	for _, c := range d.crates {
		for _, dep := range c.toml.Dependencies {
			if near, ok := typosquatOf(dep.CrateName(), popularCrates()); ok {
				bad = append(bad, at(c.rel, dep.Line, "crate %s is %s from the popular crate %s", dep.CrateName(), english.Count(editDistance(dep.CrateName(), near), "edit"), near))
			}
		}
	}
	// Installed packages against the lockfile next to their node_modules.
	locks := map[string]map[string]manifest.LockPackage{} // lockfile dir -> install path -> entry
	for _, l := range d.npmLocks {
		m := map[string]manifest.LockPackage{}
		for _, e := range l.v.Packages {
			m[e.Path] = e
		}
		locks[path.Dir(l.rel)] = m
	}
	for _, p := range d.pkgs {
		if !p.installed {
			continue
		}
		instRel := strings.TrimSuffix(p.rel, "/package.json")
		dir, sub := ".", instRel
		if i := strings.Index(instRel, "/node_modules/"); i >= 0 && !strings.HasPrefix(instRel, "node_modules/") {
			dir, sub = instRel[:i], instRel[i+1:]
		}
		entries, ok := locks[dir]
		if !ok {
			continue
		}
		want, ok := entries[sub]
		if !ok {
			if !strings.Contains(sub, "/.pnpm/") {
				bad = append(bad, at(p.rel, 0, "%s is installed but not in the lockfile", sub))
			}
			continue
		}
		if want.Name != "" && p.pj.Name != "" && p.pj.Name != want.Name {
			bad = append(bad, at(p.rel, p.pj.KeyLines["name"], "installed package is named %s, the lockfile says %s", p.pj.Name, want.Name))
		}
		if want.Version != "" && p.pj.Version != want.Version {
			bad = append(bad, at(p.rel, p.pj.KeyLines["version"], "%s is installed at %s, the lockfile says %s", want.Name, p.pj.Version, want.Version))
		}
	}
	return depOutcome(bad, nil, nil, "no dependency name near a popular one; installed packages match the lockfile")
}

// typosquatOf returns the popular name that name is suspiciously close to.
func typosquatOf(name string, popular popularSet) (string, bool) {
	if popular.has[name] || strings.HasPrefix(name, "@") || len(name) < 4 {
		return "", false // scoped names are owned by their scope
	}
	limit := 1
	if len(name) >= 8 {
		limit = 2
	}
	mask := charMask(name)
	best, bestD := "", limit+1
	for _, p := range popular.names {
		// Cheap filters first: k edits change the length by at most k and the
		// set of characters used by at most 2k.
		if abs(len(p.name)-len(name)) > limit || bits.OnesCount64(p.mask^mask) > 2*limit {
			continue
		}
		if dist := editDistance(name, p.name); dist <= limit && (dist < bestD || dist == bestD && p.name < best) {
			best, bestD = p.name, dist
		}
	}
	return best, best != ""
}

// charMask maps the characters of a package name to bits (a-z, 0-9, -, _, ., other).
func charMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			m |= 1 << (c - 'a')
		case c >= '0' && c <= '9':
			m |= 1 << (26 + c - '0')
		case c == '-':
			m |= 1 << 36
		case c == '_':
			m |= 1 << 37
		case c == '.':
			m |= 1 << 38
		default:
			m |= 1 << 63
		}
	}
	return m
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// editDistance is the optimal string alignment distance (Damerau-Levenshtein
// with adjacent transpositions), the usual measure for typosquats.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
