package manifest

import (
	"strings"
	"unicode/utf8"
)

// JSHit is one finding in a JavaScript file.
type JSHit struct {
	Text string
	Line int
}

// JSScan is what ScanJS found in a JavaScript file run by a lifecycle hook.
type JSScan struct {
	Lines int
	// LongestLine is the length in bytes of the longest line, which is line LongestLineNo.
	LongestLine   int
	LongestLineNo int
	// HexIdents counts identifiers like _0x3f2a, the mark of common obfuscators;
	// HexIdentSamples holds the first few.
	HexIdents       int
	HexIdentSamples []JSHit
	// EvalDecode lists eval(...), Function(...) or new Function(...) calls whose
	// arguments decode data with Buffer.from or atob.
	EvalDecode []JSHit
	// EnvDump lists JSON.stringify(process.env) calls.
	EnvDump []JSHit
	// Modules lists the module names of require("x"), import "x", import("x") and from "x".
	Modules []JSHit
	// URLs lists the URLs in string and template literals; Domains the host
	// names in them and the bare domain-like words of strings; IPs the IPv4
	// addresses in strings.
	URLs    []JSHit
	Domains []JSHit
	IPs     []JSHit
	// Strings holds string literal values, each cut to MaxJSStringLen bytes,
	// at most MaxJSStrings of them; StringsTruncated is set when some were dropped.
	Strings          []JSHit
	StringsTruncated bool

	calls callIndex
}

// callIndex answers "does this call's argument list decode data" in constant time.
type callIndex struct {
	closeAt    []int32 // for a "(" token, the index of its ")" or len(toks)
	nextDecode []int32 // the first atob( or Buffer.from at or after each index, or len(toks)
}

func matchCalls(toks []jtok) callIndex {
	n := len(toks)
	c := callIndex{closeAt: make([]int32, n), nextDecode: make([]int32, n+1)}
	var stack []int32
	for i := range toks {
		c.closeAt[i] = int32(n)
		switch {
		case tokIs(toks, i, "("):
			stack = append(stack, int32(i))
		case tokIs(toks, i, ")") && len(stack) > 0:
			c.closeAt[stack[len(stack)-1]] = int32(i)
			stack = stack[:len(stack)-1]
		}
	}
	c.nextDecode[n] = int32(n)
	for i := n - 1; i >= 0; i-- {
		c.nextDecode[i] = c.nextDecode[i+1]
		if tokIs(toks, i, "atob") && tokIs(toks, i+1, "(") || tokIs(toks, i, "Buffer") && tokIs(toks, i+1, ".") && tokIs(toks, i+2, "from") {
			c.nextDecode[i] = int32(i)
		}
	}
	return c
}

// Limits on what ScanJS keeps of string literals.
const (
	MaxJSStrings   = 20000
	MaxJSStringLen = 4096
)

const maxJSHits = 1000

var (
	urlRE    = lazyRE(`(?i)\b(?:https?|wss?|ftp)://[^\s"'<>\x60\\)]+`)
	domainRE = lazyRE(`(?i)\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{1,62}\b`)
	ipv4RE   = lazyRE(`\b(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\b`)
	hexIDRE  = lazyRE(`^_0x[0-9a-fA-F]+$`)
)

// fileSuffixes are last labels that make a dotted word a file name, not a domain.
var fileSuffixes = map[string]bool{
	"js": true, "mjs": true, "cjs": true, "ts": true, "mts": true, "cts": true, "jsx": true, "tsx": true,
	"json": true, "md": true, "txt": true, "node": true, "map": true, "css": true, "html": true, "htm": true,
	"png": true, "jpg": true, "svg": true, "gif": true, "sh": true, "bat": true, "cmd": true, "exe": true,
	"so": true, "dll": true, "dylib": true, "gz": true, "tgz": true, "zip": true, "tar": true, "yml": true,
	"yaml": true, "lock": true, "log": true, "wasm": true, "gyp": true, "py": true, "rs": true, "toml": true,
	"prototype": true, "length": true, "exports": true, "env": true, "argv": true, "then": true,
}

