package manifest

import (
	"encoding/json"
	"sort"
	"strings"
)

// PackageLock is a package-lock.json, npm-shrinkwrap.json or
// node_modules/.package-lock.json of lockfile version 1, 2 or 3.
type PackageLock struct {
	Name            string
	Version         string
	LockfileVersion int
	// Packages lists every entry, the root ("" path) first. For version 2 and 3
	// it is the "packages" map; for version 1 it is built from the nested
	// "dependencies" tree with npm's node_modules paths.
	Packages []LockPackage
}

// LockPackage is one installed package as the npm lockfile records it.
type LockPackage struct {
	// Path is the install location: "" for the root, "node_modules/a",
	// "node_modules/a/node_modules/@s/b", or a workspace folder.
	Path string
	// Name is the "name" field, or the package name taken from Path.
	Name      string
	Version   string
	Resolved  string
	Integrity string
	// HasInstallScript is set when the package has preinstall/install/postinstall
	// scripts or a binding.gyp (npm records both the same way).
	HasInstallScript bool
	Dev              bool
	Optional         bool
	DevOptional      bool
	Peer             bool
	Link             bool // a symlink to Resolved (workspaces, file: deps)
	InBundle         bool
	License          string
	// Bin, Dependencies and the other maps are as recorded; for the root entry
	// they repeat the root package.json.
	Bin                  map[string]string
	Dependencies         map[string]string
	DevDependencies      map[string]string
	OptionalDependencies map[string]string
	PeerDependencies     map[string]string
	Line                 int
}

// Root returns the root entry ("" path), or nil for a version 1 lockfile.
func (l *PackageLock) Root() *LockPackage {
	if len(l.Packages) > 0 && l.Packages[0].Path == "" {
		return &l.Packages[0]
	}
	return nil
}

// NameFromPath returns the package name of a node_modules install path:
// "node_modules/a/node_modules/@s/b" gives "@s/b".
func NameFromPath(p string) string {
	i := strings.LastIndex(p, "node_modules/")
	if i < 0 {
		return ""
	}
	return p[i+len("node_modules/"):]
}

type lockEntryJSON struct {
	Name                 string          `json:"name"`
	Version              string          `json:"version"`
	Resolved             string          `json:"resolved"`
	Integrity            string          `json:"integrity"`
	HasInstallScript     bool            `json:"hasInstallScript"`
	Dev                  bool            `json:"dev"`
	Optional             bool            `json:"optional"`
	DevOptional          bool            `json:"devOptional"`
	Peer                 bool            `json:"peer"`
	Link                 bool            `json:"link"`
	InBundle             bool            `json:"inBundle"`
	License              any             `json:"license"`
	Bin                  json.RawMessage `json:"bin"`
	Dependencies         map[string]any  `json:"dependencies"`
	DevDependencies      map[string]any  `json:"devDependencies"`
	OptionalDependencies map[string]any  `json:"optionalDependencies"`
	PeerDependencies     map[string]any  `json:"peerDependencies"`
}

type lockV1JSON struct {
	Version      string                 `json:"version"`
	Resolved     string                 `json:"resolved"`
	Integrity    string                 `json:"integrity"`
	Dev          bool                   `json:"dev"`
	Optional     bool                   `json:"optional"`
	Bundled      bool                   `json:"bundled"`
	Requires     map[string]any         `json:"requires"`
	Dependencies map[string]*lockV1JSON `json:"dependencies"`
}

