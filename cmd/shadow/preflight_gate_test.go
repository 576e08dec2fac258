package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/ui"
)

// TestPreflightGateIsOne: `shadow run --trust` (gate) and the app's preflight (ui.AuditPreflight)
// decide alike on the same findings. Every trust profile meets, for every inside rule of the
// catalog, each result the jail can report for it (pass, skipped, failed at each severity; the
// other rules pass), and a jail that fails, that cannot be built, or that prints what is not a
// finding. Each decision is also the one the rule itself gives (Finding.Blocks), or a refusal
// when the preflight could not decide.
func TestPreflightGateIsOne(t *testing.T) {
	type outcome struct {
		name  string
		start func(ctx context.Context, args []string, w io.Writer) error
		want  func(p audit.Profile) string
	}
	passAllBut := func(f *audit.Finding) func(context.Context, []string, io.Writer) error {
		return func(_ context.Context, _ []string, w io.Writer) error {
			for _, r := range audit.Catalog() {
				if !slices.Contains(audit.InsideDomains, r.Domain) {
					continue
				}
				g := audit.Finding{Rule: r, Result: audit.Pass, Severity: r.Severity}
				if f != nil && f.Rule == r {
					g = *f
				}
				if err := audit.EncodeFinding(w, g); err != nil {
					return err
				}
			}
			return nil
		}
	}
	decided := func(f *audit.Finding) func(audit.Profile) string {
		return func(p audit.Profile) string {
			if f != nil && f.Blocks(p) {
				return "blocked"
			}
			return "allowed"
		}
	}
	refused := func(audit.Profile) string { return "refused" }
	outcomes := []outcome{{name: "every rule passes", start: passAllBut(nil), want: decided(nil)}}
	for _, r := range audit.Catalog() {
		if !slices.Contains(audit.InsideDomains, r.Domain) {
			continue
		}
		fs := []audit.Finding{{Rule: r, Result: audit.Skipped, Severity: r.Severity, SkipReason: "not here"}}
		for _, sev := range []audit.Severity{audit.Low, audit.Medium, audit.High, audit.Critical} {
			fs = append(fs, audit.Finding{Rule: r, Result: audit.Fail, Severity: sev})
		}
		for _, f := range fs {
			f := f
			outcomes = append(outcomes, outcome{name: fmt.Sprintf("%s %s %s", r.ID, f.Result, f.Severity), start: passAllBut(&f), want: decided(&f)})
		}
	}
	outcomes = append(outcomes,
		outcome{name: "the jail fails", want: refused, start: func(context.Context, []string, io.Writer) error {
			return errors.New("exit status 1")
		}},
		outcome{name: "the jail cannot be built", want: refused, start: func(context.Context, []string, io.Writer) error {
			return &sandbox.JailError{Step: "mount overlay", Err: errors.New("operation not permitted")}
		}},
		outcome{name: "the jail prints what is not a finding", want: refused, start: func(ctx context.Context, args []string, w io.Writer) error {
			if _, err := io.WriteString(w, "{not a finding\n"); err != nil {
				return err
			}
			return passAllBut(nil)(ctx, args, w)
		}},
	)
	ctx := context.Background()
	for _, p := range []audit.Profile{audit.ProfileRepo, audit.ProfileDependency, audit.ProfileUntrusted} {
		for _, o := range outcomes {
			cli := "allowed"
			var ec *exitCode
			switch err := gate(ctx, t.TempDir(), p, o.start, io.Discard); {
			case errors.As(err, &ec) && ec.code == exitBlocked:
				cli = "blocked"
			case err != nil:
				cli = "refused"
			}
			app := "allowed"
			v, err := ui.AuditPreflight(t.TempDir(), p, o.start)(ctx, func(ui.Event) {})
			switch {
			case err != nil:
				app = "refused"
			case v.Blocked:
				app = "blocked"
			}
			if want := o.want(p); cli != want || app != want {
				t.Errorf("%s, %s: run --trust %s, the app %s; want %s", p, o.name, cli, app, want)
			}
		}
	}
}
