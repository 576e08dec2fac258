package main

import (
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session"
)

// `shadow apply --help` lists every protected path, from the list itself.
func TestApplyHelpListsProtectedPaths(t *testing.T) {
	c := newCLI(t)
	out := c.must(t.TempDir(), "apply", "--help")
	listed := map[string]bool{}
	for _, f := range strings.FieldsFunc(out, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' }) {
		listed[f] = true
	}
	for _, p := range session.ProtectedPaths {
		if !listed[p.Pattern] {
			t.Errorf("apply --help does not list %q:\n%s", p.Pattern, out)
		}
		if !strings.Contains(out, "  "+p.Group+":") {
			t.Errorf("apply --help has no group %q", p.Group)
		}
	}
	if !strings.Contains(out, "shaped like a git repository") {
		t.Errorf("apply --help does not mention git-shaped directories:\n%s", out)
	}
}
