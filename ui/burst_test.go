package ui

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/creack/pty"
	"testing"
	"time"
)

// colouredOutput is n bytes of output like a busy agent's: coloured,
// wrapped lines, cursor movement, and now and then a terminal query.
func colouredOutput(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "\x1b[38;5;%dm%6d\x1b[0m \x1b[1mbuild\x1b[22m step %s \x1b[48;2;%d;40;60m ok \x1b[m\r\n", i%256, i, strings.Repeat("·", i%50), i%256)
		if i%500 == 0 {
			b.WriteString("\x1b[6n\x1b[H\x1b[2K\x1b[24;1H")
		}
	}
	return b.Bytes()[:n]
}

func TestAppStaysResponsiveUnderOutputBurst(t *testing.T) {
	burst := 4 << 20
	if raceEnabled {
		burst = 512 << 10 // the race detector makes the emulator ~20× slower
	}
	out := colouredOutput(burst)
	wrote := make(chan time.Duration, 1)
	agent := func(ctx context.Context, tty *os.File) (AgentResult, error) {
		start := time.Now()
		if _, err := tty.Write(out); err != nil {
			return AgentResult{}, err
		}
		wrote <- time.Since(start)
		fmt.Fprint(tty, "\r\nBURST DONE\r\n")
		<-ctx.Done()
		return AgentResult{}, nil
	}
	opts := testOptions(nil, agent).withReview(t)
	tm, obs := startApp(t, opts, 120, 40)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent's output", contains("build"))

	// While the burst streams, a key is answered.
	sent := time.Now()
	tm.Send(press("ctrl+]"))
	waitScreen(t, tm, obs, 3*time.Second, "the menu during the burst", contains("stop the agent"))
	t.Logf("key to frame during a %d-byte burst: %s", burst, time.Since(sent))
	tm.Send(press("esc"))

	select {
	case d := <-wrote:
		t.Logf("the agent wrote %d bytes in %s", burst, d)
	case <-time.After(60 * time.Second):
		t.Fatal("the agent's writes blocked: the pane does not keep up")
	}
	waitScreen(t, tm, obs, 30*time.Second, "the end of the burst", contains("BURST DONE"))
	tm.Send(press("ctrl+]"))
	tm.Send(press("s"))
	waitScreen(t, tm, obs, 10*time.Second, "the stopped agent", contains("exited"))
}

// BenchmarkPaneFrame measures the agent pane's frame time while 10 MB of
// coloured output streams through a 160×48 pane the way the app gets it:
// written to a pty, read and fed to the pane by the app's output path,
// while frames are drawn at most once per frame interval until the stream
// has been drawn. It reports the mean and worst frame time; the op is the
// whole stream, so MB/s is the throughput of the pane.
func BenchmarkPaneFrame(b *testing.B) {
	const total = 10 << 20
	out := colouredOutput(total)
	b.SetBytes(total)
	var frames int
	var drawing, worst time.Duration
	for i := 0; i < b.N; i++ {
		master, tty, err := pty.Open()
		if err != nil {
			b.Fatal(err)
		}
		_ = pty.Setsize(master, &pty.Winsize{Cols: 160, Rows: 48})
		p := NewPane(160, 48)
		r := &agentRun{master: master, dirty: make(chan struct{}, 1), outputDone: make(chan struct{})}
		go r.copyOutput(p)
		go func() {
			_, _ = tty.Write(out)
			tty.Close()
		}()
		for streaming := true; streaming; {
			select {
			case <-r.outputDone:
				streaming = false
			default:
			}
			start := time.Now()
			_ = p.View()
			d := time.Since(start)
			drawing += d
			worst = max(worst, d)
			frames++
			time.Sleep(frameInterval - min(d, frameInterval))
		}
		master.Close()
		p.Close()
	}
	b.ReportMetric(float64(drawing.Nanoseconds())/float64(frames), "ns/frame")
	b.ReportMetric(float64(worst.Nanoseconds()), "worst-ns/frame")
}

// BenchmarkPaneView is the cost of drawing one 160×48 frame alone.
func BenchmarkPaneView(b *testing.B) {
	p := NewPane(160, 48)
	p.Write(colouredOutput(64 << 10))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = p.View()
	}
}
