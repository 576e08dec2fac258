package ui

import (
	"errors"
	"testing"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// The app exits with what `shadow run` would have: the agent's status as sandbox.ExitStatus
// makes it (the command's, 124 on --timeout, 128+N on signal N, 125 when the jail could not be
// built), 125 when the preflight's jail could not be built, 0 with no agent run.
func TestExitCodeIsTheRunsStatus(t *testing.T) {
	jailErr := &sandbox.JailError{Step: "mount overlay", Err: errors.New("no overlay")}
	for _, tc := range []struct {
		name string
		res  AgentResult
		err  error
		want int
	}{
		{"status", AgentResult{ExitCode: 7}, nil, 7},
		{"timeout", AgentResult{ExitCode: sandbox.ExitTimeout, Reason: "timed out after 1s"}, nil, 124},
		{"signal", AgentResult{ExitCode: 128 + 15}, nil, 143},
		{"no jail", AgentResult{ExitCode: sandbox.ExitStatus(sandbox.Result{}, jailErr)}, jailErr, 125},
		{"not started", AgentResult{ExitCode: -1}, errors.New("record the run: disk full"), ExitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, testOptions(nil, idleAgent).withReview(t))
			m.phase = phaseAgent
			m = step(t, m, agentExitMsg{res: tc.res, err: tc.err})
			m = step(t, m, press("q"))
			if got := m.ExitCode(); got != tc.want {
				t.Errorf("exit code %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("preflight jail", func(t *testing.T) {
		m := newModel(t, testOptions(nil, idleAgent).withReview(t))
		m.pre.err = jailErr
		next, _ := m.Update(press("q"))
		if got := next.(Model).ExitCode(); got != sandbox.ExitNoJail {
			t.Errorf("quitting a preflight whose jail could not be built: exit %d, want 125", got)
		}
	})
}
