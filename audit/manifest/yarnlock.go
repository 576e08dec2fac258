package manifest

import (
	"bytes"
	"strings"
)

// YarnLock is a yarn.lock in the classic (v1) or berry (v2+) format.
type YarnLock struct {
	// Berry is set for the YAML format with __metadata (yarn 2 and later).
	Berry bool
	// Version is "1" for classic, or __metadata.version for berry.
	Version  string
	CacheKey string
	Entries  []YarnEntry
}

// YarnEntry is one resolved package of a yarn.lock.
type YarnEntry struct {
	// Specs are the descriptors that resolve to this entry ("lodash@^4.17.0",
	// "lodash@npm:^4.17.0").
	Specs []string
	// Name is the package name of the first spec.
	Name    string
	Version string
	// Resolved is classic's "resolved" URL, or berry's "resolution" locator.
	Resolved string
	// Integrity is classic's SRI string; Checksum is berry's cache checksum.
	Integrity    string
	Checksum     string
	LanguageName string
	LinkType     string // berry: "hard" (fetched) or "soft" (link to a folder)
	Dependencies map[string]string
	// OptionalDependencies is classic's optionalDependencies section.
	OptionalDependencies map[string]string
	Line                 int
}

// SpecName returns the package name of a descriptor such as "@s/a@^1.0.0" or
// "a@npm:^1"; the name ends at the first '@' after the first character.
func SpecName(desc string) string {
	if i := strings.IndexByte(desc[min(1, len(desc)):], '@'); i >= 0 {
		return desc[:i+min(1, len(desc))]
	}
	return desc
}

// Find returns the entry that resolves name@spec, or nil. For berry, a bare
// range is looked up with the npm: protocol that yarn adds to it.
func (y *YarnLock) Find(name, spec string) *YarnEntry {
	want := []string{name + "@" + spec}
	if y.Berry && !strings.Contains(spec, ":") {
		want = append(want, name+"@npm:"+spec)
	}
	for i := range y.Entries {
		for _, s := range y.Entries[i].Specs {
			for _, w := range want {
				if s == w {
					return &y.Entries[i]
				}
			}
		}
	}
	return nil
}

// ParseYarnLock parses a yarn.lock of either format; path is used only in errors.
func ParseYarnLock(path string, data []byte) (*YarnLock, error) {
	if len(data) > MaxLockfileSize {
		return nil, tooLarge(path, len(data), MaxLockfileSize)
	}
	var root *ynode
	var err error
	if yarnLegacy.Match(data) {
		root, err = parseYarnClassic(path, data)
	} else {
		root, err = parseYAML(path, data, 1)
	}
	if err != nil {
		return nil, err
	}
	y := &YarnLock{Entries: make([]YarnEntry, 0, len(root.kids))}
	if meta := root.get("__metadata"); meta != nil {
		y.Berry = true
		y.Version = meta.str("version")
		y.CacheKey = meta.str("cacheKey")
	} else if bytes.Contains(data, []byte("# yarn lockfile v1")) {
		y.Version = "1"
	}
	if len(root.kids) > maxEntries {
		return nil, tooMany(path, "entries", maxEntries)
	}
	for _, n := range root.kids {
		if n.key == "__metadata" {
			continue
		}
		if n.scalar || n.key == "-" {
			return nil, parseErr(path, n.line, "unexpected top-level value %q: a yarn.lock entry is a key with a block below it", n.key)
		}
		e := YarnEntry{Line: n.line, Specs: splitSpecs(n.key)}
		if len(e.Specs) > 0 {
			e.Name = SpecName(e.Specs[0])
		}
		e.Version = n.str("version")
		e.Integrity = n.str("integrity")
		e.Checksum = n.str("checksum")
		e.LanguageName = n.str("languageName")
		e.LinkType = n.str("linkType")
		if y.Berry {
			e.Resolved = n.str("resolution")
		} else {
			e.Resolved = n.str("resolved")
		}
		e.Dependencies = n.get("dependencies").strMap()
		e.OptionalDependencies = n.get("optionalDependencies").strMap()
		y.Entries = append(y.Entries, e)
	}
	return y, nil
}

// splitSpecs splits a yarn.lock entry key into its descriptors.
func splitSpecs(key string) []string {
	var out []string
	for _, part := range strings.Split(key, ",") {
		part = strings.TrimSpace(part)
		part = strings.Trim(part, "\"'")
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}
