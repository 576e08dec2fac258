package manifest

import (
	"strconv"
	"strings"
)

// Npmrc is a parsed .npmrc: npm's ini-like key=value configuration.
type Npmrc struct {
	Entries []NpmrcEntry
}

// NpmrcEntry is one key=value line of an .npmrc.
type NpmrcEntry struct {
	// Key is the key as written, e.g. "registry", "@acme:registry",
	// "//npm.acme.dev/:_authToken".
	Key   string
	Value string
	// Scope is the "@scope" of a "@scope:registry" key, and Host the
	// "//host/path/" prefix of a per-registry key such as ":_authToken".
	Scope string
	Host  string
	// Name is the key without its scope or host prefix ("registry", "_authToken").
	Name string
	Line int
}

// Secret keys of .npmrc: their values are credentials.
var npmrcSecretNames = map[string]bool{
	"_authToken": true, "_auth": true, "_password": true,
}

// IsSecret reports whether the entry holds a credential (_authToken, _auth, _password).
func (e NpmrcEntry) IsSecret() bool { return npmrcSecretNames[e.Name] }

// Unmasked reports a credential entry whose value is written out rather than
// taken from the environment with ${VAR}.
func (e NpmrcEntry) Unmasked() bool {
	return e.IsSecret() && strings.TrimSpace(e.Value) != "" && !IsEnvReference(e.Value)
}

var envRefRE = lazyRE(`^\$\{[A-Za-z_][A-Za-z0-9_]*\??\}$`)

// IsEnvReference reports a value that is exactly one ${VAR} reference, which
// npm and yarn expand from the environment.
func IsEnvReference(v string) bool { return envRefRE().MatchString(strings.TrimSpace(v)) }

// Get returns the last value set for key, as npm reads it.
func (n *Npmrc) Get(key string) (string, bool) {
	for i := len(n.Entries) - 1; i >= 0; i-- {
		if n.Entries[i].Key == key {
			return n.Entries[i].Value, true
		}
	}
	return "", false
}

// ScopeRegistries maps each "@scope" to its registry URL.
func (n *Npmrc) ScopeRegistries() map[string]string {
	out := map[string]string{}
	for _, e := range n.Entries {
		if e.Scope != "" && e.Name == "registry" {
			out[e.Scope] = e.Value
		}
	}
	return out
}

// ParseNpmrc parses an .npmrc; path is used only in errors. npm's ini reader
// accepts almost anything, so the only errors are size and NUL bytes.
func ParseNpmrc(path string, data []byte) (*Npmrc, error) {
	if len(data) > MaxConfigSize {
		return nil, tooLarge(path, len(data), MaxConfigSize)
	}
	n := &Npmrc{}
	section := ""
	i := -1
	for raw := range strings.Lines(string(data)) {
		i++
		line := i + 1
		l := strings.TrimSpace(strings.TrimRight(raw, "\r"))
		if strings.IndexByte(l, 0) >= 0 {
			return nil, parseErr(path, line, "NUL byte in .npmrc")
		}
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if l[0] == '[' && l[len(l)-1] == ']' {
			section = strings.TrimSpace(l[1 : len(l)-1])
			continue
		}
		key, val, hasEq := strings.Cut(l, "=")
		key = strings.TrimSpace(key)
		val = strings.TrimSpace(val)
		if !hasEq {
			val = "true"
		}
		key = strings.TrimSuffix(key, "[]")
		if len(val) >= 2 && (val[0] == '"' && val[len(val)-1] == '"' || val[0] == '\'' && val[len(val)-1] == '\'') {
			if val[0] == '"' {
				if s, err := strconv.Unquote(val); err == nil {
					val = s
				} else {
					val = val[1 : len(val)-1]
				}
			} else {
				val = val[1 : len(val)-1]
			}
		}
		e := NpmrcEntry{Key: key, Value: val, Name: key, Line: line}
		switch {
		case strings.HasPrefix(key, "//"):
			if j := strings.LastIndex(key, ":"); j > 1 {
				e.Host, e.Name = key[:j], key[j+1:]
			}
		case strings.HasPrefix(key, "@"):
			if j := strings.IndexByte(key, ':'); j > 1 {
				e.Scope, e.Name = key[:j], key[j+1:]
			}
		}
		if section != "" {
			e.Key = section + "." + key
		}
		n.Entries = append(n.Entries, e)
	}
	return n, nil
}

