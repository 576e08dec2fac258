package ui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/shadow-sandbox/shadow/ui/pane"
)

// colouredOutput is n bytes of output like a busy agent's: coloured,
// wrapped lines, cursor movement, and now and then a terminal query.
func colouredOutput(n int) []byte { return colouredOutputEvery(n, 500) }

// colouredOutputEvery is colouredOutput with the cursor movement and the
// query every so many lines.
func colouredOutputEvery(n, every int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "\x1b[38;5;%dm%6d\x1b[0m \x1b[1mbuild\x1b[22m step %s \x1b[48;2;%d;40;60m ok \x1b[m\r\n", i%256, i, strings.Repeat("·", i%50), i%256)
		if i%every == 0 {
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
		master, tty := openSizedPty(b, 160, 48)
		p := NewPane(160, 48)
		r := &agentRun{master: master, dirty: make(chan struct{}, 1), outputDone: make(chan struct{}), pace: framePace()}
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

// BenchmarkAgentOutputRatio gives the agent pane's target in one run: how
// much the pane slows an agent that streams 10 MB of coloured output. The
// same agent (bash running cat of the output to its terminal, timing its
// own writes, then printing an end mark) runs twice on a 160×48 pty: (a)
// with the pty drained by a plain reader, as when shadow run gives the
// agent a terminal, and (b) with the pty read by the app's output path into
// a 160×48 pane, frames drawn at most once per frame interval as the app
// does. It reports the agent's write time of both and their ratio (target
// ≤ 1.2); the time from the agent's start until the end mark was read (a)
// or drawn (b), and that ratio, so that a pane that falls behind after the
// agent's last write is counted; and the mean and worst frame time of (b).
// The first pane's last screen must equal what the whole output, drawn
// line by line, shows (checkLastScreen): a pane that dropped output cannot
// score.
// The agent runs as a plain process, not in the jail: the jail adds nothing
// between the agent's writes and the pty (namespaces, mounts and filters
// cost at start and on file access, while the agent's terminal is the same
// pty in both), and leaving it out keeps the figure about the pane alone.
func BenchmarkAgentOutputRatio(b *testing.B) {
	const total = 10 << 20
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("bash is needed for the agent:", err)
	}
	path := filepath.Join(b.TempDir(), "output")
	if err := os.WriteFile(path, colouredOutput(total), 0o644); err != nil {
		b.Fatal(err)
	}
	frames := benchOutputRatio(b, total, "plain", func(_ int, read outputReader) (time.Duration, time.Duration) {
		return runOutputAgent(b, bash, path, read)
	})
	b.ReportMetric(float64(frames.drawing.Nanoseconds())/float64(frames.n), "ns/frame")
	b.ReportMetric(float64(frames.worst.Nanoseconds()), "worst-ns/frame")
}

// streamEnd is what the benchmark agents print after their output: a
// reader has caught up with the agent once it has read or drawn it.
const streamEnd = "END-OF-THE-AGENT-OUTPUT"

// outputTimes adds up the runs of a benchmark agent: its own write time,
// and the time from its start until its reader caught up.
type outputTimes struct{ writes, caughtUp time.Duration }

func (o *outputTimes) add(writes, caughtUp time.Duration) {
	o.writes += writes
	o.caughtUp += caughtUp
}

// reportOutputRatios reports both sums of the two sides per run, and the
// app's over the other's.
// benchOutputRatio runs an output-ratio benchmark of total bytes: one run outside the count, which
// keeps the output for the first pane's check, then b.N pairs of runs, the agent's output read as
// a plain terminal would and drawn in the pane, reported against each other with other naming the
// plain side. run runs the agent once; n counts its runs, from -1 for the one outside the count.
func benchOutputRatio(b *testing.B, total int64, other string, run func(n int, read outputReader) (writes, caughtUp time.Duration)) *frameStats {
	b.SetBytes(total)
	var plain, app outputTimes
	frames := &frameStats{}
	run(-1, frames.plainReader(true))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plain.add(run(2*i, frames.plainReader(false)))
		app.add(run(2*i+1, frames.paneReader(i == 0)))
		if i == 0 {
			b.StopTimer()
			frames.checkLastScreen(b)
			b.StartTimer()
		}
	}
	reportOutputRatios(b, other, plain, app)
	return frames
}

func reportOutputRatios(b *testing.B, name string, other, app outputTimes) {
	n := float64(b.N)
	b.ReportMetric(float64(other.writes.Milliseconds())/n, name+"-ms")
	b.ReportMetric(float64(app.writes.Milliseconds())/n, "pane-ms")
	b.ReportMetric(app.writes.Seconds()/other.writes.Seconds(), "ratio")
	b.ReportMetric(float64(other.caughtUp.Milliseconds())/n, name+"-caught-up-ms")
	b.ReportMetric(float64(app.caughtUp.Milliseconds())/n, "pane-caught-up-ms")
	b.ReportMetric(app.caughtUp.Seconds()/other.caughtUp.Seconds(), "caught-up-ratio")
}

// frameStats adds up the frames a paneReader draws, and keeps what a
// plainReader read and a pane for checkLastScreen.
type frameStats struct {
	drawing, worst time.Duration
	n              int
	read           []byte
	last           *Pane
}

// outputReader reads an agent's pty until it ends, and returns when it
// caught up with the agent: when it read (or drew) streamEnd.
type outputReader func(master *os.File) time.Time

