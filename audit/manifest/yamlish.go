package manifest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ynode is one node of the YAML subset that yarn.lock (both formats),
// pnpm-lock.yaml and .yarnrc.yml use: block mappings by indentation, plain and
// quoted scalars, one-line flow mappings and sequences, and block sequences.
// Yarn classic's "key value" lines (a space instead of ": ") parse the same way.
type ynode struct {
	key   string // "-" for a sequence item
	value string
	// scalar is set when the node has an inline value rather than children.
	scalar bool
	line   int
	kids   []*ynode
	items  int // how many kids are sequence items
}

func (n *ynode) add(k *ynode) {
	n.kids = append(n.kids, k)
	if k.key == "-" {
		n.items++
	}
}

func (n *ynode) get(key string) *ynode {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.key == key {
			return k
		}
	}
	return nil
}

func (n *ynode) str(key string) string {
	if k := n.get(key); k != nil && k.scalar {
		return k.value
	}
	return ""
}

func (n *ynode) boolean(key string) bool {
	v := n.str(key)
	return v == "true" || v == "yes"
}

// strMap returns the scalar children of n as a map.
func (n *ynode) strMap() map[string]string {
	if n == nil || len(n.kids) == 0 {
		return nil
	}
	m := make(map[string]string, len(n.kids))
	for _, k := range n.kids {
		if k.scalar {
			m[k.key] = k.value
		}
	}
	return m
}

// list returns the scalar items of a block or flow sequence, or of a single scalar.
func (n *ynode) list() []string {
	if n == nil {
		return nil
	}
	if n.scalar {
		if n.value == "" {
			return nil
		}
		return []string{n.value}
	}
	var out []string
	for _, k := range n.kids {
		if k.key == "-" && k.scalar {
			out = append(out, k.value)
		}
	}
	return out
}

const maxFlowDepth = 64

// parseYAMLish parses data into a root node whose kids are the top-level keys.
// A separator ": " (or a trailing ':') is YAML; a key followed by a space and a
// value without a colon is yarn classic.
func parseYAMLish(path string, data []byte) (*ynode, error) {
	root := &ynode{}
	type frame struct {
		indent int
		node   *ynode
	}
	stack := []frame{{-1, root}}
	if n := bytes.Count(data, []byte{'\n'}); n >= maxYAMLNodes {
		return nil, tooMany(path, "lines", maxYAMLNodes)
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		raw := strings.TrimRight(lines[i], "\r")
		content := strings.TrimLeft(raw, " \t")
		if content == "" || content[0] == '#' || content == "---" || content == "..." {
			continue
		}
		indent := len(raw) - len(content)
		item := content == "-" || strings.HasPrefix(content, "- ")
		for len(stack) > 1 {
			top := stack[len(stack)-1]
			// A sequence may sit at the same indentation as the key that owns it.
			if top.indent < indent || item && top.indent == indent && top.node.key != "-" && !top.node.scalar && len(top.node.kids) == top.node.items {
				break
			}
			stack = stack[:len(stack)-1]
		}
		parent := stack[len(stack)-1].node
		node := &ynode{line: lineNo}
		var rest string
		if item {
			node.key = "-"
			rest = strings.TrimLeft(content[1:], " ")
			// "- key: value" starts a mapping inside the item.
			if k, v, ok := splitPlainKey(rest); ok && !strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, "\"") && !strings.HasPrefix(rest, "'") {
				inner := &ynode{key: k, line: lineNo}
				if err := setValue(path, inner, v, lineNo, lines, &i, indent+2); err != nil {
					return nil, err
				}
				node.add(inner)
				parent.add(node)
				stack = append(stack, frame{indent, node})
				continue
			}
			if rest == "" {
				parent.add(node)
				stack = append(stack, frame{indent, node})
				continue
			}
			if err := setValue(path, node, rest, lineNo, lines, &i, indent); err != nil {
				return nil, err
			}
			parent.add(node)
			stack = append(stack, frame{indent, node})
			continue
		}
		if parent == root && len(root.kids) >= maxEntries {
			return nil, tooMany(path, "top-level entries", maxEntries)
		}
		key, after, err := readKey(content)
		if err != nil {
			return nil, &ParseError{Path: path, Line: lineNo, Err: err}
		}
		node.key = key
		if err := setValue(path, node, after, lineNo, lines, &i, indent); err != nil {
			return nil, err
		}
		parent.add(node)
		stack = append(stack, frame{indent, node})
	}
	return root, nil
}

// readKey splits a mapping line into its key and the text after the separator.
func readKey(content string) (string, string, error) {
	if content[0] == '"' || content[0] == '\'' {
		// A quoted key, or yarn classic's comma-separated list of quoted keys
		// ("a@^1", "a@^1.2":), which is kept whole as written.
		if strings.HasSuffix(content, ":") && strings.Contains(content, ", ") {
			return content[:len(content)-1], "", nil
		}
		k, n, err := unquote(content)
		if err != nil {
			return "", "", err
		}
		rest := content[n:]
		if strings.HasPrefix(rest, ":") {
			return k, strings.TrimLeft(rest[1:], " \t"), nil
		}
		return k, strings.TrimLeft(rest, " \t"), nil
	}
	if k, v, ok := splitPlainKey(content); ok {
		return k, v, nil
	}
	if strings.HasSuffix(content, ":") {
		// yarn classic: a, b: lists several unquoted specs
		return content[:len(content)-1], "", nil
	}
	if i := strings.IndexByte(content, ' '); i > 0 {
		// yarn classic: key value
		return content[:i], strings.TrimLeft(content[i+1:], " \t"), nil
	}
	return content, "", nil
}

