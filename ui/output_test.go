package ui

import (
	"bytes"
	"testing"
	"time"
)

// TestCopyOutputDoesNotBlockTheAgent floods the pty while the pane is kept
// busy: the agent's writes must go through (the waiting output compacted
// rather than the agent blocked), and once the pane is free it must show
// what the whole output shows. (Output with a cursor movement every few
// lines cannot be compacted below what those lines leave, and still blocks
// the agent once that much waits.)
func TestCopyOutputDoesNotBlockTheAgent(t *testing.T) {
	size := 6 << 20
	if raceEnabled {
		size = 3 << 20
	}
	out := colouredOutputEvery(size, 5000)
	master, tty := openSizedPty(t, 80, 24)
	defer master.Close()
	p := NewPane(80, 24)
	defer p.Close()
	r := &agentRun{master: master, dirty: make(chan struct{}, 1), outputDone: make(chan struct{})}
	go r.copyOutput(p)
	// Some output is fed before the pane gets busy.
	first := []byte("first line\r\n")
	if _, err := tty.Write(first); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); p.Written() < int64(len(first)); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first output was not fed to the pane")
		}
	}
	p.mu.Lock() // the pane is busy
	locked := true
	defer func() {
		if locked {
			p.mu.Unlock()
		}
	}()
	wrote := make(chan error, 1)
	go func() {
		_, err := tty.Write(out)
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent's writes of %d bytes blocked while the pane was busy", size)
	}
	p.mu.Unlock()
	locked = false
	tty.Close()
	select {
	case <-r.outputDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the output was not fed to the pane")
	}
	// The pty turns LF into CR LF.
	raw := NewPane(80, 24)
	defer raw.Close()
	raw.coalesce = false
	raw.Write(first)
	raw.Write(bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n")))
	sameScreen(t, p, raw, "after a flood the pane could not keep up with")
}
