package manifest

import (
	"encoding/json"
	"sort"
	"strings"
)

// Dependency sections of package.json, as used in Dependency.Section.
const (
	SectionDependencies         = "dependencies"
	SectionDevDependencies      = "devDependencies"
	SectionOptionalDependencies = "optionalDependencies"
	SectionPeerDependencies     = "peerDependencies"
)

// PackageJSON is the audit-relevant content of one package.json.
type PackageJSON struct {
	Name    string
	Version string
	Private bool

	// Scripts maps a script name to its command; ScriptLines to its line.
	Scripts     map[string]string
	ScriptLines map[string]int

	Dependencies         map[string]string // name -> spec
	DevDependencies      map[string]string
	OptionalDependencies map[string]string
	PeerDependencies     map[string]string
	// Deps lists every dependency of the four sections in file order, with lines.
	Deps []Dependency

	// Bin maps a command name to the file it runs; a string "bin" is keyed by
	// the package name without its scope, as npm links it.
	Bin map[string]string
	// Workspaces holds the workspace globs (array form or {"packages": [...]}).
	Workspaces []string

	// LavamoatAllowScripts is lavamoat.allowScripts: package path -> allowed.
	LavamoatAllowScripts map[string]bool
	// Pnpm is the "pnpm" field; nil when absent.
	Pnpm *PnpmSettings
	// TrustedDependencies is bun's list of packages allowed to run scripts;
	// HasTrustedDependencies tells an empty list from an absent one.
	TrustedDependencies    []string
	HasTrustedDependencies bool
	// Gypfile is the "gypfile" flag; nil when absent.
	Gypfile *bool
	// PublishConfig holds the string values of publishConfig (registry, access, tag).
	PublishConfig map[string]string
	// Overrides holds npm "overrides" flattened to "a>b" -> spec, pnpm.overrides
	// and yarn "resolutions", each keyed as written.
	Overrides map[string]string

	// DependenciesMeta is yarn's and pnpm's per-dependency settings, e.g.
	// {"esbuild": {"built": false}}; only boolean settings are kept.
	DependenciesMeta map[string]map[string]bool

	// KeyLines gives the line of each top-level key.
	KeyLines map[string]int

	binString string
}

// PnpmSettings is the "pnpm" field of package.json.
type PnpmSettings struct {
	OnlyBuiltDependencies  []string
	HasOnlyBuilt           bool // onlyBuiltDependencies present, even if empty
	NeverBuiltDependencies []string
	HasNeverBuilt          bool // neverBuiltDependencies present, even if empty
	OnlyBuiltFile          string
}

// Dependency is one entry of a package.json dependency section.
type Dependency struct {
	Name    string
	Spec    string
	Section string // one of the Section* constants
	Line    int
}

// HasLifecycleScript reports whether the package declares preinstall, install or postinstall.
func (p *PackageJSON) HasLifecycleScript() bool {
	for _, s := range []string{"preinstall", "install", "postinstall"} {
		if _, ok := p.Scripts[s]; ok {
			return true
		}
	}
	return false
}

// AllowsScripts reports whether name is allowed to run install scripts by the
// root's lavamoat.allowScripts, pnpm.onlyBuiltDependencies or trustedDependencies.
func (p *PackageJSON) AllowsScripts(name string) bool {
	if p.LavamoatAllowScripts[name] {
		return true
	}
	if p.Pnpm != nil {
		for _, n := range p.Pnpm.OnlyBuiltDependencies {
			if n == name {
				return true
			}
		}
	}
	for _, n := range p.TrustedDependencies {
		if n == name {
			return true
		}
	}
	return false
}

