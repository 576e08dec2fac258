package manifest

import (
	"net/url"
	"strings"
)

// SpecKind classifies a dependency spec by where the package comes from.
type SpecKind string

// Spec kinds, as npm, yarn, pnpm and bun read a dependency spec.
const (
	SpecRegistry  SpecKind = "registry"  // semver range, exact version or dist-tag
	SpecGit       SpecKind = "git"       // git URL or hosted shorthand (github:, user/repo, ...)
	SpecURL       SpecKind = "url"       // remote tarball over http(s)
	SpecPath      SpecKind = "path"      // file:, link:, portal: or a relative/absolute path
	SpecWorkspace SpecKind = "workspace" // workspace: protocol
	SpecAlias     SpecKind = "alias"     // npm:name@spec
	SpecCatalog   SpecKind = "catalog"   // pnpm/bun catalog: protocol
	SpecPatch     SpecKind = "patch"     // yarn patch: protocol wrapping another spec
	SpecExec      SpecKind = "exec"      // yarn exec: protocol, which runs a script to build the package
	SpecInvalid   SpecKind = "invalid"   // not a spec any package manager accepts
)

// DepSpec is a classified dependency spec.
type DepSpec struct {
	Raw  string
	Kind SpecKind
	// URL is the git or tarball URL as written (shorthands expanded to host/path).
	URL string
	// Host is the host of a git or tarball URL, or of a hosted shorthand.
	Host string
	// Ref is the git committish after '#', without a "semver:" prefix stripped.
	Ref string
	// Commit is Ref when it is a full 40-hex commit id, the only pinned git ref.
	Commit string
	// Insecure is set for plain http:// and git:// transports.
	Insecure bool
	// Path is the target of file:, link:, portal: or a bare path.
	Path string
	// AliasName and Alias describe an npm: alias target.
	AliasName string
	Alias     *DepSpec
}

// Pinned reports whether the spec names one immutable artifact: an exact
// registry version, a git commit, or a workspace/path package (which the
// lockfile does not pin but which lives in the project).
func (d DepSpec) Pinned() bool {
	switch d.Kind {
	case SpecGit:
		return d.Commit != ""
	case SpecAlias:
		return d.Alias != nil && d.Alias.Pinned()
	case SpecRegistry:
		return isExactVersion(d.Raw)
	}
	return false
}

var hostedShorthands = map[string]string{
	"github":    "github.com",
	"gitlab":    "gitlab.com",
	"bitbucket": "bitbucket.org",
	"gist":      "gist.github.com",
	"sourcehut": "git.sr.ht",
}

// ClassifySpec classifies a dependency spec the way npm-package-arg and the
// other package managers read it.
func ClassifySpec(spec string) DepSpec {
	return classifySpec(spec, 0)
}

