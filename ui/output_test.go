package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/ui/pane"
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
	r := &agentRun{master: master, dirty: make(chan struct{}, 1), outputDone: make(chan struct{}), pace: framePace()}
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
	release := p.Hold() // the pane is busy
	locked := true
	defer func() {
		if locked {
			release()
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
	release()
	locked = false
	tty.Close()
	select {
	case <-r.outputDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the output was not fed to the pane")
	}
	// The pty turns LF into CR LF.
	r0 := pane.New(pane.WithSize(80, 24), pane.WithoutCoalescing())
	raw := &r0
	defer raw.Close()
	raw.Write(first)
	raw.Write(bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n")))
	sameScreen(t, p, raw, "after a flood the pane could not keep up with")
}

// sameScreen fails unless panes fast and slow draw the same screen with the
// cursor in the same cell, and, after a probe that shows the pen and the
// last character printed, still do and sent the agent the same replies.
func sameScreen(t testing.TB, fast, slow *Pane, what string) {
	t.Helper()
	compare := func(stage string) {
		t.Helper()
		if fv, sv := fast.View(), slow.View(); fv != sv {
			t.Fatalf("%s, %s: coalesced:\n%s\ndrawing every line gives:\n%s", what, stage, fv, sv)
		}
		fx, fy, fvis := fast.Cursor()
		sx, sy, svis := slow.Cursor()
		if fx != sx || fy != sy || fvis != svis {
			t.Fatalf("%s, %s: cursor at %d,%d, drawing every line gives %d,%d", what, stage, fx, fy, sx, sy)
		}
	}
	compare("after the writes")
	probe := []byte("\x1b[3bZ\x1b[K\r\nq\x1b[6n\x1b[c")
	fast.Write(probe)
	slow.Write(probe)
	compare("after a probe of the pen and the last character")
	if fr, sr := replies(t, fast), replies(t, slow); fr != sr {
		t.Fatalf("%s: replies to queries %q, drawing every line gives %q", what, fr, sr)
	}
}

// replies drains what a pane sent the agent up to its reply to a device
// attributes query.
func replies(t testing.TB, p *Pane) string {
	t.Helper()
	var b strings.Builder
	for !strings.HasSuffix(b.String(), "c") {
		select {
		case r := <-p.Input():
			b.Write(r)
		case <-time.After(5 * time.Second):
			t.Fatalf("no reply to the device attributes query, only %q", b.String())
		}
	}
	return b.String()
}
