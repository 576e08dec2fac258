package ui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// rawEchoAgent puts its terminal in raw mode and writes back every byte it
// reads, as a shell's line editor echoes a key.
func rawEchoAgent(ctx context.Context, tty *os.File) (AgentResult, error) {
	fd := int(tty.Fd())
	if tio, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
		tio.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG
		tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, tio)
	}
	go func() {
		<-ctx.Done()
		tty.Close()
	}()
	buf := make([]byte, 256)
	for {
		n, err := tty.Read(buf)
		if err != nil {
			return AgentResult{ExitCode: 0}, nil
		}
		if _, err := tty.Write(buf[:n]); err != nil {
			return AgentResult{ExitCode: 0}, nil
		}
	}
}

// hostedEchoAgent is rawEchoAgent as a hosted agent: what is typed is written back, over the
// pane's terminal with no pty of the app's in between (the agent host's relay).
func hostedEchoAgent(ctx context.Context, term agenthost.Terminal) (AgentResult, error) {
	buf := make([]byte, 256)
	for {
		n, err := term.Read(buf)
		if err != nil {
			return AgentResult{ExitCode: 0}, nil
		}
		if _, err := term.Write(buf[:n]); err != nil {
			return AgentResult{ExitCode: 0}, nil
		}
	}
}

// loop drives a model as bubbletea's program does: the commands it returns
// run in goroutines, their messages come back to Update one at a time.
type loop struct {
	m    tea.Model
	msgs chan tea.Msg
}

func (l *loop) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				l.run(c)
			}
			return
		}
		if msg != nil {
			l.msgs <- msg
		}
	}()
}

func (l *loop) update(msg tea.Msg) {
	var cmd tea.Cmd
	l.m, cmd = l.m.Update(msg)
	l.run(cmd)
}

// untilFrame processes messages until one that redraws the pane (a frame)
// leaves a view that shows want, and reports when.
func (l *loop) untilFrame(tb testing.TB, want string) time.Time {
	deadline := time.After(time.Minute)
	for {
		select {
		case msg := <-l.msgs:
			l.update(msg)
			if _, frame := msg.(frameMsg); frame && strings.Contains(l.m.View().Content, want) {
				return time.Now()
			}
		case <-deadline:
			tb.Fatalf("no frame shows %q", want)
		}
	}
}

// BenchmarkKeyToEcho measures a key press to the first frame that shows
// its echo, through the pane and an agent that echoes: what the pane adds to
// an agent's own echo, with the agent on a pty of the app's (pty), and as
// an agent host's client relays it (hosted: no pty of the app's between the
// pane and the host's socket). bubbletea's renderer then writes the frame on
// its next tick, at 120 a second (run.go).
func BenchmarkKeyToEcho(b *testing.B) {
	b.Run("pty", func(b *testing.B) { benchKeyToEcho(b, testOptions(nil, rawEchoAgent)) })
	hosted := testOptions(nil, nil)
	hosted.Hosted = hostedEchoAgent
	b.Run("hosted", func(b *testing.B) { benchKeyToEcho(b, hosted) })
}

func benchKeyToEcho(b *testing.B, opts Options) {
	m := newModel(b, opts.withReview(b))
	l := &loop{m: m, msgs: make(chan tea.Msg, 64)}
	l.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	next, cmd := m.startAgent()
	l.m = next
	l.run(cmd)
	var (
		col   strings.Builder
		total time.Duration
		n     int
	)
	for i := 0; b.Loop(); i++ {
		c := rune('a' + i%26)
		if i%60 == 0 {
			l.update(tea.KeyPressMsg{Code: tea.KeyEnter})
			col.Reset()
		}
		col.WriteRune(c)
		// Keys come as a fast typist's, a frame or more apart.
		time.Sleep(frameInterval)
		start := time.Now()
		l.update(tea.KeyPressMsg{Code: c, Text: string(c)})
		total += l.untilFrame(b, col.String()).Sub(start)
		n++
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "ms/echo")
}
