package audit

import (
	"io"
	"time"

	"github.com/shadow-sandbox/shadow/internal/jsonout"
)

// JSONSchemaVersion is the version of the JSON report schema (SCHEMA.md). It
// changes only when a field is removed or changes meaning; fields may be added.
const JSONSchemaVersion = 1

// JSONReport is the stable JSON form of a report (shadow verify --format json):
//
//	{
//	  "schemaVersion": 1,
//	  "tool": {"name": "shadow", "ruleSetVersion": "shadow-audit/1"},
//	  "profile": "repo" | "dependency" | "untrusted",
//	  "project": "/abs/path",
//	  "domains": ["env", "fs", "net", "dep"],
//	  "verdict": "allowed" | "blocked",
//	  "warned": bool,
//	  "result": "PASSED" | "WARNED" | "FAILED",
//	  "blocking": ["RULE", ...],
//	  "counts": {"pass": n, "fail": n, "skipped": n},
//	  "startedAt": RFC 3339, "durationMs": n,
//	  "findings": [{"id", "title", "domain", "severity", "ruleSeverity", "result",
//	                "blocks", "evidence": [{"text", "file"?, "line"?}],
//	                "skipReason"?, "reads", "remedy", "blockingProfiles"}]
//	}
//
// Findings are in catalog order; every selected rule appears exactly once.
type JSONReport struct {
	SchemaVersion int           `json:"schemaVersion"`
	Tool          JSONTool      `json:"tool"`
	Profile       Profile       `json:"profile"`
	Project       string        `json:"project"`
	Domains       []Domain      `json:"domains"`
	Verdict       string        `json:"verdict"`
	Warned        bool          `json:"warned"`
	Result        string        `json:"result"`
	Blocking      []string      `json:"blocking"`
	Counts        JSONCounts    `json:"counts"`
	StartedAt     time.Time     `json:"startedAt"`
	DurationMs    int64         `json:"durationMs"`
	Findings      []JSONFinding `json:"findings"`
}

// JSONTool names the producer of a JSON report.
type JSONTool struct {
	Name           string `json:"name"`
	RuleSetVersion string `json:"ruleSetVersion"`
}

// JSONCounts counts findings by result.
type JSONCounts struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
}

// JSONFinding is one rule's outcome in the JSON report.
type JSONFinding struct {
	ID               string     `json:"id"`
	Title            string     `json:"title"`
	Domain           Domain     `json:"domain"`
	Severity         Severity   `json:"severity"`
	RuleSeverity     Severity   `json:"ruleSeverity"`
	Result           Result     `json:"result"`
	Blocks           bool       `json:"blocks"`
	Evidence         []Evidence `json:"evidence"`
	SkipReason       string     `json:"skipReason,omitempty"`
	Reads            string     `json:"reads"`
	Remedy           string     `json:"remedy"`
	BlockingProfiles []Profile  `json:"blockingProfiles"`
}

// JSON returns the report in its stable JSON form.
func (r Report) JSON() JSONReport {
	v := r.Verdict()
	domains := r.Domains
	if len(domains) == 0 {
		domains = Domains
	}
	out := JSONReport{
		SchemaVersion: JSONSchemaVersion,
		Tool:          JSONTool{Name: "shadow", RuleSetVersion: r.RuleSetVersion},
		Profile:       r.Profile,
		Project:       r.Project,
		Domains:       domains,
		Verdict:       v.Decision(),
		Warned:        v.Warned,
		Result:        v.Result(),
		Blocking:      append([]string{}, v.Blocking...),
		Counts:        JSONCounts{Pass: v.Passed, Fail: v.Failed, Skipped: v.Skipped},
		StartedAt:     r.Started,
		DurationMs:    r.Duration.Milliseconds(),
		Findings:      []JSONFinding{},
	}
	for _, f := range r.Findings {
		ev := f.Evidence
		if ev == nil {
			ev = []Evidence{}
		}
		out.Findings = append(out.Findings, JSONFinding{
			ID: f.Rule.ID, Title: f.Rule.Title, Domain: f.Rule.Domain, Severity: f.Severity,
			RuleSeverity: f.Rule.Severity, Result: f.Result, Blocks: f.Blocks(r.Profile), Evidence: ev,
			SkipReason: f.SkipReason, Reads: f.Rule.Reads, Remedy: f.Rule.Remedy,
			BlockingProfiles: f.Rule.BlockingProfiles(),
		})
	}
	return out
}

// WriteJSON writes the report as indented JSON (schema: JSONReport, SCHEMA.md).
func (r Report) WriteJSON(w io.Writer) error {
	return jsonout.NewEncoder(w).Encode(r.JSON())
}
