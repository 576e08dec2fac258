package manifest

import (
	"strings"
)

// PnpmLock is a pnpm-lock.yaml of lockfile version 5, 6 or 9.
type PnpmLock struct {
	LockfileVersion string
	// Importers are the projects of the workspace; "." is the root. Lockfiles of
	// version 5 and 6 without an importers section get one "." importer.
	Importers []PnpmImporter
	Packages  []PnpmPackage
}

// PnpmImporter is one project of a pnpm workspace and what it depends on.
type PnpmImporter struct {
	Path string
	// Specifiers maps a dependency name to the spec written in package.json.
	Specifiers map[string]string
	// Versions maps a dependency name to the resolved version or link.
	Versions map[string]string
	Line     int
}

// PnpmPackage is one entry of the packages section.
type PnpmPackage struct {
	// Key is the entry key as written ("/lodash@4.17.21", "/lodash/4.17.21", "lodash@4.17.21").
	Key     string
	Name    string
	Version string
	// Integrity, Tarball, Repo, Commit, Type and Directory come from "resolution".
	Integrity     string
	Tarball       string
	Repo          string
	Commit        string
	Type          string // "git", "directory" or "" for registry/tarball
	Directory     string
	RequiresBuild bool
	HasBin        bool
	Dev           bool
	Optional      bool
	Line          int
}

// ParsePnpmLock parses a pnpm-lock.yaml; path is used only in errors.
func ParsePnpmLock(path string, data []byte) (*PnpmLock, error) {
	if len(data) > MaxLockfileSize {
		return nil, tooLarge(path, len(data), MaxLockfileSize)
	}
	root, err := parseYAML(path, data, 2)
	if err != nil {
		return nil, err
	}
	lv := root.get("lockfileVersion")
	if lv == nil {
		return nil, parseErr(path, 1, "no lockfileVersion: not a pnpm lockfile")
	}
	l := &PnpmLock{LockfileVersion: lv.value}
	if imps := root.get("importers"); imps != nil {
		for _, n := range imps.kids {
			l.Importers = append(l.Importers, pnpmImporter(n.key, n, n.line))
		}
	} else {
		l.Importers = append(l.Importers, pnpmImporter(".", root, 1))
	}
	if pkgs := root.get("packages"); pkgs != nil {
		if len(pkgs.kids) > maxEntries {
			return nil, tooMany(path, "packages", maxEntries)
		}
		l.Packages = make([]PnpmPackage, 0, len(pkgs.kids))
		for _, n := range pkgs.kids {
			if n.key == "-" {
				return nil, parseErr(path, n.line, "packages is a sequence, not a mapping")
			}
			l.Packages = append(l.Packages, pnpmPackage(n))
		}
	}
	return l, nil
}

func pnpmImporter(p string, n *ynode, line int) PnpmImporter {
	imp := PnpmImporter{Path: p, Specifiers: map[string]string{}, Versions: map[string]string{}, Line: line}
	for k, v := range n.get("specifiers").strMap() {
		imp.Specifiers[k] = v
	}
	for _, sec := range []string{"dependencies", "devDependencies", "optionalDependencies"} {
		for _, d := range n.get(sec).kidsOrNil() {
			if d.scalar {
				imp.Versions[d.key] = d.value // version 5: name: version
				continue
			}
			if s := d.str("specifier"); s != "" {
				imp.Specifiers[d.key] = s
			}
			if v := d.str("version"); v != "" {
				imp.Versions[d.key] = v
			}
		}
	}
	return imp
}

func (n *ynode) kidsOrNil() []*ynode {
	if n == nil {
		return nil
	}
	return n.kids
}

func pnpmPackage(n *ynode) PnpmPackage {
	p := PnpmPackage{Key: n.key, Line: n.line}
	p.Name, p.Version = pnpmKeyNameVersion(n.key)
	if v := n.str("name"); v != "" {
		p.Name = v
	}
	if v := n.str("version"); v != "" {
		p.Version = v
	}
	if res := n.get("resolution"); res != nil {
		p.Integrity = res.str("integrity")
		p.Tarball = res.str("tarball")
		p.Repo = res.str("repo")
		p.Commit = res.str("commit")
		p.Type = res.str("type")
		p.Directory = res.str("directory")
	}
	p.RequiresBuild = n.boolean("requiresBuild")
	p.HasBin = n.boolean("hasBin")
	p.Dev = n.boolean("dev")
	p.Optional = n.boolean("optional")
	return p
}

// pnpmKeyNameVersion reads the name and version from a packages key of any
// lockfile version: "/a/1.0.0_peer" (5), "/@s/a@1.0.0(peer)" (6), "a@1.0.0" (9).
func pnpmKeyNameVersion(key string) (string, string) {
	k := strings.TrimPrefix(key, "/")
	if i := strings.IndexByte(k, '('); i > 0 {
		k = k[:i]
	}
	scopeEnd := 0
	if strings.HasPrefix(k, "@") {
		if i := strings.IndexByte(k, '/'); i > 0 {
			scopeEnd = i + 1
		}
	}
	rest := k[scopeEnd:]
	at, sl := strings.IndexByte(rest, '@'), strings.IndexByte(rest, '/')
	if at > 0 && (sl < 0 || at < sl) {
		return k[:scopeEnd+at], rest[at+1:]
	}
	if sl <= 0 {
		return k, ""
	}
	name, ver := k[:scopeEnd+sl], rest[sl+1:]
	if i := strings.IndexByte(ver, '_'); i > 0 {
		ver = ver[:i]
	}
	return name, ver
}
