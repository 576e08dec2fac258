package manifest

import (
	"encoding/json"
	"sort"
	"strings"
)

// BunLock is a text bun.lock (JSON with comments and trailing commas).
type BunLock struct {
	LockfileVersion int
	// Workspaces maps a workspace path ("" is the root) to its declared dependencies.
	Workspaces map[string]BunWorkspace
	Packages   []BunPackage
	// TrustedDependencies is the root's trustedDependencies as recorded in the lockfile.
	TrustedDependencies []string
}

// BunWorkspace is one workspace entry of a bun.lock.
type BunWorkspace struct {
	Name string
	// Dependencies merges dependencies, devDependencies, optionalDependencies and
	// peerDependencies: name -> spec.
	Dependencies map[string]string
}

// BunPackage is one entry of a bun.lock "packages" map.
type BunPackage struct {
	Key string // the package's install key, "lodash" or "a/lodash" when nested
	// Ident is the first element, "name@version" or "name@github:user/repo#ref".
	Ident   string
	Name    string
	Version string
	// Registry is the tarball URL or registry ("" for the default registry).
	Registry  string
	Integrity string
	Line      int
}

// ParseBunLock parses a bun.lock; path is used only in errors.
func ParseBunLock(path string, data []byte) (*BunLock, error) {
	if len(data) > MaxLockfileSize {
		return nil, tooLarge(path, len(data), MaxLockfileSize)
	}
	r := newJSONReader(path, stripJSONC(data))
	b := &BunLock{Workspaces: map[string]BunWorkspace{}}
	isObj, err := r.object(func(key string, line int) error {
		switch key {
		case "lockfileVersion":
			v, err := r.value()
			if n, ok := v.(json.Number); ok {
				if i, err := n.Int64(); err == nil && i >= 0 && i < 1000 {
					b.LockfileVersion = int(i)
				}
			}
			return err
		case "trustedDependencies":
			l, _, err := r.stringList()
			b.TrustedDependencies = l
			return err
		case "workspaces":
			_, err := r.object(func(ws string, _ int) error {
				w := BunWorkspace{Dependencies: map[string]string{}}
				_, err := r.object(func(k string, _ int) error {
					switch k {
					case "name":
						s, _, err := r.str()
						w.Name = s
						return err
					case "dependencies", "devDependencies", "optionalDependencies", "peerDependencies":
						m, err := r.stringMap(nil)
						for n, s := range m {
							w.Dependencies[n] = s
						}
						return err
					}
					return r.skip()
				})
				b.Workspaces[ws] = w
				return err
			})
			return err
		case "packages":
			_, err := r.object(func(k string, line int) error {
				if len(b.Packages) >= maxEntries {
					return tooMany(path, "packages", maxEntries)
				}
				var arr []any
				if err := r.dec.Decode(&arr); err != nil {
					return r.fail(err)
				}
				p := BunPackage{Key: k, Line: line}
				if len(arr) > 0 {
					p.Ident, _ = arr[0].(string)
				}
				p.Name, p.Version = bunIdent(p.Ident)
				if len(arr) >= 4 {
					p.Registry, _ = arr[1].(string)
					p.Integrity, _ = arr[3].(string)
				}
				b.Packages = append(b.Packages, p)
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
		return nil, parseErr(path, 1, "bun.lock is not a JSON object")
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	sort.SliceStable(b.Packages, func(i, j int) bool { return b.Packages[i].Line < b.Packages[j].Line })
	return b, nil
}

func bunIdent(ident string) (string, string) {
	if ident == "" {
		return "", ""
	}
	if at := strings.IndexByte(ident[1:], '@'); at >= 0 {
		return ident[:at+1], ident[at+2:]
	}
	return ident, ""
}

// stripJSONC blanks out comments and trailing commas, keeping every newline
// so that line numbers stay true.
func stripJSONC(data []byte) []byte {
	out := make([]byte, len(data))
	copy(out, data)
	n := len(out)
	lastComma := -1 // index of a comma not yet followed by a value
	for i := 0; i < n; i++ {
		c := out[i]
		switch {
		case c == '"':
			lastComma = -1
			i++
			for i < n && out[i] != '"' {
				if out[i] == '\\' {
					i++
				}
				i++
			}
		case c == '/' && i+1 < n && out[i+1] == '/':
			for i < n && out[i] != '\n' {
				out[i] = ' '
				i++
			}
		case c == '/' && i+1 < n && out[i+1] == '*':
			for i < n && !(out[i] == '*' && i+1 < n && out[i+1] == '/') {
				if out[i] != '\n' {
					out[i] = ' '
				}
				i++
			}
			if i < n {
				out[i] = ' '
				if i+1 < n {
					out[i+1] = ' '
				}
				i++
			}
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out
}
