// Package audit is shadow's preflight: 38 rules in four domains (environment,
// filesystem, network, dependencies) evaluated against a trust profile.
//
// A rule that cannot be checked is skipped with the reason, and a skip is never
// a pass: under the untrusted profile a skipped blocking rule blocks, and under
// the others it turns the verdict into a warning and the attestation result into
// WARNED. Uncertainty is never converted into permission.
package audit

import (
	"fmt"
	"strings"
)

// RuleSetVersion identifies the rule catalog; it changes whenever a rule's
// meaning, severity or profile membership changes, and is recorded in reports
// and attestations.
const RuleSetVersion = "shadow-audit/1"

// Severity ranks how much harm a failed rule exposes.
type Severity int

// Severities from least to most serious.
const (
	Low Severity = iota + 1
	Medium
	High
	Critical
)

// String returns the lower-case name used in every output format.
func (s Severity) String() string {
	switch s {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	case Critical:
		return "critical"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// SecurityScore is the CVSS-like number GitHub code scanning reads from
// properties.security-severity (critical > 9.0, high 7.0-8.9, medium 4.0-6.9, low < 4.0).
func (s Severity) SecurityScore() string {
	switch s {
	case Critical:
		return "9.5"
	case High:
		return "8.0"
	case Medium:
		return "5.5"
	}
	return "3.0"
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	for _, v := range []Severity{Low, Medium, High, Critical} {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Domain is one of the four groups of rules.
type Domain string

// The four domains, in report order.
const (
	DomainEnv Domain = "env"
	DomainFS  Domain = "fs"
	DomainNet Domain = "net"
	DomainDep Domain = "dep"
)

// Domains lists every domain in report order.
var Domains = []Domain{DomainEnv, DomainFS, DomainNet, DomainDep}

// Title is the heading used for the domain in text and markdown reports.
func (d Domain) Title() string {
	switch d {
	case DomainEnv:
		return "Environment integrity"
	case DomainFS:
		return "Filesystem and credential exposure"
	case DomainNet:
		return "Network exposure"
	case DomainDep:
		return "Supply chain and build hooks"
	}
	return string(d)
}

// ParseDomains reads a comma-separated domain list ("env,fs,net"); empty means all.
func ParseDomains(s string) ([]Domain, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Domain
	for _, part := range strings.Split(s, ",") {
		d := Domain(strings.TrimSpace(strings.ToLower(part)))
		switch d {
		case DomainEnv, DomainFS, DomainNet, DomainDep:
			out = append(out, d)
		default:
			return nil, fmt.Errorf("unknown audit domain %q (want env, fs, net or dep)", part)
		}
	}
	return out, nil
}

// Result is the outcome of one rule.
type Result string

// The three outcomes. Skipped means the rule could not be checked; it is never a pass.
const (
	Pass    Result = "pass"
	Fail    Result = "fail"
	Skipped Result = "skipped"
)

// Profile is a trust level: how much the code about to run is trusted.
type Profile string

// The three profiles of SPEC §6.
const (
	// ProfileRepo is the developer's own code: only critical exposure blocks.
	ProfileRepo Profile = "repo"
	// ProfileDependency is installing third-party packages: critical findings and
	// the high findings marked Dependency in the catalog block.
	ProfileDependency Profile = "dependency"
	// ProfileUntrusted is an autonomous agent on unknown code: every high and
	// critical failure blocks, and so does every skipped rule that would block.
	ProfileUntrusted Profile = "untrusted"
)

// DefaultProfile is the profile used when --trust is not given.
const DefaultProfile = ProfileDependency

// ParseProfile reads a profile name; the empty string is the default profile.
func ParseProfile(s string) (Profile, error) {
	switch Profile(strings.ToLower(strings.TrimSpace(s))) {
	case "":
		return DefaultProfile, nil
	case ProfileRepo:
		return ProfileRepo, nil
	case ProfileDependency:
		return ProfileDependency, nil
	case ProfileUntrusted:
		return ProfileUntrusted, nil
	}
	return "", fmt.Errorf("unknown trust profile %q (want repo, dependency or untrusted)", s)
}

// Rank orders profiles from most trusting (0) to least (2), so a project file
// can be checked to only make the profile stricter.
func (p Profile) Rank() int {
	switch p {
	case ProfileRepo:
		return 0
	case ProfileDependency:
		return 1
	}
	return 2
}

// Rule is one audit rule of the catalog.
type Rule struct {
	ID       string
	Title    string
	Domain   Domain
	Severity Severity
	// Reads names what the rule looks at (files, variables), never secret contents.
	Reads string
	// Remedy says what to change so the rule passes.
	Remedy string
	// Dependency reports whether the dependency profile blocks on a failure of
	// this rule (critical rules always block; see Blocks).
	Dependency bool
	// Why explains the rule and its dependency-profile choice, for help text.
	Why string

	check checkFunc
}

// Blocks reports whether a failure of this rule at severity sev blocks under p.
// repo blocks only on critical; untrusted on high and critical; dependency on
// critical and on high rules marked Dependency.
func (r *Rule) Blocks(p Profile, sev Severity) bool {
	switch p {
	case ProfileRepo:
		return sev >= Critical
	case ProfileDependency:
		return sev >= Critical || (sev >= High && r.Dependency)
	default:
		return sev >= High
	}
}

// BlockingProfiles lists the profiles that block on a failure of the rule at its
// catalog severity.
func (r *Rule) BlockingProfiles() []Profile {
	var out []Profile
	for _, p := range []Profile{ProfileRepo, ProfileDependency, ProfileUntrusted} {
		if r.Blocks(p, r.Severity) {
			out = append(out, p)
		}
	}
	return out
}

// Evidence is one line of what a rule saw, optionally tied to a file and line.
// File is relative to the project root for project files, absolute otherwise.
type Evidence struct {
	Text string `json:"text"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// String renders the evidence as "file:line: text".
func (e Evidence) String() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Text)
	case e.File != "":
		return e.File + ": " + e.Text
	}
	return e.Text
}

// Finding is the outcome of one rule in one audit.
type Finding struct {
	Rule *Rule
	// Result is pass, fail or skipped.
	Result Result
	// Severity is the effective severity: the rule's, or lower when the rule
	// found a mitigated form (uid 0 without capabilities), or higher for a worse
	// form (a metadata route, a lockfile entry over plain http).
	Severity Severity
	Evidence []Evidence
	// SkipReason says why a skipped rule could not be checked.
	SkipReason string
}

// Blocks reports whether this finding blocks under p: a failure of a blocking
// rule, or under untrusted a skip of a rule that would block if it failed.
func (f Finding) Blocks(p Profile) bool {
	switch f.Result {
	case Fail:
		return f.Rule.Blocks(p, f.Severity)
	case Skipped:
		return p == ProfileUntrusted && f.Rule.Blocks(p, f.Rule.Severity)
	}
	return false
}
