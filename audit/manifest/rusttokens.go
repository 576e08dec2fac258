package manifest

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RustToken is an identifier path or a string literal found in Rust code.
type RustToken struct {
	// Text is a path as written with "::" joins and no spaces
	// ("std::process::Command", "Command::new", "read_dir"; a macro call ends
	// in "!", as "include_str!"), or the value of a string literal.
	Text string
	Line int
}

// RustUse is one name brought into scope by a use declaration.
type RustUse struct {
	// Path is the full imported path, "std::process::Command"; a glob import
	// ends in "::*".
	Path string
	// Name is the local name: the last segment, or the alias after "as".
	Name string
	Line int
}

// RustScan is what ScanRust found in code, outside comments.
type RustScan struct {
	Paths   []RustToken // identifier paths in code, including macro names
	Strings []RustToken // string literal values (normal, raw, byte and C strings)
	Uses    []RustUse   // use declarations, with groups, self and aliases expanded

	byName map[string]string // local name -> imported path, the last use winning
	globs  []string          // parents of glob imports, ending in "::"
}

// index builds the lookup tables of Resolve and Mentions from Uses.
func (s *RustScan) index() {
	if s.byName != nil {
		return
	}
	s.byName = map[string]string{}
	seen := map[string]bool{}
	for _, u := range s.Uses {
		if u.Name == "*" {
			g := strings.TrimSuffix(u.Path, "*")
			if !seen[g] {
				seen[g] = true
				s.globs = append(s.globs, g)
			}
		} else if u.Name != "_" {
			s.byName[u.Name] = u.Path
		}
	}
}

// Resolve expands the first segment of a path written in code through the
// file's use declarations: with "use std::process;", "process::Command"
// resolves to "std::process::Command". Paths that need no expansion are
// returned as written, without a leading "::".
func (s *RustScan) Resolve(p string) string {
	s.index()
	p = strings.TrimPrefix(p, "::")
	first, rest, hasRest := strings.Cut(p, "::")
	if full, ok := s.byName[first]; ok {
		if hasRest {
			return full + "::" + rest
		}
		return full
	}
	return p
}

// Mentions returns where the code refers to target (a full path such as
// "std::process::Command" or "std::net"): a use of it or of something under
// it, a path that resolves to it or under it, or a name brought in by a glob
// import of its parent. Comments never count.
func (s *RustScan) Mentions(target string) []RustToken {
	s.index()
	var hits []RustToken
	under := func(p string) bool {
		return p == target || strings.HasPrefix(p, target+"::") || strings.HasPrefix(p, target+"!")
	}
	for _, u := range s.Uses {
		if under(u.Path) {
			hits = append(hits, RustToken{Text: u.Path, Line: u.Line})
		}
	}
	// A glob import of target or below is a hit itself (above); a glob of one
	// of target's parents can bring target's own name into scope.
	var globs []string
	for _, g := range s.globs {
		if strings.HasPrefix(target, g) {
			globs = append(globs, g)
		}
	}
	for _, t := range s.Paths {
		hit := under(s.Resolve(t.Text))
		for _, g := range globs {
			if hit {
				break
			}
			hit = under(g + t.Text)
		}
		if hit {
			hits = append(hits, RustToken{Text: t.Text, Line: t.Line})
		}
	}
	return hits
}

type rtokKind uint8

const (
	rtIdent rtokKind = iota
	rtPunct
	rtString
	rtOther // numbers, chars, lifetimes
)

type rtok struct {
	kind rtokKind
	text string
	line int
}

// ScanRust tokenizes Rust source, skipping comments (nested block comments
// included) and reading string, raw string, byte and char literals, and
// returns the identifier paths, string values and use declarations with their
// lines. An unterminated literal or comment gives what was read before it
// together with a ParseError; input over MaxSourceSize gives ErrTooLarge.
func ScanRust(path string, src []byte) (*RustScan, error) {
	if len(src) > MaxSourceSize {
		return nil, tooLarge(path, len(src), MaxSourceSize)
	}
	toks, lexErr := lexRust(path, src)
	scan := &RustScan{}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case rtString:
			scan.Strings = append(scan.Strings, RustToken{Text: t.text, Line: t.line})
		case rtIdent:
			if t.text == "use" && (i == 0 || toks[i-1].text != ".") {
				u := &useParser{toks: toks, i: i + 1, line: t.line}
				u.tree(nil, 0)
				scan.Uses = append(scan.Uses, u.out...)
				i = u.i - 1
				continue
			}
			i = scan.path(toks, i) - 1
		case rtPunct:
			if t.text == "::" && i+1 < len(toks) && toks[i+1].kind == rtIdent && (i == 0 || toks[i-1].kind != rtIdent && toks[i-1].text != ">") {
				i = scan.path(toks, i) - 1
			}
		}
	}
	scan.index()
	return scan, lexErr
}

