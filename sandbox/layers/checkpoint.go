package layers

import "time"

// Checkpoint is one checkpoint of a session, as PID 1 of the jail wrote it: directory c<N> of the
// checkpoint directory, holding layer/ (what changed in the run's layer
// since the last checkpoint, as a layer over it) and meta.json (this).
type Checkpoint struct {
	ID      string    `json:"id"` // "c3"
	N       int       `json:"n"`
	Time    time.Time `json:"time"`
	Trigger string    `json:"trigger"` // CheckpointRunEnd, CheckpointPrompt, ...
	Argv    []string  `json:"argv"`
	Paths   []string  `json:"paths"` // what the step changed, added or deleted
	// Sums is the SHA-256 of the checkpoint's SumsFile ("": written before checkpoints were
	// checked).
	Sums string `json:"sums,omitempty"`
	// Damage, when set, says what of the checkpoint was found damaged when it was read; it is
	// never written.
	Damage string `json:"damage,omitempty"`
}

// What takes a checkpoint.
const (
	CheckpointRunEnd = "run end" // the end of every run
	CheckpointPrompt = "prompt"  // input submitted to the agent
	CheckpointQuiet  = "quiet"   // writes, then a few seconds without any
	CheckpointManual = "manual"  // asked for
)

// MergedFile, in the checkpoint directory, holds the number of the last
// checkpoint whose changes the staging layer holds: later ones are merged
// into it by whoever finds them (a run that died before merging).
const MergedFile = "merged"
