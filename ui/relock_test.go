package ui

import (
	"os"
	"testing"

	"github.com/shadow-sandbox/shadow/session/store"
)

// The app takes the project's writer lock back after its agent only for the moment it takes
// its session (SPEC §15), and says so in the lock (Brief): a run of another session that
// starts in that moment waits for it instead of failing busy.
func TestRelockHoldsTheProjectBriefly(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": baseText})
	ts.lock.Release()
	j := &Jail{Store: ts.store, Session: ts.s}
	if err := j.relock(true); err != nil {
		t.Fatal(err)
	}
	defer j.Release()
	f, err := os.Open(ts.store.ProjectFile(ts.project, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !store.HolderWaits(f) {
		buf := make([]byte, 256)
		n, _ := f.ReadAt(buf, 0)
		t.Errorf("the app's relock does not hold the project briefly; its lock says %q", buf[:n])
	}
	// It keeps its session, not the project: another writer of the project goes on.
	other, err := ts.store.LockProject(ts.project, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatalf("the project stays locked after the app took its session back: %v", err)
	}
	other.Release()
}
