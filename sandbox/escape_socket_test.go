package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func init() {
	// unixconnect connects to each unix socket path of $P and sends a byte.
	probes["unixconnect"] = func() []string {
		var out []string
		for _, p := range strings.Split(os.Getenv("P"), ":") {
			out = append(out, errName(dialUnixAt(p)))
		}
		return out
	}
}

// dialUnixAt connects to the unix socket at path (the daemon may close it at once: only the
// connect counts). It goes through
// /proc/self/fd/DIR/NAME: the temp paths of the tests are longer than a socket address holds.
func dialUnixAt(path string) error {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	c, err := net.DialTimeout("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)), 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// hostSocket listens on a unix socket at path, as a host daemon would (git's fsmonitor daemon
// listens at .git/fsmonitor--daemon.ipc), and counts the connections it accepts.
func hostSocket(t *testing.T, path string) func() int {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Bound at a short path, then moved into place: the socket is the same.
	short, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	ln, err := net.Listen("unix", filepath.Join(short, "s"))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Rename(filepath.Join(short, "s"), path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			got <- struct{}{}
		}
	}()
	return func() int {
		n := 0
		for {
			select {
			case <-got:
				n++
			case <-time.After(200 * time.Millisecond):
				return n
			}
		}
	}
}

// TestEscapeHostSocketReadOnlyPaths: a host daemon's socket inside the project's .git, inside a
// worktree's gitdir and inside a --ro directory cannot be reached from the jail; the host can
// reach each (the control), and a --ro of the socket itself is refused.
func TestEscapeHostSocketReadOnlyPaths(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	// A second project, a worktree, whose gitdir lives outside it.
	wt := newTestJail(t)
	gitdir := filepath.Join(wt.base, "main.git", "worktrees", "wt")
	writeFiles(t, gitdir, map[string]string{"HEAD": "ref: refs/heads/wt\n"})
	os.RemoveAll(filepath.Join(wt.project, ".git"))
	writeFiles(t, wt.project, map[string]string{".git": "gitdir: " + gitdir + "\n"})

	roDir := filepath.Join(j.base, "tools")
	sockets := []string{
		filepath.Join(j.project, ".git", "fsmonitor--daemon.ipc"),
		filepath.Join(gitdir, "fsmonitor--daemon.ipc"),
		filepath.Join(roDir, "daemon.sock"),
	}
	counts := make([]func() int, len(sockets))
	for i, s := range sockets {
		counts[i] = hostSocket(t, s)
		if err := dialUnixAt(s); err != nil {
			t.Fatalf("control: the host cannot reach %s: %v", s, err)
		}
		if n := counts[i](); n != 1 {
			t.Fatalf("control: %s accepted %d connections, want 1", s, n)
		}
	}

	p := j.policy()
	p.ReadOnly = append(p.ReadOnly, roDir)
	got := j.try(t, p, "unixconnect", "P="+sockets[0]+":"+sockets[2])
	pw := wt.policy()
	got = append(got, wt.try(t, pw, "unixconnect", "P="+sockets[1])...)
	got = []string{got[0], got[2], got[1]}
	for i, s := range sockets {
		if got[i] == "ok" {
			t.Errorf("connect to host socket %s from the jail: ok", s)
		}
		if n := counts[i](); n != 0 {
			t.Errorf("the host daemon at %s accepted %d connections from the jail", s, n)
		}
	}
	if want := []string{"ECONNREFUSED", "ECONNREFUSED", "ECONNREFUSED"}; !slices.Equal(got, want) {
		t.Errorf("connect results %v, want %v", got, want)
	}

	// --ro of a socket itself is refused before anything runs.
	p.ReadOnly = append(p.ReadOnly, sockets[2])
	if _, err := runSetup(t.Context(), p, []string{"/bin/true"}); err == nil || !strings.Contains(err.Error(), "socket") {
		t.Errorf("--ro of a socket: %v, want a refusal naming the socket", err)
	}
}