// plainReader returns a reader that drains the pty as shadow run's
// terminal would; with keep, what it read is kept for the pane's check
// (in a run outside the count: growing the copy slows the reader).
func (fs *frameStats) plainReader(keep bool) outputReader {
	return func(master *os.File) time.Time {
		var seen time.Time
		var tail, all []byte
		buf := make([]byte, readSize)
		for {
			n, err := master.Read(buf)
			if keep {
				all = append(all, buf[:n]...)
			}
			if seen.IsZero() && n > 0 {
				tail = append(tail, buf[:n]...)
				if bytes.Contains(tail, []byte(streamEnd)) {
					seen = time.Now()
				}
				tail = append(tail[:0], tail[max(0, len(tail)-len(streamEnd)):]...)
			}
			if err != nil {
				if keep {
					fs.read = all
				}
				return seen
			}
		}
	}
}

// paneReader makes a 160×48 pane now (the app has its pane before the agent
// starts) and returns a reader of an agent's pty that works as the app
// does: the app's output path feeds the pane, and a frame is drawn each
// frame interval until the output ends. With keep, the pane is kept for
// checkLastScreen rather than closed.
func (fs *frameStats) paneReader(keep bool) outputReader {
	p := NewPane(160, 48)
	return func(master *os.File) time.Time {
		seen := fs.drawPane(p, master)
		if keep {
			fs.last = p
		} else {
			p.Close()
		}
		return seen
	}
}

// checkLastScreen fails unless the pane a paneReader kept shows what the
// output the last plainReader kept shows when drawn line by line (on the
// benchmark's goroutine: the readers run on others).
func (fs *frameStats) checkLastScreen(tb testing.TB) {
	tb.Helper()
	if fs.read == nil || fs.last == nil {
		tb.Fatal("no plain run kept its output, or no pane run its pane, for the check")
	}
	defer fs.last.Close()
	r0 := pane.New(pane.WithSize(160, 48), pane.WithoutCoalescing())
	raw := &r0
	defer raw.Close()
	raw.Write(fs.read)
	sameScreen(tb, fs.last, raw, "the pane after the agent's stream")
}

// drawPane feeds p from master through the app's output path, drawing
// frames as the app does until the output ends, and returns when a frame
// first showed streamEnd.
func (fs *frameStats) drawPane(p *Pane, master *os.File) time.Time {
	r := &agentRun{master: master, dirty: make(chan struct{}, 1), outputDone: make(chan struct{}), pace: framePace()}
	go r.copyOutput(p)
	var seen time.Time
	for streaming := true; streaming; {
		select {
		case <-r.outputDone:
			streaming = false
		case <-time.After(frameInterval):
		}
		start := time.Now()
		view := p.View()
		d := time.Since(start)
		fs.drawing += d
		fs.worst = max(fs.worst, d)
		fs.n++
		if seen.IsZero() && strings.Contains(view, streamEnd) {
			seen = time.Now()
		}
	}
	return seen
}

// openSizedPty opens a pty whose terminal is cols×rows.
func openSizedPty(tb testing.TB, cols, rows uint16) (master, tty *os.File) {
	tb.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		tb.Fatalf("open a pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Cols: cols, Rows: rows}); err != nil {
		tb.Fatal(err)
	}
	return master, tty
}

// agentScript is the benchmark agent: it writes the file named by its
// first argument to its terminal, timing its own writes, prints streamEnd,
// then saves its clock with the shell command in its second argument.
const agentScript = `s=$EPOCHREALTIME; cat "$1"; e=$EPOCHREALTIME; printf '\r\n%s\r\n' ` + streamEnd + `; eval "$2"`

// runOutputAgent runs the agent of BenchmarkAgentOutputRatio on a fresh
// 160×48 pty read by read, and returns how long the agent's writes took by
// its own clock, and how long from its start until read caught up.
func runOutputAgent(b *testing.B, bash, path string, read outputReader) (writes, caughtUp time.Duration) {
	b.Helper()
	master, tty := openSizedPty(b, 160, 48)
	defer master.Close()
	clock, clockW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer clock.Close()
	cmd := exec.Command(bash, "-c", agentScript, "agent", path, `echo "$s $e" >&3`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.ExtraFiles = []*os.File{clockW}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	tty.Close()
	clockW.Close()
	var seen time.Time
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		seen = read(master)
	}()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the agent failed: %v", err)
	}
	<-drained
	times, err := io.ReadAll(clock)
	if err != nil {
		b.Fatal(err)
	}
	return agentClock(b, times, seen)
}

// agentClock reads the two $EPOCHREALTIME stamps the agent wrote ("start
// end", with a decimal comma in some locales) and returns the time between
// them, and the time from the start until seen, when its reader caught up.
func agentClock(b *testing.B, times []byte, seen time.Time) (writes, caughtUp time.Duration) {
	b.Helper()
	f := strings.Fields(string(times))
	if len(f) != 2 {
		b.Fatalf("the agent's clock said %q", times)
	}
	s, err1 := strconv.ParseFloat(strings.Replace(f[0], ",", ".", 1), 64)
	e, err2 := strconv.ParseFloat(strings.Replace(f[1], ",", ".", 1), 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("the agent's clock said %q", times)
	}
	if seen.IsZero() {
		b.Fatal("the reader never got to the end of the agent's output")
	}
	start := time.Unix(0, int64(s*float64(time.Second)))
	return time.Duration((e - s) * float64(time.Second)), seen.Sub(start)
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
