package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// BenchmarkAgentOutputRatioJail is the comparison whole: the same
// agent streams 10 MB of coloured output from inside the jail, once as
// `shadow run` shows it (the jail's PID 1 relays it, through the output
// filter, to a terminal that a plain reader drains) and once as the app
// shows it (the same relay into the app's pty, read by the app's output
// path into a 160×48 pane drawn every frame). The agent times its own
// writes; ratio is the app's time over shadow run's, and caught-up-ratio
// the same for the time from the agent's start until its end mark was read
// or drawn (see BenchmarkAgentOutputRatio, whose check of the pane's last
// screen this runs too).
func BenchmarkAgentOutputRatioJail(b *testing.B) {
	const total = 10 << 20
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("bash is needed for the agent:", err)
	}
	base := b.TempDir()
	project := filepath.Join(base, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "output"), colouredOutput(total), 0o644); err != nil {
		b.Fatal(err)
	}
	benchOutputRatio(b, total, "shadow-run", func(n int, read outputReader) (time.Duration, time.Duration) {
		return runJailedOutputAgent(b, base, project, n, read)
	})
}

// runJailedOutputAgent runs the agent in a jail whose terminal is a pty
// read by read, and returns how long the agent's writes took by its own
// clock (written to the project, so read back from the staging layer), and
// how long from its start until read caught up.
func runJailedOutputAgent(b *testing.B, base, project string, n int, read outputReader) (writes, caughtUp time.Duration) {
	b.Helper()
	master, tty := openSizedPty(b, 160, 48)
	defer master.Close()
	state := filepath.Join(base, "state"+strconv.Itoa(n))
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		b.Fatal(err)
	}
	p := sandbox.Policy{
		Project: project, Upper: filepath.Join(state, "upper"),
		Home: home, NoCache: true, Env: sandbox.BuildEnv(os.Environ(), nil),
	}
	var seen time.Time
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		seen = read(master)
	}()
	_, err := sandbox.Run(context.Background(), p, []string{"bash", "-c", agentScript, "agent", "output", `echo "$s $e" > clock`}, sandbox.IO{Stdin: tty, Stdout: tty, Stderr: tty})
	tty.Close()
	if err != nil {
		b.Fatalf("the agent failed: %v", err)
	}
	<-drained
	times, err := os.ReadFile(filepath.Join(p.Upper, "clock"))
	if err != nil {
		b.Fatal(err)
	}
	return agentClock(b, times, seen)
}
