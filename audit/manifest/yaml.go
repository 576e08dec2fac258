package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// ynode is one node of a parsed YAML document or yarn 1 lockfile, in the shape the parsers of
// this package read: a mapping's entries and a sequence's items (key "-") as kids, a scalar as a
// value, each with its line.
type ynode struct {
	key   string // "-" for a sequence item
	value string
	// scalar is set when the node has an inline value rather than children.
	scalar bool
	line   int
	kids   []*ynode
}

func (n *ynode) add(k *ynode) { n.kids = append(n.kids, k) }

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

const (
	// maxYAMLDepth bounds how deep a document's tree may nest (pnpm's lockfiles nest five deep).
	maxYAMLDepth = 64
	// maxYAMLMarks caps the node indicators of a YAML file (see yamlMarks): about 35 MB of a
	// real lockfile, and at most some 600 MB of the library's tree for a hostile one.
	maxYAMLMarks = 1 << 21
	// aliasAllowance is how many nodes aliases may add beyond the indicators of the file.
	aliasAllowance = 10_000
)

// parseYAML parses a YAML stream (pnpm-lock.yaml, a yarn 2+ yarn.lock, .yarnrc.yml) with
// go.yaml.in/yaml/v3, the same YAML the package managers read with js-yaml: aliases, merge keys,
// flow collections and scalars over several lines mean what they mean to pnpm and yarn. A
// stream of more than maxDocs documents is an error; of several, the last is the one returned
// (pnpm writes its own document before the lockfile's). So is a key twice in one mapping, which
// js-yaml refuses (pnpm) or takes the last of (yarn).
//
// Before the library builds its tree (150 bytes a node), the node indicators are counted, so no
// file within the size caps builds more than a few million nodes. An alias is copied where it is
// used, within a budget of the file's indicators and aliasAllowance more nodes, so a
// billion-laughs document is refused, not expanded (the library's own ratio check covers only
// decoding into Go values, not its node tree).
func parseYAML(path string, data []byte, maxDocs int) (root *ynode, err error) {
	marks := yamlMarks(data)
	if marks > maxYAMLMarks {
		return nil, tooMany(path, "YAML nodes", maxYAMLMarks)
	}
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, &ParseError{Path: path, Err: fmt.Errorf("yaml: %v", r)}
		}
	}()
	b := &yamlTree{path: path, budget: marks + aliasAllowance}
	root = &ynode{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 0; ; docs++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return root, nil
			}
			return nil, yamlError(path, err)
		}
		if docs == maxDocs {
			return nil, &ParseError{Path: path, Line: doc.Line, Err: fmt.Errorf("more than %d YAML documents", maxDocs)}
		}
		root = &ynode{}
		if len(doc.Content) > 0 {
			if err := b.fill(root, doc.Content[0], 0); err != nil {
				return nil, err
			}
		}
	}
}

// yamlMarks counts what can start a mapping entry or a sequence item: newlines, flow openers and
// separators, and the indicators "- ", "? " and ": " (or at the end of a line). A document has no
// more entries and items than that, and the library's tree about twice as many nodes.
func yamlMarks(data []byte) int {
	n := 0
	for i, c := range data {
		switch c {
		case '\n', ',', '[', '{':
			n++
		case '-', '?', ':':
			if i+1 == len(data) || data[i+1] == ' ' || data[i+1] == '\t' || data[i+1] == '\r' || data[i+1] == '\n' {
				n++
			}
		}
	}
	return n
}

// yamlTree turns the library's nodes into ynodes, counting them against budget.
type yamlTree struct {
	path   string
	budget int
}

func (b *yamlTree) fill(dst *ynode, n *yaml.Node, depth int) error {
	if err := b.spend(n); err != nil {
		return err
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if depth > maxYAMLDepth {
		return &ParseError{Path: b.path, Line: n.Line, Err: fmt.Errorf("nested more than %d deep (or an alias within itself)", maxYAMLDepth)}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		// "key:" with nothing after it is an empty node, as opposed to `key: ""`.
		if n.Tag != "!!null" || n.Value != "" {
			dst.value, dst.scalar = n.Value, true
		}
	case yaml.MappingNode:
		var merges []*yaml.Node
		keys := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				merges = append(merges, n.Content[i+1])
				continue
			}
			if keys[k.Value] {
				return &ParseError{Path: b.path, Line: k.Line, Err: fmt.Errorf("key %q twice in one mapping", k.Value)}
			}
			keys[k.Value] = true
			kid := &ynode{key: k.Value, line: k.Line}
			if err := b.child(dst, kid, n.Content[i+1], depth); err != nil {
				return err
			}
		}
		// "<<: *base" (or a list of them) adds the keys of base the mapping does not set itself.
		for _, m := range merges {
			if err := b.merge(dst, keys, m, depth); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if err := b.child(dst, &ynode{key: "-", line: item.Line}, item, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// merge adds to dst the entries of the mapping (or mappings, for a sequence) m whose keys dst
// lacks; keys holds dst's.
func (b *yamlTree) merge(dst *ynode, keys map[string]bool, m *yaml.Node, depth int) error {
	if err := b.spend(m); err != nil {
		return err
	}
	if m.Kind == yaml.AliasNode && m.Alias != nil {
		m = m.Alias
	}
	if depth > maxYAMLDepth {
		return &ParseError{Path: b.path, Line: m.Line, Err: fmt.Errorf("nested more than %d deep (or an alias within itself)", maxYAMLDepth)}
	}
	switch m.Kind {
	case yaml.SequenceNode:
		for _, item := range m.Content {
			if err := b.merge(dst, keys, item, depth+1); err != nil {
				return err
			}
		}
		return nil
	case yaml.MappingNode:
		from := &ynode{}
		if err := b.fill(from, m, depth+1); err != nil {
			return err
		}
		for _, k := range from.kids {
			if !keys[k.key] {
				keys[k.key] = true
				dst.add(k)
			}
		}
		return nil
	}
	return &ParseError{Path: b.path, Line: m.Line, Err: errors.New("a merge key (<<) takes a mapping or a list of mappings")}
}

// spend counts one node visited (made, or merged from) against the budget.
func (b *yamlTree) spend(n *yaml.Node) error {
	if b.budget--; b.budget < 0 {
		return &ParseError{Path: b.path, Line: n.Line, Err: fmt.Errorf("%w: aliases expand to more nodes than the file holds and %d more", ErrTooLarge, aliasAllowance)}
	}
	return nil
}

func (b *yamlTree) child(dst, kid *ynode, n *yaml.Node, depth int) error {
	if err := b.fill(kid, n, depth+1); err != nil {
		return err
	}
	dst.add(kid)
	return nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError is the library's error as a ParseError, with its line when it names one.
func yamlError(path string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ParseError{Path: path, Line: line, Err: errors.New(msg[len(m[0]):])}
	}
	return &ParseError{Path: path, Err: err}
}
