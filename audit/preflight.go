package audit

import (
	"context"
	"fmt"
	"io"
)

// PreflightStage is a stage of the preflight's audit.
type PreflightStage int

const (
	// PreflightProject is the DEP rules over the project, from the host.
	PreflightProject PreflightStage = iota
	// PreflightJail is the ENV, FS and NET rules inside a fresh jail.
	PreflightJail
)

// PreflightEvent is the preflight's progress: a finding of a stage as it completes, or, with
// Finding nil, the end of the stage.
type PreflightEvent struct {
	Stage   PreflightStage
	Finding *Finding
}

// Preflight is the audit that gates a jailed command, one for `shadow run --trust`, `shadow
// verify --inside` and the app: the project's DEP rules, then the inside rules in a fresh jail
// that start runs (`shadow verify --inside-child` under the run's policy, its stdout w), merged
// into one report whose Verdict decides. progress, when not nil, is told each finding and the end
// of each stage, in order, from the calling goroutine's audit.
//
// An error means the gate could not decide (the project is unusable, ctx ended, the jail did not
// run, or what it printed could not be read): the command must not start. The report holds what
// was found until then.
func Preflight(ctx context.Context, project string, profile Profile,
	start func(ctx context.Context, args []string, w io.Writer) error, progress func(PreflightEvent)) (Report, error) {
	if profile == "" {
		profile = DefaultProfile
	}
	tell := func(st PreflightStage) func(Finding) {
		return func(f Finding) {
			if progress != nil {
				progress(PreflightEvent{Stage: st, Finding: &f})
			}
		}
	}
	end := func(st PreflightStage) {
		if progress != nil {
			progress(PreflightEvent{Stage: st})
		}
	}
	dep, err := Verify(ctx, Options{Project: project, Profile: profile, Domains: []Domain{DomainDep}}, tell(PreflightProject))
	end(PreflightProject)
	if err != nil {
		return dep, fmt.Errorf("audit the project's dependencies in %s: %w", project, err)
	}
	in, err := VerifyInside(ctx, profile, start, tell(PreflightJail))
	end(PreflightJail)
	return Merge(profile, dep, in), err
}
