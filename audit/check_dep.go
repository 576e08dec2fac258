package audit

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shadow-sandbox/shadow/audit/manifest"
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

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return strings.ToLower(u.Hostname())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
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
