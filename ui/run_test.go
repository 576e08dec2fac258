package ui

import (
	"os"
	"testing"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/doctor"
)

func TestSessionStats(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": "a\n"})
	ts.stage(t, map[string]string{"a.txt": "A\n", "b/c.txt": "c\n", "b/d.txt": "d\n"})
	if err := os.WriteFile(ts.s.NetLog(), []byte("{\"host\":\"a\"}\n{\"host\":\"b\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := SessionStats(ts.s)(); got != (Stats{Files: 3, Requests: 2}) {
		t.Errorf("stats = %+v, want 3 files and 2 requests", got)
	}
}

func TestPolicyLayers(t *testing.T) {
	names := func(ls []Layer) map[string]bool {
		m := map[string]bool{}
		for _, l := range ls {
			m[l.Name] = l.On
		}
		return m
	}
	closed := names(PolicyLayers(sandbox.Policy{}))
	for _, n := range []string{"userns", "netns", "overlay", "seccomp"} {
		if !closed[n] {
			t.Errorf("layer %s missing or off in %v", n, closed)
		}
	}
	open := names(PolicyLayers(sandbox.Policy{AllowNetwork: true}))
	if on, ok := open["netns+internet"]; !ok || on {
		t.Errorf("--allow-network is not shown as a weakened layer: %v", open)
	}
}

func TestFindingsFromChecksAndRules(t *testing.T) {
	f := hostFinding(doctor.Check{Name: "overlay in user namespace", Status: doctor.StatusMissing, Required: true, Remedy: "sysctl x"})
	if f.Result != audit.Fail || !f.Blocks || f.Remedy != "sysctl x" {
		t.Errorf("a missing required check: %+v", f)
	}
	f = hostFinding(doctor.Check{Name: "pasta", Status: doctor.StatusDegraded})
	if f.Result != audit.Skipped || f.Blocks {
		t.Errorf("a degraded check: %+v", f)
	}
	var rule *audit.Rule
	for _, r := range audit.Catalog() {
		if r.Severity == audit.Critical {
			rule = r
			break
		}
	}
	af := audit.Finding{Rule: rule, Result: audit.Fail, Severity: audit.Critical, Evidence: []audit.Evidence{{Text: "seen", File: "package.json", Line: 3}}}
	uf := auditFinding(StageProject, af, audit.ProfileRepo)
	if !uf.Blocks || uf.ID != rule.ID || len(uf.Evidence) != 1 || uf.Evidence[0] != "package.json:3: seen" {
		t.Errorf("a critical failure under repo: %+v", uf)
	}
	skipped := auditFinding(StageJail, audit.Finding{Rule: rule, Result: audit.Skipped, SkipReason: "unreadable"}, audit.ProfileUntrusted)
	if !skipped.Blocks || skipped.Evidence[len(skipped.Evidence)-1] != "skipped: unreadable" {
		t.Errorf("a skip under untrusted: %+v", skipped)
	}
}
