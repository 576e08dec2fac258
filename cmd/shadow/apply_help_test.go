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
	if !strings.Contains(out, "every other dot-file or dot-directory") || !strings.Contains(out, "`unprotected`") {
		t.Errorf("apply --help does not state the dot-file rule and its key:\n%s", out)
	}
}

// --max-upper-bytes' help says what the jail does at the limit: the run's
// layer is a tmpfs of that size, so writes past it fail and the run goes
// on (sandbox.Policy.MaxUpperBytes), for run and tui alike.
func TestMaxUpperBytesHelpSaysWritesFail(t *testing.T) {
	c := newCLI(t)
	for _, cmd := range []string{"run", "tui"} {
		out := c.must(t.TempDir(), cmd, "--help")
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "--max-upper-bytes") {
				line = l
			}
		}
		if !strings.Contains(line, "ENOSPC") || !strings.Contains(line, "kernel") || strings.Contains(line, "stop the run") {
			t.Errorf("%s --help says of --max-upper-bytes: %q", cmd, strings.TrimSpace(line))
		}
	}
}