// Yarnrc is the audit-relevant content of a .yarnrc.yml (yarn 2 and later).
type Yarnrc struct {
	NpmRegistryServer string
	NpmAuthToken      string
	NpmAuthIdent      string
	// NpmScopes maps a scope name (without '@') to its settings.
	NpmScopes map[string]YarnRegistry
	// NpmRegistries maps a registry URL to its settings.
	NpmRegistries map[string]YarnRegistry
	// EnableScripts is enableScripts; nil when absent (yarn's default is true).
	EnableScripts *bool
	// YarnPath is the yarn release that yarn runs instead of itself.
	YarnPath string
	// Plugins are the plugin paths or specs, each run by yarn on every command.
	Plugins             []string
	UnsafeHTTPWhitelist []string
	// Lines maps each top-level key to its line.
	Lines map[string]int
}

// YarnRegistry holds the registry settings of one scope or registry URL.
type YarnRegistry struct {
	NpmRegistryServer string
	NpmAuthToken      string
	NpmAuthIdent      string
	Line              int
}

// ParseYarnrc parses a .yarnrc.yml; path is used only in errors.
func ParseYarnrc(path string, data []byte) (*Yarnrc, error) {
	if len(data) > MaxConfigSize {
		return nil, tooLarge(path, len(data), MaxConfigSize)
	}
	root, err := parseYAML(path, data, 1)
	if err != nil {
		return nil, err
	}
	y := &Yarnrc{NpmScopes: map[string]YarnRegistry{}, NpmRegistries: map[string]YarnRegistry{}, Lines: map[string]int{}}
	for _, k := range root.kids {
		y.Lines[k.key] = k.line
	}
	y.NpmRegistryServer = root.str("npmRegistryServer")
	y.NpmAuthToken = root.str("npmAuthToken")
	y.NpmAuthIdent = root.str("npmAuthIdent")
	y.YarnPath = root.str("yarnPath")
	if n := root.get("enableScripts"); n != nil && n.scalar {
		b := n.value == "true"
		y.EnableScripts = &b
	}
	for _, p := range root.get("plugins").kidsOrNil() {
		switch {
		case p.scalar:
			y.Plugins = append(y.Plugins, p.value)
		case p.get("path") != nil:
			y.Plugins = append(y.Plugins, p.str("path"))
		case p.get("spec") != nil:
			y.Plugins = append(y.Plugins, p.str("spec"))
		}
	}
	y.UnsafeHTTPWhitelist = root.get("unsafeHttpWhitelist").list()
	for _, s := range root.get("npmScopes").kidsOrNil() {
		y.NpmScopes[s.key] = yarnRegistry(s)
	}
	for _, s := range root.get("npmRegistries").kidsOrNil() {
		y.NpmRegistries[s.key] = yarnRegistry(s)
	}
	return y, nil
}

func yarnRegistry(n *ynode) YarnRegistry {
	return YarnRegistry{
		NpmRegistryServer: n.str("npmRegistryServer"),
		NpmAuthToken:      n.str("npmAuthToken"),
		NpmAuthIdent:      n.str("npmAuthIdent"),
		Line:              n.line,
	}
}

// YarnrcClassic is a yarn 1 .yarnrc: one "key value" setting a line.
type YarnrcClassic struct {
	Entries []YarnrcEntry
}

// YarnrcEntry is one setting of a yarn 1 .yarnrc.
type YarnrcEntry struct {
	Key   string // e.g. "registry", "yarn-path", "--ignore-scripts", "\"@acme:registry\""
	Value string
	Line  int
}

// Get returns the last value set for key, as yarn reads it.
func (y *YarnrcClassic) Get(key string) (string, bool) {
	for i := len(y.Entries) - 1; i >= 0; i-- {
		if y.Entries[i].Key == key {
			return y.Entries[i].Value, true
		}
	}
	return "", false
}

// ParseYarnrcClassic parses a yarn 1 .yarnrc; path is used only in errors.
func ParseYarnrcClassic(path string, data []byte) (*YarnrcClassic, error) {
	if len(data) > MaxConfigSize {
		return nil, tooLarge(path, len(data), MaxConfigSize)
	}
	y := &YarnrcClassic{}
	i := -1
	for raw := range strings.Lines(string(data)) {
		i++
		l := strings.TrimSpace(strings.TrimRight(raw, "\r"))
		if l == "" || l[0] == '#' {
			continue
		}
		var key, rest string
		if l[0] == '"' {
			k, n, err := unquote(l)
			if err != nil {
				return nil, &ParseError{Path: path, Line: i + 1, Err: err}
			}
			key, rest = k, l[n:]
		} else {
			key, rest, _ = strings.Cut(l, " ")
		}
		rest = strings.TrimSpace(rest)
		val := rest
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			v, _, err := unquote(rest)
			if err != nil {
				return nil, &ParseError{Path: path, Line: i + 1, Err: err}
			}
			val = v
		}
		y.Entries = append(y.Entries, YarnrcEntry{Key: key, Value: val, Line: i + 1})
	}
	return y, nil
}