type jtokKind uint8

const (
	jtIdent jtokKind = iota
	jtPunct
	jtString
	jtOther
)

type jtok struct {
	kind jtokKind
	text string
	line int
}

// ScanJS scans JavaScript source for the marks of obfuscated or exfiltrating
// code: comments are skipped, and string, template and regular expression
// literals are told apart from code. Input over MaxSourceSize gives ErrTooLarge.
func ScanJS(path string, src []byte) (*JSScan, error) {
	if len(src) > MaxSourceSize {
		return nil, tooLarge(path, len(src), MaxSourceSize)
	}
	s := &JSScan{}
	lineNo, start := 1, 0
	for i := 0; i <= len(src); i++ {
		if i == len(src) || src[i] == '\n' {
			if l := i - start; l > s.LongestLine {
				s.LongestLine, s.LongestLineNo = l, lineNo
			}
			if i < len(src) {
				lineNo++
			}
			start = i + 1
		}
	}
	s.Lines = lineNo
	if len(src) == 0 {
		s.Lines = 0
	}
	toks := lexJS(src)
	s.calls = matchCalls(toks)
	for i, t := range toks {
		switch t.kind {
		case jtString:
			s.addString(t)
		case jtIdent:
			if hexIDRE().MatchString(t.text) {
				s.HexIdents++
				if len(s.HexIdentSamples) < 5 {
					s.HexIdentSamples = append(s.HexIdentSamples, JSHit{t.text, t.line})
				}
			}
			s.checkCall(toks, i)
		}
	}
	s.calls = callIndex{}
	return s, nil
}

func (s *JSScan) addString(t jtok) {
	v := t.text
	for _, u := range urlRE().FindAllString(v, 64) {
		s.URLs = appendHit(s.URLs, u, t.line)
		host := u[strings.Index(u, "://")+3:]
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			host = host[i+1:]
		}
		if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host, "]") {
			host = host[:i]
		}
		if host != "" {
			s.Domains = appendHit(s.Domains, strings.ToLower(host), t.line)
		}
	}
	for _, d := range domainRE().FindAllString(urlRE().ReplaceAllString(v, " "), 64) {
		last := d[strings.LastIndexByte(d, '.')+1:]
		if !fileSuffixes[strings.ToLower(last)] {
			s.Domains = appendHit(s.Domains, strings.ToLower(d), t.line)
		}
	}
	for _, ip := range ipv4RE().FindAllString(v, 16) {
		s.IPs = appendHit(s.IPs, ip, t.line)
	}
	if len(s.Strings) >= MaxJSStrings {
		s.StringsTruncated = true
		return
	}
	if len(v) > MaxJSStringLen {
		v = v[:MaxJSStringLen]
	}
	s.Strings = append(s.Strings, JSHit{v, t.line})
}

func appendHit(hits []JSHit, text string, line int) []JSHit {
	if len(hits) >= maxJSHits {
		return hits
	}
	return append(hits, JSHit{text, line})
}

func tokIs(toks []jtok, i int, text string) bool {
	return i >= 0 && i < len(toks) && toks[i].kind != jtString && toks[i].text == text
}

