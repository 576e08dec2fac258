package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/shadow-sandbox/shadow/internal/jsonout"
)

// RulesDocURL is where each rule is documented; SARIF helpUri points at the
// rule's anchor in it.
const RulesDocURL = "https://github.com/shadow-sandbox/shadow/blob/main/audit/RULES.md"

// HelpURI returns the documentation link of a rule.
func (r *Rule) HelpURI() string { return RulesDocURL + "#" + strings.ToLower(r.ID) }

// SARIF 2.1.0 log, the subset shadow writes.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                   `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifactLoc `json:"originalUriBaseIds,omitempty"`
	Invocations        []sarifInvocation           `json:"invocations"`
	Results            []sarifResult               `json:"results"`
	Properties         map[string]any              `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	HelpURI              string         `json:"helpUri"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool   `json:"executionSuccessful"`
	StartTimeUTC        string `json:"startTimeUtc,omitempty"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Kind                string            `json:"kind"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLoc `json:"artifactLocation"`
	Region           *sarifRegion     `json:"region,omitempty"`
}

type sarifArtifactLoc struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// sarifLevel maps a severity to a SARIF level.
func sarifLevel(s Severity) string {
	switch s {
	case Critical, High:
		return "error"
	case Medium:
		return "warning"
	}
	return "note"
}