// ParsePackageLock parses an npm lockfile of any version; path is used only in errors.
func ParsePackageLock(path string, data []byte) (*PackageLock, error) {
	if len(data) > MaxLockfileSize {
		return nil, tooLarge(path, len(data), MaxLockfileSize)
	}
	r := newJSONReader(path, data)
	l := &PackageLock{}
	var v1 map[string]*lockV1JSON
	v1Lines := map[string]int{}
	var havePackages bool
	isObj, err := r.object(func(key string, line int) error {
		switch key {
		case "name":
			s, _, err := r.str()
			l.Name = s
			return err
		case "version":
			s, _, err := r.str()
			l.Version = s
			return err
		case "lockfileVersion":
			v, err := r.value()
			if n, ok := v.(json.Number); ok {
				if i, err := n.Int64(); err == nil && i >= 0 && i < 1000 {
					l.LockfileVersion = int(i)
				}
			}
			return err
		case "packages":
			havePackages = true
			_, err := r.object(func(p string, line int) error {
				if len(l.Packages) >= maxEntries {
					return tooMany(path, "packages", maxEntries)
				}
				var e lockEntryJSON
				if err := r.dec.Decode(&e); err != nil {
					// A wrongly typed field in one entry is reported with its line.
					return r.fail(err)
				}
				l.Packages = append(l.Packages, e.toPackage(p, line))
				return nil
			})
			return err
		case "dependencies":
			_, err := r.object(func(name string, line int) error {
				if len(v1) >= maxEntries {
					return tooMany(path, "dependencies", maxEntries)
				}
				var e lockV1JSON
				if err := r.dec.Decode(&e); err != nil {
					return r.fail(err)
				}
				if v1 == nil {
					v1 = map[string]*lockV1JSON{}
				}
				v1[name] = &e
				v1Lines[name] = line
				return nil
			})
			return err
		}
		return r.skip()
	})
	if err != nil {
		return nil, err
	}
	if !isObj {
		return nil, parseErr(path, 1, "lockfile is not a JSON object")
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if !havePackages {
		// Version 1: the nested dependencies tree is all there is.
		l.Packages = l.Packages[:0]
		flattenV1(&l.Packages, "", v1, v1Lines, 0)
		if len(l.Packages) > maxEntries {
			return nil, tooMany(path, "packages", maxEntries)
		}
	}
	sort.SliceStable(l.Packages, func(i, j int) bool {
		return l.Packages[i].Path == "" && l.Packages[j].Path != ""
	})
	return l, nil
}

func (e *lockEntryJSON) toPackage(p string, line int) LockPackage {
	lp := LockPackage{
		Path: p, Name: e.Name, Version: e.Version, Resolved: e.Resolved, Integrity: e.Integrity,
		HasInstallScript: e.HasInstallScript, Dev: e.Dev, Optional: e.Optional, DevOptional: e.DevOptional,
		Peer: e.Peer, Link: e.Link, InBundle: e.InBundle, Line: line,
		Dependencies:         stringsOnly(e.Dependencies),
		DevDependencies:      stringsOnly(e.DevDependencies),
		OptionalDependencies: stringsOnly(e.OptionalDependencies),
		PeerDependencies:     stringsOnly(e.PeerDependencies),
	}
	if s, ok := e.License.(string); ok {
		lp.License = s
	}
	if lp.Name == "" {
		lp.Name = NameFromPath(p)
	}
	if len(e.Bin) > 0 {
		var m map[string]any
		if json.Unmarshal(e.Bin, &m) == nil {
			lp.Bin = stringsOnly(m)
		}
	}
	return lp
}

func stringsOnly(m map[string]any) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func flattenV1(out *[]LockPackage, prefix string, deps map[string]*lockV1JSON, lines map[string]int, depth int) {
	if depth > 256 || len(*out) > maxEntries {
		return
	}
	names := make([]string, 0, len(deps))
	for n := range deps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		e := deps[name]
		if e == nil {
			continue
		}
		p := prefix + "node_modules/" + name
		lp := LockPackage{
			Path: p, Name: name, Version: e.Version, Resolved: e.Resolved, Integrity: e.Integrity,
			Dev: e.Dev, Optional: e.Optional, InBundle: e.Bundled, Dependencies: stringsOnly(e.Requires),
		}
		if lines != nil {
			lp.Line = lines[name]
		}
		// Version 1 stores a git or tarball spec in "version" and no "resolved".
		if lp.Resolved == "" && strings.Contains(e.Version, ":") {
			lp.Resolved = e.Version
		}
		*out = append(*out, lp)
		flattenV1(out, p+"/", e.Dependencies, nil, depth+1)
	}
}
