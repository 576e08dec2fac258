package ui

import (
	"testing"
	"time"
)

// TestFramePacing checks the pacing of the redraws caused by agent output: an
// agent draws the echo of a key in a few writes a few milliseconds apart
// (codex in three to five), and each is drawn at once, not a frame after the
// one before; a flood of output still costs at most one frame per interval.
func TestFramePacing(t *testing.T) {
	r := &agentRun{dirty: make(chan struct{}, 1), outputDone: make(chan struct{}), pace: framePace()}
	frame := func() time.Duration {
		t.Helper()
		r.dirty <- struct{}{}
		start := time.Now()
		if _, ok := waitFrame(r)().(frameMsg); !ok {
			t.Fatal("the pane changed and no frame came")
		}
		return time.Since(start)
	}
	const echoWrites = 3
	for i := range echoWrites {
		if d := frame(); d >= frameInterval/2 {
			t.Errorf("write %d of an echo after a quiet spell was drawn %s after it came", i+1, d.Round(100*time.Microsecond))
		}
	}
	const flood = 10
	start := time.Now()
	for range flood {
		frame()
	}
	if d := time.Since(start); d < (flood-1)*frameInterval {
		t.Errorf("a flood drew %d frames in %s: more than one per %s", flood, d.Round(time.Millisecond), frameInterval)
	}
}
