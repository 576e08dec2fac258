package sandbox

import (
	"encoding/json"
	"time"

	"golang.org/x/sys/unix"
)

// checkpointer takes the run's checkpoints in PID 1: when the host asks,
// when the layer was written and then stayed quiet, and at the end. A nil
// checkpointer (no layer, or checkpoints off) takes none.
type checkpointer struct {
	layer    *runLayer
	status   *json.Encoder
	requests chan string
	tick     <-chan time.Time
	quiet    time.Duration
	sig      [2]uint64 // the layer's use at the last poll
	dirty    time.Time // when a write was first seen since the last checkpoint
	last     time.Time // when the layer last changed
	failed   error     // a checkpoint that could not be written
	budget   *historyBudget
	prompt   string // the last prompt submitted: the one the next checkpoint answers
}

func newCheckpointer(layer *runLayer, cp checkpointSpec, control *json.Decoder, status *json.Encoder) *checkpointer {
	if layer == nil {
		return &checkpointer{}
	}
	c := &checkpointer{layer: layer, status: status, requests: make(chan string, 4), quiet: time.Duration(cp.Quiet)}
	if c.quiet == 0 {
		c.quiet = 3 * time.Second
	}
	if cp.Dir == "" {
		c.quiet = -1 // no checkpoints; a layer on disk is still polled for its size
	}
	if c.quiet > 0 || (layer.onDisk && layer.limit > 0) {
		c.tick = time.NewTicker(time.Second).C
	}
	if c.quiet > 0 {
		c.budget = newHistoryBudget(layer, cp.Budget)
	}
	// Measured from before the command started: a write at once, then
	// quiet, still takes a quiet checkpoint.
	c.sig = layer.fresh
	go func() {
		// The host's requests; the control pipe closes when the host goes.
		for {
			var m request
			if err := control.Decode(&m); err != nil {
				return
			}
			if m.Checkpoint != "" {
				c.requests <- m.Checkpoint
			}
		}
	}()
	return c
}

// take writes a checkpoint and tells the host what it wrote. A failure is
// reported, and remembered: the run's end then merges the run's layer
// itself rather than its checkpoints.
func (c *checkpointer) take(trigger string) error {
	if c.layer == nil {
		return nil
	}
	cp, err := c.layer.checkpoint(trigger, c.prompt)
	c.dirty = time.Time{}
	if err != nil {
		c.failed = err
		_ = c.status.Encode(event{CheckpointError: err.Error()})
		return err
	}
	if cp != nil {
		if c.budget != nil {
			c.budget.wrote(c.layer, cp)
		}
		_ = c.status.Encode(event{Checkpointed: cp})
	}
	return nil
}

// poll takes a quiet checkpoint once the layer changed and then stayed
// unchanged for the quiet period, and stops a run whose layer on disk
// passed its size (a tmpfs layer needs no poll: the kernel refuses).
func (c *checkpointer) poll() {
	if c.layer.tooLarge() {
		unix.Kill(-1, unix.SIGKILL)
	}
	now := time.Now()
	if c.layer.changed(&c.sig) {
		c.last = now
		if c.dirty.IsZero() {
			c.dirty = now
		}
		return
	}
	if c.quiet > 0 && !c.dirty.IsZero() && now.Sub(c.last) >= c.quiet {
		if ok, note := c.budget.allowQuiet(c.layer); !ok {
			c.dirty = time.Time{}
			if note != "" {
				_ = c.status.Encode(event{CheckpointNote: note})
			}
			return
		}
		c.take(CheckpointQuiet)
	}
}

// answer tells the host that the checkpoint it asked for is done: written
// (its message went first) or not needed. The app holds the key that asked
// for it until then, so that the checkpoint holds nothing the key caused.
func (c *checkpointer) answer(trigger string) {
	if c.status != nil {
		_ = c.status.Encode(event{CheckpointAnswered: trigger})
	}
}
