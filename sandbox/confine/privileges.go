package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The command's capabilities are dropped by the jail's exec stage, which is
// C run before the Go runtime (sandbox/execstage.c): a single thread, so
// plain prctl(2) calls, with no Go runtime threads to reach.

// SetNonDumpable marks the process non-dumpable: no core dumps, and processes
// of the same uid cannot ptrace it or open its /proc files.
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("set non-dumpable: %w", err)
	}
	return nil
}
