package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// yarnLegacy is how yarn 2 and later tell a yarn 1 lockfile from YAML (@yarnpkg/parsers, syml):
// comment lines at the top, one of them "# yarn lockfile v1". Both yarns read such a file with
// yarn 1's own parser; every other yarn.lock is YAML.
var yarnLegacy = regexp.MustCompile(`(?i)\A(?:#.*\r?\n)*?#\s+yarn\s+lockfile\s+v1\r?\n`)

// parseYarnClassic reads a yarn 1 lockfile, which is not YAML: blocks by indentation, keys
// followed by ":" and a block, or by a space and a value ("version \"1.0.0\""), quoted strings,
// comments, and entry keys that list several specs ("a@^1", "a@^1.2":). It returns a root whose
// kids are the entries.
func parseYarnClassic(path string, data []byte) (*ynode, error) {
	if n := bytes.Count(data, []byte{'\n'}); n >= maxYAMLNodes {
		return nil, tooMany(path, "lines", maxYAMLNodes)
	}
	root := &ynode{}
	type frame struct {
		indent int
		node   *ynode
	}
	stack := []frame{{-1, root}}
	i := 0
	for raw := range strings.Lines(string(data)) {
		i++
		raw = strings.TrimRight(raw, "\r\n")
		content := strings.TrimLeft(raw, " \t")
		if content == "" || content[0] == '#' {
			continue
		}
		indent := len(raw) - len(content)
		for len(stack) > 1 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		parent := stack[len(stack)-1].node
		if parent == root && len(root.kids) >= maxEntries {
			return nil, tooMany(path, "top-level entries", maxEntries)
		}
		key, after, err := readKey(content)
		if err != nil {
			return nil, &ParseError{Path: path, Line: i, Err: err}
		}
		node := &ynode{key: key, line: i}
		if after != "" {
			if after[0] == '"' || after[0] == '\'' {
				v, _, err := unquote(after)
				if err != nil {
					return nil, &ParseError{Path: path, Line: i, Err: err}
				}
				node.value = v
			} else {
				if j := strings.Index(after, " #"); j >= 0 {
					after = after[:j]
				}
				node.value = strings.TrimRight(after, " \t")
			}
			node.scalar = true
		}
		parent.add(node)
		stack = append(stack, frame{indent, node})
	}
	return root, nil
}

// readKey splits a line into its key and the text after the separator.
func readKey(content string) (string, string, error) {
	if content[0] == '"' || content[0] == '\'' {
		// A quoted key, or a comma-separated list of quoted keys ("a@^1", "a@^1.2":), which is
		// kept whole as written.
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
		// a, b: lists several unquoted specs
		return content[:len(content)-1], "", nil
	}
	if i := strings.IndexByte(content, ' '); i > 0 {
		// key value
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

// unquote reads a quoted string at the start of s and returns it and the bytes consumed.
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
				// Escapes Go does not know (\e, \N, ...): keep the text as written.
				v = s[1:i]
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted string")
}
