package audit

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
)

// StagedChildArgs are the arguments, after the shadow binary, that make shadow audit the project
// rules on the tree it sees (in a jail over a session: the staged tree) and stream each finding.
var StagedChildArgs = []string{"verify", "--staged-child"}

// StreamStaged is the jailed side of a staged-tree audit: the project rules (ProjectRules) on
// project as this process sees it, each finding written to w as it completes.
func StreamStaged(ctx context.Context, w io.Writer, project string) error {
	for f := range Run(ctx, Options{Project: project, Rules: ProjectRules()}) {
		if err := EncodeFinding(w, f); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// StagedFindings audits the staged tree of a session against its base and returns, for each
// project file, the rules the agent's changes newly make it fail: a rule that failed on the
// staged tree with evidence on that file which the base's audit did not have. start runs shadow
// with StagedChildArgs in a jail over the session's staged view (nothing is written to it).
func StagedFindings(ctx context.Context, project string, start func(ctx context.Context, args []string, stdout io.Writer) error) (map[string][]string, error) {
	base, err := Verify(ctx, Options{Project: project, Rules: ProjectRules()}, nil)
	if err != nil {
		return nil, fmt.Errorf("audit the base of %s: %w", project, err)
	}
	var staged []Finding
	runErr, decodeErr := streamFindings(ctx, start, StagedChildArgs,
		func(r *Rule) bool { return slices.Contains(ProjectRules(), r.ID) },
		func(f Finding) { staged = append(staged, f) })
	if runErr != nil {
		return nil, fmt.Errorf("audit the staged tree: %w", runErr)
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	return NewFindings(base, staged), nil
}

// NewFindings compares the findings of a staged tree with its base's: for each file, the IDs of
// the rules that fail on the staged tree with evidence on that file that the base did not show.
func NewFindings(base Report, staged []Finding) map[string][]string {
	seen := map[string]bool{}
	for _, f := range base.Findings {
		if f.Result != Fail {
			continue
		}
		for _, e := range f.Evidence {
			seen[f.Rule.ID+"\x00"+e.File+"\x00"+e.Text] = true
		}
	}
	out := map[string][]string{}
	for _, f := range staged {
		if f.Result != Fail {
			continue
		}
		for _, e := range f.Evidence {
			if e.File == "" || seen[f.Rule.ID+"\x00"+e.File+"\x00"+e.Text] {
				continue
			}
			if !slices.Contains(out[e.File], f.Rule.ID) {
				out[e.File] = append(out[e.File], f.Rule.ID)
			}
		}
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}