// checkCall looks at an identifier that may start an interesting call.
func (s *JSScan) checkCall(toks []jtok, i int) {
	t := toks[i]
	member := tokIs(toks, i-1, ".")
	switch t.text {
	case "eval", "Function":
		if !tokIs(toks, i+1, "(") {
			return
		}
		if d := s.calls.nextDecode[i+1]; d < s.calls.closeAt[i+1] {
			what := "atob(...)"
			if toks[d].text == "Buffer" {
				what = "Buffer.from(...)"
			}
			s.EvalDecode = appendHit(s.EvalDecode, t.text+"("+what+")", t.line)
		}
	case "stringify":
		// Object.keys/entries(process.env) is common and benign; serialising the
		// whole environment is the exfiltration pattern.
		if member && tokIs(toks, i-2, "JSON") && tokIs(toks, i+1, "(") && tokIs(toks, i+2, "process") && tokIs(toks, i+3, ".") &&
			tokIs(toks, i+4, "env") && (tokIs(toks, i+5, ")") || tokIs(toks, i+5, ",")) {
			s.EnvDump = appendHit(s.EnvDump, "JSON.stringify(process.env)", t.line)
		}
	case "require":
		if !member && tokIs(toks, i+1, "(") && i+2 < len(toks) && toks[i+2].kind == jtString {
			s.Modules = appendHit(s.Modules, toks[i+2].text, t.line)
		}
	case "import":
		if member {
			return
		}
		if i+1 < len(toks) && toks[i+1].kind == jtString {
			s.Modules = appendHit(s.Modules, toks[i+1].text, t.line)
		} else if tokIs(toks, i+1, "(") && i+2 < len(toks) && toks[i+2].kind == jtString {
			s.Modules = appendHit(s.Modules, toks[i+2].text, t.line)
		}
	case "from":
		if i+1 < len(toks) && toks[i+1].kind == jtString && !member {
			s.Modules = appendHit(s.Modules, toks[i+1].text, t.line)
		}
	}
}

// regexAfter are the keywords after which a '/' starts a regular expression.
var regexAfter = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true, "delete": true,
	"void": true, "throw": true, "case": true, "do": true, "else": true, "yield": true, "await": true,
}

// lexJS splits JavaScript into identifiers, punctuation and string values;
// template literal text counts as a string and its ${...} parts as code.
func lexJS(src []byte) []jtok {
	l := jsLexer{src: src, line: 1, toks: make([]jtok, 0, len(src)/6+16)}
	n := len(src)
	if n >= 2 && src[0] == '#' && src[1] == '!' {
		l.skipLine()
	}
	for l.i < n {
		c := src[l.i]
		switch {
		case c == '\n':
			l.line++
			l.i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.i++
		case c == '/' && l.i+1 < n && src[l.i+1] == '/':
			l.skipLine()
		case c == '/' && l.i+1 < n && src[l.i+1] == '*':
			l.blockComment()
		case c == '"' || c == '\'':
			l.quoted(c)
		case c == '`':
			l.i++
			l.template()
		case c == '/' && l.regexOK():
			l.regexOrSlash()
		case c == '{':
			l.depth++
			l.toks = append(l.toks, jtok{jtPunct, "{", l.line})
			l.i++
		case c == '}':
			l.closeBrace()
		case c >= '0' && c <= '9':
			j := l.i + 1
			for j < n && (isJSIdentByte(src[j]) || src[j] == '.') {
				j++
			}
			l.toks = append(l.toks, jtok{jtOther, "", l.line})
			l.i = j
		case isJSIdentByte(c) || c >= utf8.RuneSelf:
			j := l.i
			for j < n && (isJSIdentByte(src[j]) || src[j] >= utf8.RuneSelf) {
				j++
			}
			l.toks = append(l.toks, jtok{jtIdent, string(src[l.i:j]), l.line})
			l.i = j
		default:
			l.toks = append(l.toks, jtok{jtPunct, string(c), l.line})
			l.i++
		}
	}
	return l.toks
}

// jsLexer is where lexJS is in its source: the next byte, its line, the
// tokens so far, and the template literals open around the code.
type jsLexer struct {
	src  []byte
	i    int
	line int
	toks []jtok
	// braces holds, for each open ${ of a template, the code brace depth at which it closes.
	braces []int
	depth  int
}

// regexOK reports whether a '/' here starts a regular expression rather
// than a division, from the token before it.
func (l *jsLexer) regexOK() bool {
	if len(l.toks) == 0 {
		return true
	}
	p := l.toks[len(l.toks)-1]
	switch p.kind {
	case jtIdent:
		return regexAfter[p.text]
	case jtPunct:
		return p.text != ")" && p.text != "]" && p.text != "}"
	}
	return false
}