// ruleName turns a title into the PascalCase name SARIF viewers show.
func ruleName(title string) string {
	var b strings.Builder
	up := true
	for _, r := range title {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// WriteSARIF writes the report as a SARIF 2.1.0 log for GitHub code scanning:
// every catalog rule in tool.driver.rules, one result per failed rule and
// project file (repo-relative artifactLocation with startLine), one per
// failed rule without a file, and one "review" result per skipped rule.
// Passing rules have no result.
func (r Report) WriteSARIF(w io.Writer) error {
	v := r.Verdict()
	index := map[string]int{}
	driver := sarifDriver{Name: "shadow", InformationURI: "https://github.com/shadow-sandbox/shadow", Version: r.RuleSetVersion}
	for i, rule := range Catalog() {
		index[rule.ID] = i
		blocking := []string{}
		for _, p := range rule.BlockingProfiles() {
			blocking = append(blocking, string(p))
		}
		driver.Rules = append(driver.Rules, sarifRule{
			ID: rule.ID, Name: ruleName(rule.Title),
			ShortDescription:     sarifText{Text: rule.Title},
			FullDescription:      sarifText{Text: rule.Why},
			HelpURI:              rule.HelpURI(),
			Help:                 sarifText{Text: "Reads: " + rule.Reads + "\nRemedy: " + rule.Remedy, Markdown: "**Reads:** " + rule.Reads + "\n\n**Remedy:** " + rule.Remedy},
			DefaultConfiguration: sarifConfig{Level: sarifLevel(rule.Severity)},
			Properties: map[string]any{
				"tags":              []string{"security", "shadow-" + string(rule.Domain)},
				"security-severity": rule.Severity.SecurityScore(),
				"problem.severity":  map[Severity]string{Critical: "error", High: "error", Medium: "warning", Low: "recommendation"}[rule.Severity],
				"blockingProfiles":  blocking,
			},
		})
	}
	run := sarifRun{
		Tool:        sarifTool{Driver: driver},
		Invocations: []sarifInvocation{{ExecutionSuccessful: true}},
		Results:     []sarifResult{},
		Properties:  map[string]any{"profile": string(r.Profile), "verdict": v.Decision(), "result": v.Result()},
	}
	if !r.Started.IsZero() {
		run.Invocations[0].StartTimeUTC = r.Started.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if filepath.IsAbs(r.Project) {
		u := url.URL{Scheme: "file", Path: strings.TrimSuffix(filepath.ToSlash(r.Project), "/") + "/"}
		run.OriginalURIBaseIDs = map[string]sarifArtifactLoc{"%SRCROOT%": {URI: u.String()}}
	}
	for _, f := range r.Findings {
		switch f.Result {
		case Skipped:
			run.Results = append(run.Results, sarifResult{
				RuleID: f.Rule.ID, RuleIndex: index[f.Rule.ID], Kind: "review", Level: "warning",
				Message:             sarifText{Text: f.Rule.ID + " " + f.Rule.Title + " was not checked: " + f.SkipReason},
				Locations:           []sarifLocation{r.anchorLocation()},
				PartialFingerprints: map[string]string{"shadowFinding/v1": fingerprint(f.Rule.ID, "", "skipped")},
				Properties:          map[string]any{"result": "skipped", "blocks": f.Blocks(r.Profile)},
			})
		case Fail:
			for _, g := range groupByFile(f.Evidence) {
				res := sarifResult{
					RuleID: f.Rule.ID, RuleIndex: index[f.Rule.ID], Kind: "fail", Level: sarifLevel(f.Severity),
					Message:    sarifText{Text: f.Rule.Title + ": " + joinEvidence(g.ev)},
					Properties: map[string]any{"result": "fail", "severity": f.Severity.String(), "security-severity": f.Severity.SecurityScore(), "blocks": f.Blocks(r.Profile)},
				}
				var texts []string
				for _, e := range g.ev {
					texts = append(texts, e.Text)
				}
				res.PartialFingerprints = map[string]string{"shadowFinding/v1": fingerprint(f.Rule.ID, g.file, strings.Join(texts, "\n"))}
				// A file outside the project ($CARGO_HOME, a parent's .cargo) is
				// named in the message only: code scanning accepts repository paths.
				if g.file != "" && !filepath.IsAbs(g.file) {
					loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: artifactURI(g.file), URIBaseID: "%SRCROOT%"}}}
					if g.line > 0 {
						loc.PhysicalLocation.Region = &sarifRegion{StartLine: g.line}
					}
					if run.OriginalURIBaseIDs == nil {
						loc.PhysicalLocation.ArtifactLocation.URIBaseID = ""
					}
					res.Locations = []sarifLocation{loc}
				} else {
					res.Locations = []sarifLocation{r.anchorLocation()}
				}
				run.Results = append(run.Results, res)
			}
		}
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	return jsonout.NewEncoder(w).Encode(log)
}

// AnchorFile is where SARIF attaches findings that concern no file (the
// environment, a skipped rule): GitHub code scanning rejects a result without
// a location, and the project's shadow configuration is where policy is set.
const AnchorFile = ".shadow.toml"

// anchorLocation is the location of a finding without a file.
func (r Report) anchorLocation() sarifLocation {
	loc := sarifLocation{PhysicalLocation: sarifPhysical{
		ArtifactLocation: sarifArtifactLoc{URI: AnchorFile, URIBaseID: "%SRCROOT%"},
		Region:           &sarifRegion{StartLine: 1},
	}}
	if !filepath.IsAbs(r.Project) {
		loc.PhysicalLocation.ArtifactLocation.URIBaseID = ""
	}
	return loc
}

type evidenceGroup struct {
	file string
	line int
	ev   []Evidence
}

// groupByFile splits evidence into one group per file (first line kept) and
// one group for evidence without a file, in first-seen order.
func groupByFile(ev []Evidence) []evidenceGroup {
	var out []evidenceGroup
	idx := map[string]int{}
	for _, e := range ev {
		i, ok := idx[e.File]
		if !ok {
			i = len(out)
			idx[e.File] = i
			out = append(out, evidenceGroup{file: e.File, line: e.Line})
		}
		if out[i].line == 0 || (e.Line > 0 && e.Line < out[i].line) {
			out[i].line = e.Line
		}
		out[i].ev = append(out[i].ev, e)
	}
	if len(out) == 0 {
		out = append(out, evidenceGroup{})
	}
	return out
}

func joinEvidence(ev []Evidence) string {
	var parts []string
	for _, e := range ev {
		parts = append(parts, e.String())
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, "; ")
}

// artifactURI escapes a repo-relative path as a relative URI reference.
func artifactURI(rel string) string {
	u := url.URL{Path: filepath.ToSlash(rel)}
	return u.EscapedPath()
}

// fingerprint is stable across runs and line moves: rule, file and evidence text.
func fingerprint(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}