// path reads an identifier path starting at toks[i] and returns the index after it.
func (s *RustScan) path(toks []rtok, i int) int {
	var b strings.Builder
	line := toks[i].line
	if toks[i].text == "::" {
		b.WriteString("::")
		i++
	}
	for i < len(toks) && toks[i].kind == rtIdent {
		b.WriteString(toks[i].text)
		i++
		if i+1 < len(toks) && toks[i].text == "::" && toks[i+1].kind == rtIdent {
			b.WriteString("::")
			i++
			continue
		}
		break
	}
	if i < len(toks) && toks[i].text == "!" && (i+1 >= len(toks) || toks[i+1].text != "=") {
		b.WriteByte('!')
		i++
	}
	if b.Len() > 0 {
		s.Paths = append(s.Paths, RustToken{Text: b.String(), Line: line})
	}
	return i
}

type useParser struct {
	toks []rtok
	i    int
	line int
	out  []RustUse
}

func (u *useParser) peek() string {
	if u.i < len(u.toks) {
		return u.toks[u.i].text
	}
	return ""
}

// tree reads one use tree under prefix.
func (u *useParser) tree(prefix []string, depth int) {
	if depth > 64 {
		return
	}
	segs := append([]string(nil), prefix...)
	if u.peek() == "::" {
		u.i++
	}
	line := u.line
	if u.i < len(u.toks) {
		line = u.toks[u.i].line
	}
	for u.i < len(u.toks) {
		t := u.toks[u.i]
		switch {
		case t.kind == rtIdent && t.text != "as":
			segs = append(segs, t.text)
			u.i++
			if u.peek() == "::" {
				u.i++
				continue
			}
		case t.text == "*":
			u.i++
			u.out = append(u.out, RustUse{Path: strings.Join(append(segs, "*"), "::"), Name: "*", Line: t.line})
			return
		case t.text == "{":
			u.i++
			for u.i < len(u.toks) {
				switch u.peek() {
				case "}":
					u.i++
					return
				case ",":
					u.i++
					continue
				case ";":
					return
				}
				before := u.i
				u.tree(segs, depth+1)
				if u.i == before {
					u.i++ // unexpected token: step over it
				}
			}
			return
		}
		break
	}
	if len(segs) == len(prefix) {
		return
	}
	name := segs[len(segs)-1]
	if name == "self" && len(segs) > 1 {
		segs = segs[:len(segs)-1]
		name = segs[len(segs)-1]
	}
	if u.peek() == "as" && u.i+1 < len(u.toks) {
		name = u.toks[u.i+1].text
		u.i += 2
	}
	u.out = append(u.out, RustUse{Path: strings.Join(segs, "::"), Name: name, Line: line})
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// lexRust splits src into tokens, dropping comments and white space.
func lexRust(path string, src []byte) ([]rtok, error) {
	toks := make([]rtok, 0, len(src)/6+16)
	line := 1
	n := len(src)
	i := 0
	for i < n {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && src[i+1] == '*':
			next, nl, ok := blockComment(src, i)
			if !ok {
				return toks, parseErr(path, line, "unterminated block comment")
			}
			line += nl
			i = next
		case c == '"':
			s, next, nl, ok := rustString(src, i+1)
			if !ok {
				return toks, parseErr(path, line, "unterminated string literal")
			}
			toks = append(toks, rtok{rtString, s, line})
			line += nl
			i = next
		case (c == 'r' || c == 'b' || c == 'c') && rawStringStart(src, i) > 0:
			s, next, ok := rawString(src, rawStringStart(src, i))
			if !ok {
				return toks, parseErr(path, line, "unterminated raw string literal")
			}
			toks = append(toks, rtok{rtString, s, line})
			line += strings.Count(s, "\n")
			i = next
		case (c == 'b' || c == 'c') && i+1 < n && src[i+1] == '"':
			s, next, nl, ok := rustString(src, i+2)
			if !ok {
				return toks, parseErr(path, line, "unterminated string literal")
			}
			toks = append(toks, rtok{rtString, s, line})
			line += nl
			i = next
		case c == 'b' && i+1 < n && src[i+1] == '\'':
			i = skipChar(src, i+1)
			toks = append(toks, rtok{rtOther, "", line})
		case c == '\'':
			i = skipChar(src, i)
			toks = append(toks, rtok{rtOther, "", line})
		case c == 'r' && i+2 < n && src[i+1] == '#' && isIdentStartByte(src, i+2):
			j := i + 2
			for j < n {
				r, sz := utf8.DecodeRune(src[j:])
				if !isIdentPart(r) {
					break
				}
				j += sz
			}
			toks = append(toks, rtok{rtIdent, string(src[i+2 : j]), line})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < n && (isIdentPart(rune(src[j])) || src[j] == '.' && j+1 < n && src[j+1] >= '0' && src[j+1] <= '9') {
				j++
			}
			toks = append(toks, rtok{rtOther, "", line})
			i = j
		case c == ':' && i+1 < n && src[i+1] == ':':
			toks = append(toks, rtok{rtPunct, "::", line})
			i += 2
		default:
			r, sz := utf8.DecodeRune(src[i:])
			if isIdentStart(r) {
				j := i + sz
				for j < n {
					r, sz := utf8.DecodeRune(src[j:])
					if !isIdentPart(r) {
						break
					}
					j += sz
				}
				toks = append(toks, rtok{rtIdent, string(src[i:j]), line})
				i = j
				continue
			}
			if c < utf8.RuneSelf {
				toks = append(toks, rtok{rtPunct, string(c), line})
			}
			i += sz
		}
	}
	return toks, nil
}