// skipLine moves to the end of the line (a // comment, a #! line).
func (l *jsLexer) skipLine() {
	for l.i < len(l.src) && l.src[l.i] != '\n' {
		l.i++
	}
}

// blockComment skips a /* comment */, counting its lines.
func (l *jsLexer) blockComment() {
	src, n := l.src, len(l.src)
	l.i += 2
	for l.i < n && !(src[l.i] == '*' && l.i+1 < n && src[l.i+1] == '/') {
		if src[l.i] == '\n' {
			l.line++
		}
		l.i++
	}
	l.i += 2
}

// quoted reads a string literal quoted by q, which ends at the line's end
// if it is not closed.
func (l *jsLexer) quoted(q byte) {
	src, n := l.src, len(l.src)
	var b strings.Builder
	startLine := l.line
	l.i++
	for l.i < n && src[l.i] != q && src[l.i] != '\n' {
		if src[l.i] == '\\' && l.i+1 < n {
			l.i++
			switch src[l.i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\n':
				l.line++
			default:
				b.WriteByte(src[l.i])
			}
			l.i++
			continue
		}
		b.WriteByte(src[l.i])
		l.i++
	}
	l.i++
	l.toks = append(l.toks, jtok{jtString, b.String(), startLine})
}

// template reads template text from i (after the backquote or the closing
// brace of ${...}) up to the closing backquote or the next ${.
func (l *jsLexer) template() {
	src, n := l.src, len(l.src)
	var b strings.Builder
	startLine := l.line
	for l.i < n {
		c := src[l.i]
		switch {
		case c == '\\' && l.i+1 < n:
			if src[l.i+1] == '\n' {
				l.line++
			}
			b.WriteByte(src[l.i+1])
			l.i += 2
			continue
		case c == '`':
			l.i++
			l.toks = append(l.toks, jtok{jtString, b.String(), startLine})
			return
		case c == '$' && l.i+1 < n && src[l.i+1] == '{':
			l.i += 2
			l.toks = append(l.toks, jtok{jtString, b.String(), startLine})
			l.toks = append(l.toks, jtok{jtPunct, "(", l.line})
			l.braces = append(l.braces, l.depth)
			l.depth++
			return
		case c == '\n':
			l.line++
		}
		b.WriteByte(c)
		l.i++
	}
	l.toks = append(l.toks, jtok{jtString, b.String(), startLine})
}

// regexOrSlash reads a regular expression literal as one token, or the '/'
// alone when no closing slash is on the line.
func (l *jsLexer) regexOrSlash() {
	src, n := l.src, len(l.src)
	j := l.i + 1
	inClass := false
	for j < n && src[j] != '\n' {
		if src[j] == '\\' {
			j += 2
			continue
		}
		if src[j] == '[' {
			inClass = true
		} else if src[j] == ']' {
			inClass = false
		} else if src[j] == '/' && !inClass {
			break
		}
		j++
	}
	if j < n && src[j] == '/' {
		j++
		for j < n && (src[j] >= 'a' && src[j] <= 'z') {
			j++
		}
		l.toks = append(l.toks, jtok{jtOther, "", l.line})
		l.i = j
	} else {
		l.toks = append(l.toks, jtok{jtPunct, "/", l.line})
		l.i++
	}
}

// closeBrace reads a '}': the end of a ${...} resumes its template's text.
func (l *jsLexer) closeBrace() {
	l.depth--
	if len(l.braces) > 0 && l.braces[len(l.braces)-1] == l.depth {
		l.braces = l.braces[:len(l.braces)-1]
		l.toks = append(l.toks, jtok{jtPunct, ")", l.line})
		l.i++
		l.template()
		return
	}
	l.toks = append(l.toks, jtok{jtPunct, "}", l.line})
	l.i++
}

func isJSIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
