package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// The notes of a run's end say, in the order `shadow run`'s summary does, what became of its
// writes: each case is one end a run can have.
func TestOutcomeNotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		out  Outcome
		want []string
	}{
		{"clean", Outcome{}, nil},
		{"staged nothing", Outcome{Unchanged: true}, []string{"this run staged no change"}},
		{"staged nothing, end not recorded", Outcome{Unchanged: true, EndErr: errors.New("record: disk")},
			[]string{"record: disk"}},
		{"layer full", Outcome{Result: sandbox.Result{LayerFull: true}}, []string{"staging layer is full"}},
		{"incomplete", Outcome{Result: sandbox.Result{StagingError: "stage z: no space"}, Incomplete: true},
			[]string{"not everything the run wrote is staged", "is marked incomplete"}},
		{"incomplete, mark failed", Outcome{Result: sandbox.Result{StagingError: "stage z: no space"}, Incomplete: true,
			MarkErr: errors.New("mark session s1 incomplete: is a directory")},
			[]string{"not everything the run wrote is staged", "is marked incomplete", "mark session s1 incomplete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			notes := tc.out.Notes()
			if len(notes) != len(tc.want) {
				t.Fatalf("notes %q, want %d matching %q", notes, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(notes[i], w) {
					t.Errorf("note %d is %q, want it to say %q", i, notes[i], w)
				}
			}
		})
	}
}
