package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFindingWireRoundTrip(t *testing.T) {
	f := Finding{Rule: RuleByID("FS002"), Result: Fail, Severity: Critical,
		Evidence: []Evidence{{Text: "~/.ssh/id_rsa is readable"}}}
	var buf bytes.Buffer
	if err := EncodeFinding(&buf, f); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("not one line: %q", buf.String())
	}
	got, err := DecodeFinding(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got.Rule != f.Rule || got.Result != Fail || got.Severity != Critical || len(got.Evidence) != 1 {
		t.Errorf("round trip = %+v", got)
	}
}

func TestDecodeFindingRefusesWhatTheJailMayNotSay(t *testing.T) {
	for name, line := range map[string]string{
		"unknown rule": `{"id":"XYZ999","result":"pass"}`,
		"dep rule":     `{"id":"DEP003","result":"pass"}`,
		"bad result":   `{"id":"ENV001","result":"fine"}`,
		"not json":     `ENV001 pass`,
	} {
		if _, err := DecodeFinding([]byte(line)); err == nil {
			t.Errorf("%s: accepted %s", name, line)
		}
	}
}

func TestVerifyInsideMissingRulesAreSkipped(t *testing.T) {
	start := func(ctx context.Context, args []string, stdout io.Writer) error {
		if strings.Join(args, " ") != strings.Join(InsideChildArgs, " ") {
			t.Errorf("args = %v", args)
		}
		EncodeFinding(stdout, Finding{Rule: RuleByID("ENV003"), Result: Pass, Severity: RuleByID("ENV003").Severity})
		return nil
	}
	var streamed []string
	rep, err := VerifyInside(context.Background(), ProfileUntrusted, start, func(f Finding) { streamed = append(streamed, f.Rule.ID) })
	if err != nil {
		t.Fatal(err)
	}
	var inside int
	for _, r := range Catalog() {
		if r.Domain != DomainDep {
			inside++
		}
	}
	if len(rep.Findings) != inside || len(streamed) != inside {
		t.Fatalf("%d findings, %d streamed, want %d", len(rep.Findings), len(streamed), inside)
	}
	if f, _ := rep.Finding("ENV003"); f.Result != Pass {
		t.Errorf("ENV003 = %v", f.Result)
	}
	if f, _ := rep.Finding("ENV004"); f.Result != Skipped || f.SkipReason == "" {
		t.Errorf("unreported ENV004 = %v (%q), want skipped", f.Result, f.SkipReason)
	}
	if !rep.Verdict().Blocked {
		t.Error("skips under untrusted did not block")
	}
}

func TestVerifyInsideJailFailure(t *testing.T) {
	start := func(ctx context.Context, args []string, stdout io.Writer) error {
		return errors.New("cannot build the jail: mount overlay")
	}
	rep, err := VerifyInside(context.Background(), ProfileDependency, start, nil)
	if err == nil {
		t.Fatal("no error")
	}
	f, _ := rep.Finding("ENV001")
	if f.Result != Skipped || !strings.Contains(f.SkipReason, "mount overlay") {
		t.Errorf("ENV001 = %v %q", f.Result, f.SkipReason)
	}
}
