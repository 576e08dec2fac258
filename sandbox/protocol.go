package sandbox

import (
	"syscall"
	"time"
)

// The host and PID 1 of the jail talk over two inherited pipes, one JSON
// value a line, one type per direction: on the control pipe the host sends
// the jailSpec, then requests; on the status pipe PID 1 sends events. The
// exec stage (execstage.c) reports to PID 1 with stageReports.

// request is what the host asks of PID 1 once it has the jailSpec.
type request struct {
	// Go starts the command: the host finished the network.
	Go bool `json:"go,omitempty"`
	// Checkpoint asks for a checkpoint now; it is what took it
	// (CheckpointPrompt, CheckpointManual).
	Checkpoint string `json:"checkpoint,omitempty"`
}

// event is what PID 1 tells the host: one of its fields is set.
type event struct {
	// Ready: the jail is built; PID 1 waits for Go.
	Ready bool `json:"ready,omitempty"`
	// Started: the command was confined and exec'd, or could not be.
	Started *commandStarted `json:"started,omitempty"`
	// Failed: a step of building the jail or starting the command failed.
	Failed *stepFailure `json:"failed,omitempty"`
	// Merging: the command is gone; its layer is being merged, which the
	// host must not cut short.
	Merging bool `json:"merging,omitempty"`
	// Checkpointed is a checkpoint PID 1 wrote; CheckpointError why one
	// could not be written.
	Checkpointed    *Checkpoint `json:"checkpointed,omitempty"`
	CheckpointError string      `json:"checkpoint_error,omitempty"`
	// CheckpointNote is what the user should know of the run's checkpoints
	// (their budget stopped the quiet ones).
	CheckpointNote string `json:"checkpoint_note,omitempty"`
	// CheckpointAnswered: a checkpoint the host asked for (this is its
	// reason) is done, after the event of the checkpoint it wrote, if any.
	CheckpointAnswered string `json:"checkpoint_answered,omitempty"`
	// End: the command and everything in the jail are gone; PID 1 exits.
	End *runEnd `json:"end,omitempty"`
}

// commandStarted says how the command started.
type commandStarted struct {
	// Landlock is the ABI the command got.
	Landlock int `json:"landlock"`
	// ExecFailed is the exit status of a command that could not be executed
	// (not found, not executable): nothing runs, and PID 1 exits.
	ExecFailed *int `json:"exec_failed,omitempty"`
}

// stepFailure names the step that failed and why.
type stepFailure struct {
	Step  string `json:"step,omitempty"`
	Error string `json:"error"`
}

// runEnd is how the command ended, and its layer with it.
type runEnd struct {
	Exit   int            `json:"exit"`             // the command's exit status
	Signal syscall.Signal `json:"signal,omitempty"` // the signal that killed it
	// The run's layer, as the command left it.
	LayerBytes   int64  `json:"layer_bytes,omitempty"`   // bytes it used
	LayerFull    bool   `json:"layer_full,omitempty"`    // it reached its size: writes past it failed
	StagingError string `json:"staging_error,omitempty"` // merging it into the staging layer failed
}

// stageReport is what the exec stage tells PID 1: that it confined itself
// (then exec closes the pipe), or which step failed, with the exit status
// when the command could not be executed. execstage.c writes it.
type stageReport struct {
	Confined bool   `json:"confined,omitempty"`
	Landlock int    `json:"landlock,omitempty"`
	Step     string `json:"step,omitempty"`
	Error    string `json:"error,omitempty"`
	Exit     *int   `json:"exit,omitempty"`
}

// defaultKillGrace is the time between SIGTERM and SIGKILL when stopping.
const defaultKillGrace = 2 * time.Second
