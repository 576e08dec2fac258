package audit

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is a completed audit: the findings in catalog order and what they
// mean under the profile.
type Report struct {
	Profile        Profile
	RuleSetVersion string
	// Project is the absolute project root the DEP rules read.
	Project  string
	Domains  []Domain
	Findings []Finding
	Started  time.Time
	Duration time.Duration

	// manifests are the manifests and lockfiles the audit found (nil when the
	// DEP rules did not run); the attestation digests them.
	manifests []string
}

// Verdict summarises a report under its profile.
type Verdict struct {
	// Blocked is true when any finding blocks under the profile (exit 3).
	Blocked bool
	// Warned is true when anything was skipped, or failed without blocking.
	Warned bool
	// Blocking lists the rule IDs that block, in catalog order.
	Blocking                []string
	Passed, Failed, Skipped int
}

// Verdict evaluates the findings under the report's profile.
func (r Report) Verdict() Verdict {
	var v Verdict
	for _, f := range r.Findings {
		switch f.Result {
		case Pass:
			v.Passed++
		case Fail:
			v.Failed++
		case Skipped:
			v.Skipped++
		}
		if f.Blocks(r.Profile) {
			v.Blocked = true
			v.Blocking = append(v.Blocking, f.Rule.ID)
		}
	}
	v.Warned = v.Skipped > 0 || (!v.Blocked && v.Failed > 0)
	return v
}

// Allowed reports whether the profile lets the command run.
func (r Report) Allowed() bool { return !r.Verdict().Blocked }

// Decision is "allowed" or "blocked".
func (v Verdict) Decision() string {
	if v.Blocked {
		return "blocked"
	}
	return "allowed"
}

// Result is the attestation result: PASSED only when nothing failed and nothing
// was skipped, FAILED when the profile blocks, WARNED otherwise.
func (v Verdict) Result() string {
	switch {
	case v.Blocked:
		return "FAILED"
	case v.Failed > 0 || v.Skipped > 0:
		return "WARNED"
	}
	return "PASSED"
}

// Finding returns the finding for a rule ID and whether the audit ran it.
func (r Report) Finding(id string) (Finding, bool) {
	for _, f := range r.Findings {
		if f.Rule.ID == id {
			return f, true
		}
	}
	return Finding{}, false
}

// Format is an output format of Report.Write.
type Format string

// The output formats of shadow verify --format.
const (
	FormatText     Format = "text"
	FormatJSON     Format = "json"
	FormatSARIF    Format = "sarif"
	FormatMarkdown Format = "markdown"
)

// ParseFormat reads a --format value; empty means text.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatText:
		return FormatText, nil
	case FormatJSON, FormatSARIF, FormatMarkdown:
		return Format(s), nil
	case "md":
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("unknown report format %q (want text, json, sarif or markdown)", s)
}

// WriteOptions tunes Report.Write.
type WriteOptions struct {
	// Color adds ANSI colours to the text format (on a terminal).
	Color bool
}

// Write renders the report in the given format.
func (r Report) Write(format Format, w io.Writer, o WriteOptions) error {
	switch format {
	case "", FormatText:
		return r.WriteText(w, o.Color)
	case FormatJSON:
		return r.WriteJSON(w)
	case FormatSARIF:
		return r.WriteSARIF(w)
	case FormatMarkdown:
		return r.WriteMarkdown(w)
	}
	return fmt.Errorf("write report: unknown format %q", format)
}

// WriteRulesDoc writes the rule catalog as markdown (audit/RULES.md, the
// target of every rule's helpUri).
func WriteRulesDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# shadow audit rules\n\nGenerated from the catalog in `audit/catalog.go` (rule set `" + RuleSetVersion + "`); `go test ./audit -run TestRulesDoc -args -update` refreshes it.\n\n")
	b.WriteString("A rule's result is pass, fail (with evidence) or skipped (with the reason it could not be checked). A skip is never a pass.\n")
	for _, d := range Domains {
		b.WriteString("\n## " + d.Title() + "\n")
		for _, r := range Catalog() {
			if r.Domain != d {
				continue
			}
			var blocks []string
			for _, p := range r.BlockingProfiles() {
				blocks = append(blocks, string(p))
			}
			fmt.Fprintf(&b, "\n<a id=\"%s\"></a>\n### %s — %s\n\n", strings.ToLower(r.ID), r.ID, r.Title)
			fmt.Fprintf(&b, "- Severity: %s\n- Blocks: %s\n- Reads: %s\n- Why: %s\n- Remedy: %s\n", r.Severity, strings.Join(blocks, ", "), r.Reads, r.Why, r.Remedy)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ExitCode is the process exit code of shadow verify/exec for the verdict:
// 0 allowed, 3 blocked (SPEC §1).
func (v Verdict) ExitCode() int {
	if v.Blocked {
		return 3
	}
	return 0
}

// Merge combines reports of disjoint domains (the host's DEP audit and the
// in-jail ENV/FS/NET audit of `run --trust`) into one report under profile,
// findings in catalog order. A rule reported twice keeps the first report's
// finding. Project and start time come from the first report.
func Merge(profile Profile, reports ...Report) Report {
	out := Report{Profile: profile, RuleSetVersion: RuleSetVersion}
	got := map[string]Finding{}
	seenDomain := map[Domain]bool{}
	for i, r := range reports {
		if i == 0 {
			out.Project, out.Started = r.Project, r.Started
		}
		out.Duration += r.Duration
		if out.manifests == nil {
			out.manifests = r.manifests
		}
		for _, f := range r.Findings {
			if _, dup := got[f.Rule.ID]; !dup {
				got[f.Rule.ID] = f
			}
			seenDomain[f.Rule.Domain] = true
		}
	}
	for _, rule := range Catalog() {
		if f, ok := got[rule.ID]; ok {
			out.Findings = append(out.Findings, f)
		}
	}
	for _, d := range Domains {
		if seenDomain[d] {
			out.Domains = append(out.Domains, d)
		}
	}
	return out
}