// splitPlainKey splits "key: value" or "key:" where key is a plain scalar.
func splitPlainKey(content string) (string, string, bool) {
	for i := 0; i < len(content); i++ {
		switch content[i] {
		case ' ', '\t':
			return "", "", false
		case ':':
			if i == len(content)-1 {
				return content[:i], "", true
			}
			if content[i+1] == ' ' || content[i+1] == '\t' {
				return content[:i], strings.TrimLeft(content[i+1:], " \t"), true
			}
		}
	}
	return "", "", false
}

// setValue parses the inline value of node. Flow collections may continue on
// the following lines, and block scalars take the more indented lines below.
func setValue(path string, node *ynode, v string, lineNo int, lines []string, i *int, indent int) error {
	if v == "" {
		return nil
	}
	switch v[0] {
	case '"', '\'':
		s, _, err := unquote(v)
		if err != nil {
			return &ParseError{Path: path, Line: lineNo, Err: err}
		}
		node.value, node.scalar = s, true
	case '{', '[':
		var fb flowBalance
		fb.feed(v)
		text := v
		if !fb.done() {
			var b strings.Builder
			b.WriteString(v)
			for !fb.done() && *i+1 < len(lines) && b.Len() < 1<<20 {
				*i++
				next := strings.TrimSpace(strings.TrimRight(lines[*i], "\r"))
				fb.feed(" " + next)
				b.WriteByte(' ')
				b.WriteString(next)
			}
			text = b.String()
		}
		kids, _, err := parseFlow(text, 0)
		if err != nil {
			return &ParseError{Path: path, Line: lineNo, Err: err}
		}
		node.kids = kids
	case '|', '>':
		var b strings.Builder
		for *i+1 < len(lines) {
			next := strings.TrimRight(lines[*i+1], "\r")
			trimmed := strings.TrimLeft(next, " ")
			if trimmed != "" && len(next)-len(trimmed) <= indent {
				break
			}
			*i++
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(trimmed)
		}
		node.value, node.scalar = b.String(), true
	default:
		if j := strings.Index(v, " #"); j >= 0 {
			v = v[:j]
		}
		node.value, node.scalar = strings.TrimRight(v, " \t"), true
	}
	return nil
}

// unquote reads a quoted scalar at the start of s and returns it and the bytes consumed.
func unquote(s string) (string, int, error) {
	q := s[0]
	if q == '\'' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				return b.String(), i + 1, nil
			}
			b.WriteByte(s[i])
		}
		return "", 0, fmt.Errorf("unterminated quoted string")
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			v, err := strconv.Unquote(s[:i+1])
			if err != nil {
				// YAML escapes Go does not know (\e, \N, ...): keep the text as written.
				v = s[1:i]
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted string")
}

// flowBalance tracks brackets and quotes of a flow collection fed piece by piece.
type flowBalance struct {
	depth  int
	quote  byte
	escape bool
}

func (f *flowBalance) feed(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case f.escape:
			f.escape = false
		case f.quote != 0:
			if c == '\\' && f.quote == '"' {
				f.escape = true
			} else if c == f.quote {
				f.quote = 0
			}
		case c == '"' || c == '\'':
			f.quote = c
		case c == '{' || c == '[':
			f.depth++
		case c == '}' || c == ']':
			f.depth--
		}
	}
}

func (f *flowBalance) done() bool { return f.depth <= 0 && f.quote == 0 }

// parseFlow parses a flow mapping or sequence at the start of s.
func parseFlow(s string, depth int) ([]*ynode, int, error) {
	if depth > maxFlowDepth {
		return nil, 0, fmt.Errorf("flow collection nested too deeply")
	}
	open := s[0]
	closeCh := byte('}')
	if open == '[' {
		closeCh = ']'
	}
	var kids []*ynode
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return nil, 0, fmt.Errorf("unterminated flow collection")
		}
		if s[i] == closeCh {
			return kids, i + 1, nil
		}
		n := &ynode{}
		if open == '{' {
			// key
			if s[i] == '"' || s[i] == '\'' {
				k, c, err := unquote(s[i:])
				if err != nil {
					return nil, 0, err
				}
				n.key = k
				i += c
			} else {
				j := i
				for j < len(s) && s[j] != ',' && s[j] != closeCh && !(s[j] == ':' && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == ',' || s[j+1] == closeCh)) {
					j++
				}
				n.key = strings.TrimSpace(s[i:j])
				i = j
			}
			for i < len(s) && s[i] == ' ' {
				i++
			}
			if i < len(s) && s[i] == ':' {
				i++
			}
		} else {
			n.key = "-"
		}
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return nil, 0, fmt.Errorf("unterminated flow collection")
		}
		switch s[i] {
		case '"', '\'':
			v, c, err := unquote(s[i:])
			if err != nil {
				return nil, 0, err
			}
			n.value, n.scalar = v, true
			i += c
		case '{', '[':
			sub, c, err := parseFlow(s[i:], depth+1)
			if err != nil {
				return nil, 0, err
			}
			n.kids = sub
			i += c
		default:
			j := i
			for j < len(s) && s[j] != ',' && s[j] != closeCh {
				j++
			}
			n.value, n.scalar = strings.TrimSpace(s[i:j]), true
			i = j
		}
		kids = append(kids, n)
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) && s[i] == ',' {
			i++
		}
	}
}