// blockComment skips the comment that starts with the "/*" at i, nested as
// Rust nests them: next is the index after it and nl the newlines it holds;
// ok is false when it is not closed.
func blockComment(src []byte, i int) (next, nl int, ok bool) {
	n := len(src)
	depth := 0
	for i < n {
		if src[i] == '/' && i+1 < n && src[i+1] == '*' {
			depth++
			i += 2
			continue
		}
		if src[i] == '*' && i+1 < n && src[i+1] == '/' {
			depth--
			i += 2
			if depth == 0 {
				break
			}
			continue
		}
		if src[i] == '\n' {
			nl++
		}
		i++
	}
	return i, nl, depth == 0
}

// rawString reads a raw string literal from j, the index rawStringStart
// gives (its first '#' or '"'): its text, and the index after it; ok is false
// when it is not closed.
func rawString(src []byte, j int) (s string, next int, ok bool) {
	hashes := 0
	for j < len(src) && src[j] == '#' {
		hashes++
		j++
	}
	j++ // opening quote
	closing := "\"" + strings.Repeat("#", hashes)
	end := strings.Index(string(src[j:]), closing)
	if end < 0 {
		return "", 0, false
	}
	return string(src[j : j+end]), j + end + len(closing), true
}

func isIdentStartByte(src []byte, i int) bool {
	r, _ := utf8.DecodeRune(src[i:])
	return isIdentStart(r)
}

// rawStringStart returns the index after the r/br/cr prefix of a raw string
// starting at i, or 0 when src[i:] does not start one.
func rawStringStart(src []byte, i int) int {
	j := i
	if src[j] == 'b' || src[j] == 'c' {
		j++
	}
	if j >= len(src) || src[j] != 'r' {
		return 0
	}
	j++
	k := j
	for k < len(src) && src[k] == '#' {
		k++
	}
	if k < len(src) && src[k] == '"' {
		return j
	}
	return 0
}

// rustString reads a string body starting after its opening quote and
// returns its decoded value, the index after the closing quote and the
// number of newlines it spans.
func rustString(src []byte, i int) (string, int, int, bool) {
	var b strings.Builder
	nl := 0
	for i < len(src) {
		c := src[i]
		switch c {
		case '"':
			return b.String(), i + 1, nl, true
		case '\n':
			nl++
			b.WriteByte(c)
			i++
		case '\\':
			if i+1 >= len(src) {
				return "", 0, 0, false
			}
			e := src[i+1]
			i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case '\\', '"', '\'':
				b.WriteByte(e)
			case 'x':
				if i+2 <= len(src) {
					if v, err := strconv.ParseUint(string(src[i:i+2]), 16, 8); err == nil {
						b.WriteByte(byte(v))
						i += 2
					}
				}
			case 'u':
				if i < len(src) && src[i] == '{' {
					end := i
					for end < len(src) && src[end] != '}' && end-i < 10 {
						end++
					}
					if end < len(src) && src[end] == '}' {
						if v, err := strconv.ParseUint(strings.ReplaceAll(string(src[i+1:end]), "_", ""), 16, 32); err == nil {
							b.WriteRune(rune(v))
						}
						i = end + 1
					}
				}
			case '\n':
				// Line continuation: the newline and leading white space are dropped.
				nl++
				for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
					if src[i] == '\n' {
						nl++
					}
					i++
				}
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", 0, 0, false
}

// skipChar skips a char literal or a lifetime/label starting at the quote at i.
func skipChar(src []byte, i int) int {
	n := len(src)
	j := i + 1
	if j < n && src[j] == '\\' {
		// Escaped char literal: up to the closing quote on this line.
		for k := j + 1; k < n && k < j+16; k++ {
			if src[k] == '\'' && k > j+1 {
				return k + 1
			}
			if src[k] == '\n' {
				return k
			}
		}
		return j + 1
	}
	if j < n {
		_, sz := utf8.DecodeRune(src[j:])
		if j+sz < n && src[j+sz] == '\'' {
			return j + sz + 1 // 'x'
		}
	}
	// A lifetime or label: 'a, 'static.
	for j < n {
		r, sz := utf8.DecodeRune(src[j:])
		if !isIdentPart(r) {
			break
		}
		j += sz
	}
	return j
}
