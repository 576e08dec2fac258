package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/jsonout"
)

// TestJSONOutputEscapesTerminalControls: a staged file named with every C1
// control, the bidirectional controls and the line and paragraph
// separators comes out of log --json and diff --json with none of them raw
// (a terminal acts on the C1 controls; the others reorder or break what is
// shown), and the JSON still names the file exactly.
func TestJSONOutputEscapesTerminalControls(t *testing.T) {
	var unsafe []rune
	for r := rune(0x7f); r <= 0x9f; r++ {
		unsafe = append(unsafe, r)
	}
	unsafe = append(unsafe, 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029)
	name := "n" + string(unsafe) + ".txt"
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	c.must(p, "run", "--", "sh", "-c", `echo x > "$1"`, "sh", name)

	for _, args := range [][]string{{"log", "--json"}, {"diff", "--json"}} {
		out := c.must(p, args...)
		for _, r := range unsafe {
			if strings.ContainsRune(out, r) {
				t.Errorf("shadow %s prints U+%04X raw", strings.Join(args, " "), r)
			}
		}
		if !jsonout.Unsafe(0x9b) {
			t.Fatal("jsonout lost the C1 controls")
		}
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("shadow %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(fmtJSON(v), name) {
			t.Errorf("shadow %s does not name the file:\n%s", strings.Join(args, " "), out)
		}
	}
}

// fmtJSON flattens a decoded JSON value into its strings, one a line.
func fmtJSON(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}
