package session

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/store"
)

// A writer that finds the project's lock held by a command that only reads, putting right what
// a crash left (a `shadow log` at the instant a `shadow run` starts), waits for it; one that
// finds it held by another writer fails as busy at once.
func TestWriterWaitsForARecovery(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(dir, "p")
	for _, holder := range []string{store.RecoveryCommand, "run"} {
		held, err := st.LockProject(project, store.LockOptions{Command: holder})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			lk, err := st.LockProject(project, store.LockOptions{Command: "run"})
			if err == nil {
				lk.Release()
			}
			got <- err
		}()
		var err2 error
		select {
		case err2 = <-got:
		case <-time.After(300 * time.Millisecond):
			// Still waiting: what a writer does behind a recovery.
			held.Release()
			err2 = <-got
			if holder != store.RecoveryCommand {
				t.Errorf("a writer waited behind another writer (%s) instead of failing as busy", holder)
			}
			if err2 != nil {
				t.Errorf("behind %s, once it was released: %v", holder, err2)
			}
			continue
		}
		held.Release()
		if holder == store.RecoveryCommand {
			t.Errorf("a writer did not wait behind a recovery: %v", err2)
		} else if !errors.Is(err2, store.ErrBusy) {
			t.Errorf("behind a run: %v, want busy", err2)
		}
	}
}
