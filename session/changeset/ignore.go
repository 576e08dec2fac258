package changeset

import (
	"strings"
)

// A gitignore matcher, following gitignore(5): blank lines and "#" comments are skipped; trailing
// spaces are dropped unless escaped; "!" negates; a trailing "/" matches directories only; a
// pattern with a "/" elsewhere is anchored to its .gitignore's directory, one without matches a name
// at any depth below it; "*", "?", "[...]" do not match "/"; "**/", "/**/" and "/**" span
// directories. The last matching rule wins, deeper .gitignore files win over shallower ones, and a
// file under an excluded directory stays excluded (git does not descend there).

type ignoreRule struct {
	base     string // directory of the .gitignore, "" for the root
	pattern  string
	negate   bool
	dirOnly  bool
	anchored bool
}

// parseIgnore parses one .gitignore (or exclude) file's content found in directory base.
func parseIgnore(base string, data []byte) []ignoreRule {
	var rules []ignoreRule
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		line = trimTrailingSpaces(line)
		if line == "" || line[0] == '#' {
			continue
		}
		r := ignoreRule{base: base}
		if line[0] == '!' {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		r.pattern = line
		rules = append(rules, r)
	}
	return rules
}

func trimTrailingSpaces(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		if len(s) >= 2 && s[len(s)-2] == '\\' {
			return s[:len(s)-2] + " "
		}
		s = s[:len(s)-1]
	}
	return s
}

// match reports whether the rule matches p (a path relative to the project root).
func (r ignoreRule) match(p string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	rel := p
	if r.base != "" {
		if !strings.HasPrefix(p, r.base+"/") {
			return false
		}
		rel = p[len(r.base)+1:]
	}
	if !r.anchored {
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			rel = rel[i+1:]
		}
	}
	return Wildmatch(r.pattern, rel)
}

// Wildmatch matches a gitignore glob against a slash path.
func Wildmatch(pat, text string) bool {
	return wild(pat, 0, text, 0)
}

func wild(pat string, pi int, t string, ti int) bool {
	for pi < len(pat) {
		c := pat[pi]
		switch c {
		case '*':
			segStart := pi == 0 || pat[pi-1] == '/'
			if segStart && strings.HasPrefix(pat[pi:], "**") && (pi+2 == len(pat) || pat[pi+2] == '/') {
				if pi+2 == len(pat) {
					return true // trailing "**": everything below
				}
				rest := pi + 3
				// "**/" matches zero or more whole directories.
				if wild(pat, rest, t, ti) {
					return true
				}
				for j := ti; j < len(t); j++ {
					if t[j] == '/' && wild(pat, rest, t, j+1) {
						return true
					}
				}
				return false
			}
			for pi < len(pat) && pat[pi] == '*' {
				pi++
			}
			for j := ti; j <= len(t); j++ {
				if wild(pat, pi, t, j) {
					return true
				}
				if j < len(t) && t[j] == '/' {
					return false
				}
			}
			return false
		case '?':
			if ti >= len(t) || t[ti] == '/' {
				return false
			}
			pi++
			ti++
		case '[':
			if ti >= len(t) || t[ti] == '/' {
				return false
			}
			ok, next, valid := matchClass(pat, pi, t[ti])
			if !valid {
				// An unterminated class is a literal "[".
				if t[ti] != '[' {
					return false
				}
				pi++
				ti++
				continue
			}
			if !ok {
				return false
			}
			pi = next
			ti++
		case '\\':
			if pi+1 < len(pat) {
				pi++
				c = pat[pi]
			}
			fallthrough
		default:
			if ti >= len(t) || t[ti] != c {
				return false
			}
			pi++
			ti++
		}
	}
	return ti == len(t)
}

// matchClass matches byte b against the bracket expression at pat[pi]; next is the index after it.
func matchClass(pat string, pi int, b byte) (matched bool, next int, valid bool) {
	i := pi + 1
	negate := false
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		negate = true
		i++
	}
	first := true
	for i < len(pat) {
		c := pat[i]
		if c == ']' && !first {
			return matched != negate, i + 1, true
		}
		first = false
		if c == '\\' && i+1 < len(pat) {
			i++
			c = pat[i]
		}
		if i+2 < len(pat) && pat[i+1] == '-' && pat[i+2] != ']' {
			hi := pat[i+2]
			if hi == '\\' && i+3 < len(pat) {
				hi = pat[i+3]
				i++
			}
			if c <= b && b <= hi {
				matched = true
			}
			i += 3
			continue
		}
		if c == b {
			matched = true
		}
		i++
	}
	return false, 0, false
}

// ignoreMatcher answers "is this path ignored" from .git/info/exclude and the .gitignore files of
// every directory on the way, loaded on demand through load (which returns a directory's
// .gitignore content, or nil).
type ignoreMatcher struct {
	exclude []ignoreRule
	load    func(dir string) []byte
	cache   map[string][]ignoreRule
}

func NewIgnoreMatcher(exclude []byte, load func(dir string) []byte) *ignoreMatcher {
	return &ignoreMatcher{exclude: parseIgnore("", exclude), load: load, cache: map[string][]ignoreRule{}}
}

func (m *ignoreMatcher) rules(dir string) []ignoreRule {
	if r, ok := m.cache[dir]; ok {
		return r
	}
	var r []ignoreRule
	if data := m.load(dir); data != nil {
		r = parseIgnore(dir, data)
	}
	m.cache[dir] = r
	return r
}

// Ignored reports whether p (a file when isDir is false) is ignored. Each directory on the way is
// looked at once, with the rules of those above it gathered as it goes: a path n directories deep
// costs n steps, not n*n joins of its names.
func (m *ignoreMatcher) Ignored(p string, isDir bool) bool {
	sets := [][]ignoreRule{m.exclude, m.rules("")}
	for end := 0; end < len(p); {
		next := strings.IndexByte(p[end+1:], '/')
		last := next < 0
		if last {
			end = len(p)
		} else {
			end += 1 + next
		}
		prefix := p[:end]
		if m.decide(prefix, !last || isDir, sets) {
			return true
		}
		if !last {
			sets = append(sets, m.rules(prefix))
		}
	}
	return false
}

// decide applies every rule that can see p (exclude first, then root to deepest .gitignore: the
// rule sets of sets, in order) and reports whether the last match excludes it.
func (m *ignoreMatcher) decide(p string, isDir bool, sets [][]ignoreRule) bool {
	ignored := false
	for _, rules := range sets {
		for _, r := range rules {
			if r.match(p, isDir) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}
