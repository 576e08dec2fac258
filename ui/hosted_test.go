package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// TestHostedAgentHasNoPtyOfTheApp runs the app over a real agent host, as WithJail wires it,
// and checks that the pane is the host's client's terminal: the app opens no pty of its own
// between them (one cost a kernel worker's wakeup each way for every key and every echo), and a
// key still reaches the agent and its answer the pane.
func TestHostedAgentHasNoPtyOfTheApp(t *testing.T) {
	st, lk, s, project := checkpointSession(t)
	j := &Jail{Lock: lk, Session: s, Store: st, Policy: sandbox.Policy{Project: project, NoCache: true}}
	defer j.Release()
	stopHost(t, s)
	opts := WithJail(Options{Argv: []string{"/bin/sh", "-c", "echo READY; read x; echo GOT-$x"}}, j)
	m, err := NewModel(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{m: m, msgs: make(chan tea.Msg, 64)}
	l.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	before := openPtys(t)
	next, cmd := l.m.(Model).startAgent()
	l.m = next
	l.run(cmd)
	l.untilFrame(t, "READY")
	if after := openPtys(t); len(after) > len(before) {
		t.Errorf("the app opened a pty of its own for the agent host's agent: %v, before it %v", after, before)
	}
	for _, k := range "hi" {
		l.update(tea.KeyPressMsg{Code: k, Text: string(k)})
	}
	l.update(tea.KeyPressMsg{Code: tea.KeyEnter})
	l.untilFrame(t, "GOT-hi")
	// The agent ends by itself, and its host with it.
	deadline := time.After(time.Minute)
	for l.m.(Model).result == nil {
		select {
		case msg := <-l.msgs:
			l.update(msg)
		case <-deadline:
			t.Fatal("the agent never ended")
		}
	}
	if res := l.m.(Model).result; res.ExitCode != 0 {
		t.Errorf("the agent ended with %+v (%v)", *res, l.m.(Model).agentErr)
	}
}

// openPtys lists this process's descriptors of ptys.
func openPtys(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var ptys []string
	for _, fd := range fds {
		dest, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && (dest == "/dev/ptmx" || strings.HasPrefix(dest, "/dev/pts/")) {
			ptys = append(ptys, fd.Name()+"→"+dest)
		}
	}
	return ptys
}