// ParsePackageJSON parses a package.json; path is used only in errors.
func ParsePackageJSON(path string, data []byte) (*PackageJSON, error) {
	if len(data) > MaxManifestSize {
		return nil, tooLarge(path, len(data), MaxManifestSize)
	}
	r := newJSONReader(path, data)
	p := &PackageJSON{
		Scripts:              map[string]string{},
		ScriptLines:          map[string]int{},
		Dependencies:         map[string]string{},
		DevDependencies:      map[string]string{},
		OptionalDependencies: map[string]string{},
		PeerDependencies:     map[string]string{},
		Bin:                  map[string]string{},
		KeyLines:             map[string]int{},
	}
	isObj, err := r.object(func(key string, line int) error {
		p.KeyLines[key] = line
		return p.field(r, key)
	})
	if err != nil {
		return nil, err
	}
	if !isObj {
		return nil, parseErr(path, 1, "package.json is not a JSON object")
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if p.binString != "" {
		name := p.Name
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		if name != "" {
			p.Bin[name] = p.binString
		}
	}
	return p, nil
}

// field reads the value of the top-level key into p.
func (p *PackageJSON) field(r *jsonReader, key string) error {
	var err error
	switch key {
	case "name":
		p.Name, _, err = r.str()
	case "version":
		p.Version, _, err = r.str()
	case "private":
		var v any
		v, err = r.value()
		p.Private = v == true || v == "true"
	case "scripts":
		p.Scripts, err = r.stringMap(p.ScriptLines)
	case SectionDependencies, SectionDevDependencies, SectionOptionalDependencies, SectionPeerDependencies:
		err = p.depSection(r, key)
	case "bin":
		err = p.bin(r)
	case "workspaces":
		err = p.workspaces(r)
	case "lavamoat":
		err = p.lavamoat(r)
	case "pnpm":
		err = p.pnpm(r)
	case "dependenciesMeta":
		err = p.dependenciesMeta(r)
	case "trustedDependencies":
		p.TrustedDependencies, p.HasTrustedDependencies, err = r.stringList()
	case "gypfile":
		var v any
		v, err = r.value()
		if b, ok := v.(bool); ok {
			p.Gypfile = &b
		}
	case "publishConfig":
		p.PublishConfig, err = r.stringMap(nil)
	case "resolutions":
		var m map[string]string
		m, err = r.stringMap(nil)
		for k, v := range m {
			p.addOverride(k, v)
		}
	case "overrides":
		var t json.Token
		t, err = r.token()
		if err != nil {
			return err
		}
		if t != json.Delim('{') {
			return r.skipRest(t)
		}
		err = p.overrideObjectBody(r, "", 0)
	default:
		err = r.skip()
	}
	return err
}

// depSection reads one of the four dependency sections, named by key.
func (p *PackageJSON) depSection(r *jsonReader, key string) error {
	lines := map[string]int{}
	m, err := r.stringMap(lines)
	switch key {
	case SectionDependencies:
		p.Dependencies = m
	case SectionDevDependencies:
		p.DevDependencies = m
	case SectionOptionalDependencies:
		p.OptionalDependencies = m
	case SectionPeerDependencies:
		p.PeerDependencies = m
	}
	// Drop earlier entries of a repeated section: the last one wins, as in JSON.parse.
	kept := p.Deps[:0]
	for _, d := range p.Deps {
		if d.Section != key {
			kept = append(kept, d)
		}
	}
	p.Deps = kept
	start := len(p.Deps)
	for name, spec := range m {
		p.Deps = append(p.Deps, Dependency{Name: name, Spec: spec, Section: key, Line: lines[name]})
	}
	added := p.Deps[start:]
	sort.Slice(added, func(i, j int) bool { return added[i].Line < added[j].Line })
	return err
}

// bin reads "bin": one command as a string, or an object of commands.
func (p *PackageJSON) bin(r *jsonReader) error {
	p.binString = ""
	t, err := r.token()
	if err != nil {
		return err
	}
	switch v := t.(type) {
	case string:
		p.binString = v
	case json.Delim:
		if v != '{' {
			return r.skipRest(t)
		}
		for r.dec.More() {
			kt, err := r.token()
			if err != nil {
				return err
			}
			name, _ := kt.(string)
			target, ok, err := r.str()
			if err != nil {
				return err
			}
			if ok {
				p.Bin[name] = target
			}
		}
		_, err = r.token()
	}
	return err
}

// workspaces reads "workspaces": an array of globs, or an object whose
// "packages" is one.
func (p *PackageJSON) workspaces(r *jsonReader) error {
	t, err := r.token()
	if err != nil {
		return err
	}
	switch t {
	case json.Delim('['):
		p.Workspaces = nil
		for r.dec.More() {
			s, ok, err := r.str()
			if err != nil {
				return err
			}
			if ok {
				p.Workspaces = append(p.Workspaces, s)
			}
		}
		_, err = r.token()
	case json.Delim('{'):
		for r.dec.More() {
			kt, err := r.token()
			if err != nil {
				return err
			}
			if kt == "packages" {
				p.Workspaces, _, err = r.stringList()
			} else {
				err = r.skip()
			}
			if err != nil {
				return err
			}
		}
		_, err = r.token()
	default:
		err = r.skipRest(t)
	}
	return err
}

// lavamoat reads lavamoat.allowScripts.
func (p *PackageJSON) lavamoat(r *jsonReader) error {
	_, err := r.object(func(k string, _ int) error {
		if k != "allowScripts" {
			return r.skip()
		}
		p.LavamoatAllowScripts = map[string]bool{}
		_, err := r.object(func(name string, _ int) error {
			v, err := r.value()
			p.LavamoatAllowScripts[name] = v == true
			return err
		})
		return err
	})
	return err
}

// pnpm reads the "pnpm" settings that decide which packages build, and its overrides.
func (p *PackageJSON) pnpm(r *jsonReader) error {
	p.Pnpm = &PnpmSettings{}
	_, err := r.object(func(k string, _ int) error {
		var err error
		switch k {
		case "onlyBuiltDependencies":
			p.Pnpm.OnlyBuiltDependencies, p.Pnpm.HasOnlyBuilt, err = r.stringList()
		case "neverBuiltDependencies":
			p.Pnpm.NeverBuiltDependencies, p.Pnpm.HasNeverBuilt, err = r.stringList()
		case "onlyBuiltDependenciesFile":
			p.Pnpm.OnlyBuiltFile, _, err = r.str()
		case "overrides":
			var m map[string]string
			m, err = r.stringMap(nil)
			for k, v := range m {
				p.addOverride(k, v)
			}
		default:
			err = r.skip()
		}
		return err
	})
	return err
}

// dependenciesMeta reads the boolean settings of "dependenciesMeta".
func (p *PackageJSON) dependenciesMeta(r *jsonReader) error {
	p.DependenciesMeta = map[string]map[string]bool{}
	_, err := r.object(func(name string, _ int) error {
		m := map[string]bool{}
		p.DependenciesMeta[name] = m
		_, err := r.object(func(k string, _ int) error {
			v, err := r.value()
			if b, ok := v.(bool); ok {
				m[k] = b
			}
			return err
		})
		return err
	})
	return err
}

func (p *PackageJSON) addOverride(key, spec string) {
	if p.Overrides == nil {
		p.Overrides = map[string]string{}
	}
	p.Overrides[key] = spec
}

// overrideObjectBody flattens the members of an npm overrides object whose
// opening brace was consumed; "." names the parent's own version.
func (p *PackageJSON) overrideObjectBody(r *jsonReader, prefix string, depth int) error {
	for r.dec.More() {
		kt, err := r.token()
		if err != nil {
			return err
		}
		sub, _ := kt.(string)
		name := sub
		switch {
		case prefix == "":
		case sub == ".":
			name = prefix
		default:
			name = prefix + ">" + sub
		}
		vt, err := r.token()
		if err != nil {
			return err
		}
		switch {
		case isString(vt):
			p.addOverride(name, vt.(string))
		case vt == json.Delim('{') && depth < 32:
			if err := p.overrideObjectBody(r, name, depth+1); err != nil {
				return err
			}
		default:
			if err := r.skipRest(vt); err != nil {
				return err
			}
		}
	}
	_, err := r.token()
	return err
}

func isString(t json.Token) bool { _, ok := t.(string); return ok }
