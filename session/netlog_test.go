package session

import (
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/session/history"
)

// TestInSteps: a request belongs to the first checkpoint taken after it
// began (one taken at the same instant included), one after the last
// checkpoint to none; a checkpoint without a time takes none.
func TestInSteps(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cps := []history.Checkpoint{{ID: "c1", Time: at(10)}, {ID: "c2"}, {ID: "c3", Time: at(20)}}
	entries := []proxy.Entry{
		{Time: at(1), Allowed: true}, {Time: at(10), Allowed: false}, {Time: at(11), Allowed: true},
		{Time: at(20)}, {Time: at(21), Allowed: true}, {Time: at(30)},
	}
	want := []string{"c1", "c1", "c3", "c3", "", ""}
	got := InSteps(entries, cps)
	for i, r := range got {
		if r.Checkpoint != want[i] {
			t.Errorf("request at +%s: step %q, want %q", r.Time.Sub(t0), r.Checkpoint, want[i])
		}
	}
	counts := CountSteps(got)
	wantCounts := []StepRequests{{"c1", 2, 1}, {"c3", 2, 1}, {"", 2, 1}}
	if len(counts) != len(wantCounts) {
		t.Fatalf("counts %v, want %v", counts, wantCounts)
	}
	for i := range counts {
		if counts[i] != wantCounts[i] {
			t.Errorf("counts %v, want %v", counts, wantCounts)
		}
	}
}
