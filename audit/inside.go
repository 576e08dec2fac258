package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// InsideDomains are the rules `verify --inside` evaluates inside a fresh jail: the environment
// the agent will really run in. The DEP rules read the project and run on the host.
var InsideDomains = []Domain{DomainEnv, DomainFS, DomainNet}

// InsideChildArgs are the arguments, after the shadow binary, that make shadow evaluate the
// inside rules and stream each finding to stdout as one JSON line (see EncodeFinding).
var InsideChildArgs = []string{"verify", "--inside-child"}

// findingWire is a finding as it crosses the jail boundary: the rule travels by ID and is looked
// up again on the host, so a jailed process cannot invent a rule or change what blocks.
type findingWire struct {
	ID         string     `json:"id"`
	Result     Result     `json:"result"`
	Severity   Severity   `json:"severity"`
	Evidence   []Evidence `json:"evidence,omitempty"`
	SkipReason string     `json:"skipReason,omitempty"`
}

// EncodeFinding writes f as one JSON line.
func EncodeFinding(w io.Writer, f Finding) error {
	b, err := json.Marshal(findingWire{ID: f.Rule.ID, Result: f.Result, Severity: f.Severity,
		Evidence: f.Evidence, SkipReason: f.SkipReason})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// DecodeFinding reads one line written by EncodeFinding. Only rules of the inside domains are
// accepted.
func DecodeFinding(line []byte) (Finding, error) { return decodeFinding(line, insideRule) }

// insideRule reports whether r is evaluated inside the jail.
func insideRule(r *Rule) bool { return slices.Contains(InsideDomains, r.Domain) }

// streamFindings runs start with args, its stdout a pipe of EncodeFinding lines, and passes each
// finding of a rule allowed accepts to emit as it arrives. It returns start's error and the
// lines that could not be decoded.
func streamFindings(ctx context.Context, start func(ctx context.Context, args []string, stdout io.Writer) error,
	args []string, allowed func(*Rule) bool, emit func(Finding)) (runErr, decodeErr error) {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := start(ctx, args, pw)
		pw.Close()
		errc <- err
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f, err := decodeFinding([]byte(line), allowed)
		if err != nil {
			decodeErr = errors.Join(decodeErr, err)
			continue
		}
		emit(f)
	}
	if err := sc.Err(); err != nil {
		decodeErr = errors.Join(decodeErr, err)
	}
	pr.Close()
	return <-errc, decodeErr
}

// decodeFinding reads one EncodeFinding line, accepting only the rules allowed says yes to.
func decodeFinding(line []byte, allowed func(*Rule) bool) (Finding, error) {
	var fw findingWire
	if err := json.Unmarshal(line, &fw); err != nil {
		return Finding{}, fmt.Errorf("finding from the jail: %w", err)
	}
	r := RuleByID(fw.ID)
	if r == nil {
		return Finding{}, fmt.Errorf("finding from the jail: unknown rule %q", fw.ID)
	}
	if !allowed(r) {
		return Finding{}, fmt.Errorf("finding from the jail: rule %s is not evaluated there", fw.ID)
	}
	switch fw.Result {
	case Pass, Fail, Skipped:
	default:
		return Finding{}, fmt.Errorf("finding from the jail: rule %s: bad result %q", fw.ID, fw.Result)
	}
	if fw.Severity == 0 {
		fw.Severity = r.Severity
	}
	return Finding{Rule: r, Result: fw.Result, Severity: fw.Severity, Evidence: fw.Evidence, SkipReason: fw.SkipReason}, nil
}

// StreamInside is the jailed side of `verify --inside`: it evaluates the inside rules on the
// environment it runs in and writes each finding to w as soon as its check completes.
func StreamInside(ctx context.Context, w io.Writer) error {
	for f := range Run(ctx, Options{Env: LiveEnv(), Domains: InsideDomains}) {
		if err := EncodeFinding(w, f); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// VerifyInside runs the inside rules in a fresh jail and returns their report under profile.
// start runs shadow with the given arguments (InsideChildArgs) in a jail built with the run's
// policy, its stdout connected to the writer; it returns when the jailed process ends. Every rule
// the jail did not report is a skip (never a pass), so a broken jail cannot look clean.
func VerifyInside(ctx context.Context, profile Profile, start func(ctx context.Context, args []string, stdout io.Writer) error, onFinding func(Finding)) (Report, error) {
	if profile == "" {
		profile = DefaultProfile
	}
	rep := Report{Profile: profile, RuleSetVersion: RuleSetVersion, Domains: InsideDomains, Started: time.Now()}
	got := map[string]Finding{}
	runErr, decodeErr := streamFindings(ctx, start, InsideChildArgs, insideRule, func(f Finding) {
		if _, dup := got[f.Rule.ID]; dup {
			return
		}
		got[f.Rule.ID] = f
		if onFinding != nil {
			onFinding(f)
		}
	})
	for _, r := range Catalog() {
		if !insideRule(r) {
			continue
		}
		f, ok := got[r.ID]
		if !ok {
			reason := "the jail did not report this rule"
			if runErr != nil {
				reason = "the in-jail verification failed: " + runErr.Error()
			}
			f = Finding{Rule: r, Result: Skipped, Severity: r.Severity, SkipReason: reason}
			if onFinding != nil {
				onFinding(f)
			}
		}
		rep.Findings = append(rep.Findings, f)
	}
	rep.Duration = time.Since(rep.Started)
	if runErr != nil {
		return rep, fmt.Errorf("verify inside the jail: %w", runErr)
	}
	return rep, decodeErr
}