func classifySpec(spec string, depth int) DepSpec {
	raw := spec
	d := DepSpec{Raw: raw}
	s := strings.TrimSpace(spec)
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "npm:"):
		d.Kind = SpecAlias
		rest := s[4:]
		at := strings.LastIndexByte(rest, '@')
		if at <= 0 {
			d.AliasName = rest
			inner := classifySpec("", depth+1)
			inner.Kind = SpecRegistry
			d.Alias = &inner
			return d
		}
		d.AliasName = rest[:at]
		if depth < 4 {
			inner := classifySpec(rest[at+1:], depth+1)
			d.Alias = &inner
		}
		return d
	case strings.HasPrefix(lower, "workspace:"):
		d.Kind = SpecWorkspace
		d.Path = s[len("workspace:"):]
		return d
	case strings.HasPrefix(lower, "catalog:"):
		d.Kind = SpecCatalog
		return d
	case strings.HasPrefix(lower, "patch:"):
		d.Kind = SpecPatch
		return d
	case strings.HasPrefix(lower, "exec:"):
		d.Kind = SpecExec
		d.Path = s[len("exec:"):]
		return d
	case strings.HasPrefix(lower, "file:"), strings.HasPrefix(lower, "link:"), strings.HasPrefix(lower, "portal:"):
		d.Kind = SpecPath
		d.Path = s[strings.IndexByte(s, ':')+1:]
		return d
	case strings.HasPrefix(s, "./"), strings.HasPrefix(s, "../"), strings.HasPrefix(s, "/"),
		strings.HasPrefix(s, "~/"), s == ".", s == "..", strings.HasPrefix(s, ".\\"), strings.HasPrefix(s, "..\\"),
		len(s) > 2 && s[1] == ':' && (s[2] == '\\' || s[2] == '/') && isLetter(s[0]):
		d.Kind = SpecPath
		d.Path = s
		return d
	}
	if i := strings.IndexByte(lower, ':'); i > 0 {
		scheme := lower[:i]
		if host, ok := hostedShorthands[scheme]; ok && !strings.HasPrefix(lower[i:], "://") {
			d.Kind = SpecGit
			d.Host = host
			path, ref := splitRef(s[i+1:])
			d.URL = host + "/" + path
			d.setRef(ref)
			return d
		}
		switch {
		case strings.HasPrefix(scheme, "git+") || scheme == "git":
			d.Kind = SpecGit
			d.Insecure = scheme == "git" || scheme == "git+http"
			u, ref := splitRef(s)
			d.URL = u
			d.Host = urlHost(u)
			d.setRef(ref)
			return d
		case scheme == "http" || scheme == "https":
			u, ref := splitRef(s)
			d.Host = urlHost(u)
			d.URL = u
			d.Insecure = scheme == "http"
			if isHostedGitURL(u) {
				d.Kind = SpecGit
				d.setRef(ref)
				return d
			}
			d.Kind = SpecURL
			d.URL = s
			return d
		}
	}
	// scp-like git: git@github.com:user/repo.git
	if at := strings.IndexByte(s, '@'); at > 0 && !strings.HasPrefix(s, "@") {
		if c := strings.IndexByte(s[at:], ':'); c > 0 && !strings.ContainsAny(s[:at], "/ ") {
			d.Kind = SpecGit
			u, ref := splitRef(s)
			d.URL = u
			d.Host = s[at+1 : at+c]
			d.setRef(ref)
			return d
		}
	}
	// user/repo shorthand for GitHub.
	if !strings.HasPrefix(s, "@") && strings.Count(strings.SplitN(s, "#", 2)[0], "/") == 1 && !strings.ContainsAny(s, " <>=^~|*") {
		path, ref := splitRef(s)
		if i := strings.IndexByte(path, '/'); i > 0 && i < len(path)-1 {
			d.Kind = SpecGit
			d.Host = "github.com"
			d.URL = "github.com/" + path
			d.setRef(ref)
			return d
		}
	}
	if strings.ContainsAny(s, "\x00\n\r") || strings.Contains(s, "://") {
		d.Kind = SpecInvalid
		return d
	}
	d.Kind = SpecRegistry
	return d
}

func (d *DepSpec) setRef(ref string) {
	d.Ref = ref
	if isHex40(ref) {
		d.Commit = strings.ToLower(ref)
	}
}

func splitRef(s string) (string, string) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// urlHost returns the lower-cased host of a URL, also for the scp-like
// "ssh://git@host:owner/repo" form that net/url rejects.
func urlHost(raw string) string {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "[") {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			return strings.ToLower(rest[1:i])
		}
		return ""
	}
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		rest = rest[:i]
	}
	return strings.ToLower(rest)
}

// isHostedGitURL reports an http(s) URL of a repository on a known git host:
// npm treats https://github.com/user/repo as git, not as a tarball.
func isHostedGitURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(pu.Hostname()) {
	case "github.com", "gitlab.com", "bitbucket.org", "gist.github.com":
	default:
		return strings.HasSuffix(pu.Path, ".git")
	}
	parts := strings.Split(strings.Trim(pu.Path, "/"), "/")
	if len(parts) != 2 {
		return false
	}
	return !strings.HasSuffix(parts[1], ".tgz") && !strings.HasSuffix(parts[1], ".tar.gz")
}

func isHex40(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isExactVersion reports a spec that is one exact semver version ("1.2.3", "=1.2.3", "v1.2.3").
func isExactVersion(s string) bool {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "=")
	s = strings.TrimPrefix(s, "v")
	core, _, _ := strings.Cut(s, "+")
	core, _, _ = strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
		}
	}
	return true
}

// IntegrityAlgorithms returns the hash algorithms named in an SRI integrity
// string ("sha512-... sha1-..."), lower-cased, in order.
func IntegrityAlgorithms(integrity string) []string {
	var algs []string
	for _, f := range strings.Fields(integrity) {
		if i := strings.IndexByte(f, '-'); i > 0 {
			algs = append(algs, strings.ToLower(f[:i]))
		}
	}
	return algs
}

// DefaultRegistryHosts are the hosts of the public npm registry as lockfiles record it.
var DefaultRegistryHosts = []string{"registry.npmjs.org", "registry.yarnpkg.com", "registry.npmjs.com"}

// IsDefaultRegistry reports whether rawURL is on the public npm registry over https.
func IsDefaultRegistry(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	for _, d := range DefaultRegistryHosts {
		if h == d {
			return true
		}
	}
	return false
}
