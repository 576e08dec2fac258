package layers

import (
	"strconv"
	"strings"
)

// WriterFile, in the checkpoint directory, is the lock of whoever writes the session's
// checkpoints: PID 1 of a run's jail holds an exclusive flock on it from the moment it mounts
// the run's layer until it exits, so that a command finding a run whose shadow died waits for
// its PID 1 to finish (or die) rather than read or merge checkpoints being written (SPEC §12).
// Its lines say how far the run got: "pid N" (PID 1's process id on the host, written by the
// shadow that started it) and then WriterWritten, once everything the run wrote is in a
// checkpoint or in the staging layer.
const WriterFile = "writer"

// WriterWritten is the line PID 1 adds to WriterFile once nothing the run wrote is only in its
// layer any more.
const WriterWritten = "written"

// WriterState is what WriterFile says.
type WriterState struct {
	PID     int  // the host's id of the run's PID 1 (0: not known)
	Written bool // everything the run wrote is in a checkpoint or staged
}

// Unfinished reports a run whose PID 1 ended before all the run wrote was in a checkpoint or
// staged: the writes since its last checkpoint are lost.
func (w WriterState) Unfinished() bool { return w.PID > 0 && !w.Written }

// ParseWriter reads the contents of WriterFile.
func ParseWriter(data []byte) WriterState {
	var w WriterState
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "pid":
			w.PID, _ = strconv.Atoi(f[1])
		case len(f) == 1 && f[0] == WriterWritten:
			w.Written = true
		}
	}
	return w
}
