package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// schemaValidator checks a JSON document against the subset of JSON Schema
// draft-04 that the SARIF 2.1.0 schema uses: type, properties, required,
// additionalProperties, items, minItems, uniqueItems, minimum, maximum,
// pattern, enum, anyOf, oneOf and local $ref. format and default are ignored.
type schemaValidator struct {
	root map[string]any
	errs []string
}

func (v *schemaValidator) fail(path, format string, args ...any) {
	if len(v.errs) < 50 {
		v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
	}
}

func (v *schemaValidator) resolve(s map[string]any) map[string]any {
	for depth := 0; depth < 32; depth++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		if !strings.HasPrefix(ref, "#/") {
			v.fail("$ref", "non-local reference %s", ref)
			return map[string]any{}
		}
		var cur any = v.root
		for _, part := range strings.Split(ref[2:], "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				v.fail("$ref", "bad reference %s", ref)
				return map[string]any{}
			}
			cur = m[part]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			v.fail("$ref", "unresolved reference %s", ref)
			return map[string]any{}
		}
		s = next
	}
	return s
}

func jsonType(x any) string {
	switch t := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if t == math.Trunc(t) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeMatches(want any, got string) bool {
	check := func(w string) bool { return w == got || (w == "number" && got == "integer") }
	switch t := want.(type) {
	case string:
		return check(t)
	case []any:
		for _, w := range t {
			if s, ok := w.(string); ok && check(s) {
				return true
			}
		}
	}
	return false
}

// valid reports whether x matches s without recording errors.
func (v *schemaValidator) valid(x any, s map[string]any) bool {
	sub := &schemaValidator{root: v.root}
	sub.check("", x, s)
	return len(sub.errs) == 0
}

func (v *schemaValidator) check(path string, x any, s map[string]any) {
	s = v.resolve(s)
	if t, ok := s["type"]; ok && !typeMatches(t, jsonType(x)) {
		v.fail(path, "type %s, want %v", jsonType(x), t)
		return
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, c := range e {
			if reflect.DeepEqual(c, x) {
				found = true
			}
		}
		if !found {
			v.fail(path, "%v not in enum %v", x, e)
		}
	}
	if a, ok := s["anyOf"].([]any); ok {
		n := 0
		for _, alt := range a {
			if m, ok := alt.(map[string]any); ok && v.valid(x, m) {
				n++
			}
		}
		if n == 0 {
			v.fail(path, "matches none of anyOf")
		}
	}
	if a, ok := s["oneOf"].([]any); ok {
		n := 0
		for _, alt := range a {
			if m, ok := alt.(map[string]any); ok && v.valid(x, m) {
				n++
			}
		}
		if n != 1 {
			v.fail(path, "matches %d of oneOf", n)
		}
	}
	switch t := x.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := t[r]; !ok {
				v.fail(path, "missing required %q", r)
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				v.check(path+"/"+k, t[k], ps)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					v.fail(path, "additional property %q", k)
				}
			case map[string]any:
				v.check(path+"/"+k, t[k], ap)
			}
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && float64(len(t)) < m {
			v.fail(path, "%d items, want at least %v", len(t), m)
		}
		if u, ok := s["uniqueItems"].(bool); ok && u {
			for i := range t {
				for j := i + 1; j < len(t); j++ {
					if reflect.DeepEqual(t[i], t[j]) {
						v.fail(path, "items %d and %d are equal", i, j)
					}
				}
			}
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, e := range t {
				v.check(fmt.Sprintf("%s/%d", path, i), e, is)
			}
		}
	case string:
		if p, ok := s["pattern"].(string); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				v.fail(path, "schema pattern %q does not compile: %v", p, err)
			} else if !re.MatchString(t) {
				v.fail(path, "%q does not match %s", t, p)
			}
		}
	case float64:
		if m, ok := s["minimum"].(float64); ok && t < m {
			v.fail(path, "%v below minimum %v", t, m)
		}
		if m, ok := s["maximum"].(float64); ok && t > m {
			v.fail(path, "%v above maximum %v", t, m)
		}
	}
}

func asStrings(x any) []string {
	var out []string
	if a, ok := x.([]any); ok {
		for _, e := range a {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// loadSARIFSchema reads testdata/sarif-2.1.0-rtm.5.json: the OASIS SARIF
// 2.1.0 (rtm.5, the final 2.1.0) JSON schema, vendored from the npm package
// @microsoft/jest-sarif 1.0.0-beta.0 (MIT, lib/schemas/sarif-2.1.0-rtm.5.json).
func loadSARIFSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/sarif-2.1.0-rtm.5.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

func validateSARIF(t *testing.T, doc []byte) []string {
	t.Helper()
	var x any
	if err := json.Unmarshal(doc, &x); err != nil {
		t.Fatalf("SARIF is not JSON: %v", err)
	}
	v := &schemaValidator{root: loadSARIFSchema(t)}
	v.check("", x, v.root)
	return v.errs
}

// TestSchemaValidatorRejects proves the validator can fail: each broken log
// must be rejected by the vendored schema.
func TestSchemaValidatorRejects(t *testing.T) {
	bad := map[string]string{
		"wrong version":       `{"version":"2.0.0","runs":[]}`,
		"missing runs":        `{"version":"2.1.0"}`,
		"unknown top key":     `{"version":"2.1.0","runs":[],"extra":1}`,
		"driver without name": `{"version":"2.1.0","runs":[{"tool":{"driver":{}}}]}`,
		"bad level":           `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`,
		"startLine zero":      `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a"},"region":{"startLine":0}}}]}]}]}`,
	}
	for name, doc := range bad {
		if errs := validateSARIF(t, []byte(doc)); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	good := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"error"}]}]}`
	if errs := validateSARIF(t, []byte(good)); len(errs) != 0 {
		t.Errorf("minimal log rejected: %v", errs)
	}
}
