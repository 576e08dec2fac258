// Package agenthost is the agent host: the background process of `shadow tui` that owns a
// detachable agent's jail and pty, runs it through the one run sequence (session/runner), and
// relays the pty to one app at a time over a unix socket in the session's directory, so that the
// app can detach and come back (`shadow tui --attach`). It holds the socket protocol, the host
// (Main, its signals and the project's writer lock while the agent runs) and the app's side
// (Start, Dial, Client).
package agenthost

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
)

// Arg is the hidden first argument that makes the shadow binary an
// agent host: the process that owns a detachable agent's jail and pty, and
// relays them to the app over a unix socket.
const Arg = "__agent-host"

// Frames of the agent host's socket: a type byte, a big-endian uint32
// length, then the payload.
const (
	frameData   = 'd' // pty bytes, both ways
	frameResize = 'r' // client to host: cols, rows as two big-endian uint16
	frameStop   = 's' // client to host: stop the agent
	frameExit   = 'x' // host to client: the run's end, as JSON
	frameBusy   = 'b' // host to client: another client is attached
	// client to host: take a checkpoint now; the payload says what took it
	// (sandbox.CheckpointPrompt or sandbox.CheckpointManual).
	frameCheckpoint = 'c'
	// host to client: the jail wrote a checkpoint, as JSON (sandbox.Checkpoint).
	frameCheckpointed = 'k'
	// host to client: the jail is done with a checkpoint request; the payload
	// is what took it.
	frameCheckpointAnswered = 'a'
	// host to client: the jail's proxy asks about a request off the allow-list, as JSON
	// (Question); the host sends the questions still open to a client that attaches.
	frameAsk = 'q'
	// client to host: the user's answer to a question, as JSON (answer).
	frameAnswer = 'n'
	// host to client: a question is no longer open (answered, or its time ran out); the payload
	// is its id in decimal.
	frameAskDone = 'w'
)

// maxFrame bounds a frame's payload, so a broken peer cannot make the
// other side allocate without limit.
const maxFrame = 1 << 20

// replaySize is how much of the agent's latest output the host keeps to
// redraw the pane of a client that attaches.
const replaySize = 256 << 10

// Layer is one layer of the jail as the app's status bar shows it.
type Layer struct {
	Name string
	On   bool
}

// hostSpec is what the app sends the agent host on its spec pipe.
type hostSpec struct {
	StateRoot string         `json:"state_root"`
	Project   string         `json:"project"`
	SessionID string         `json:"session_id"`
	Policy    sandbox.Policy `json:"policy"`
	Argv      []string       `json:"argv"`
	Cols      int            `json:"cols"`
	Rows      int            `json:"rows"`
	Layers    []Layer        `json:"layers"`
	// Protected are the config's protected paths, which the run's session keeps.
	Protected []string `json:"protected,omitempty"`
	// Ask puts the requests the jail's proxy has off its allow-list to the attached app
	// (Question) instead of refusing them at once.
	Ask bool `json:"ask,omitempty"`
}

// State is the agent host's state file: how `shadow tui --attach`
// finds a running agent.
type State struct {
	PID       int       `json:"pid"`
	Socket    string    `json:"socket"`
	SessionID string    `json:"session_id"`
	Argv      []string  `json:"argv"`
	Started   time.Time `json:"started"`
	Layers    []Layer   `json:"layers"`
	// Attached is the app attached to the agent now; nil while it runs detached.
	Attached *AttachedApp `json:"attached,omitempty"`
}

// AttachedApp is the shadow tui attached to an agent host: its process and
// the terminal it runs in, so that another app can say who holds the agent.
type AttachedApp struct {
	PID int    `json:"pid"`
	TTY string `json:"tty,omitempty"`
}

// String names the app: "pid 4242, terminal /dev/pts/3".
func (a AttachedApp) String() string {
	if a.TTY == "" {
		return fmt.Sprintf("pid %d", a.PID)
	}
	return fmt.Sprintf("pid %d, terminal %s", a.PID, a.TTY)
}

// peerApp is the app at the other end of c: its pid from the socket's
// credentials, its terminal from what its standard input is.
func peerApp(c net.Conn) *AttachedApp {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return nil
	}
	a := &AttachedApp{PID: int(cred.Pid)}
	if tty, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", cred.Pid)); err == nil && strings.HasPrefix(tty, "/dev/") {
		a.TTY = tty
	}
	return a
}

// Exit is the payload of an exit frame.
type Exit struct {
	ExitCode int           `json:"exit_code"`
	Reason   string        `json:"reason,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	Duration time.Duration `json:"duration"`
	Err      string        `json:"err,omitempty"`
}

// hostDir is where a session's agent host keeps its socket and state
// file. It is in the session's directory but outside its runtime directory,
// which the jail sees.
func hostDir(s *session.Session) string { return filepath.Join(s.Dir(), "agent") }

// SocketPath is where the agent host of s listens.
func SocketPath(s *session.Session) string { return hostSocketPath(hostDir(s)) }

func hostStatePath(dir string) string  { return filepath.Join(dir, "state.json") }
func hostSocketPath(dir string) string { return filepath.Join(dir, "sock") }

// ErrNoAgent is returned by Find when no agent runs in the session.
var ErrNoAgent = errors.New("no agent is running")

// Find returns the state of the agent host running in s, or an
// error matching ErrNoAgent when there is none.
func Find(s *session.Session) (State, error) {
	var st State
	data, err := os.ReadFile(hostStatePath(hostDir(s)))
	if errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("session %s: %w", s.ID(), ErrNoAgent)
	}
	if err != nil {
		return st, fmt.Errorf("read the agent state of session %s: %w", s.ID(), err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("read the agent state of session %s: %w", s.ID(), err)
	}
	if st.PID <= 0 || unix.Kill(st.PID, 0) == unix.ESRCH {
		return st, fmt.Errorf("session %s: %w (its agent host, pid %d, is gone)", s.ID(), ErrNoAgent, st.PID)
	}
	if st.Attached != nil && unix.Kill(st.Attached.PID, 0) == unix.ESRCH {
		st.Attached = nil // the app died; the host notices when its connection closes
	}
	return st, nil
}

func writeFrame(w io.Writer, typ byte, p []byte) error {
	buf := make([]byte, 5+len(p))
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:], uint32(len(p)))
	copy(buf[5:], p)
	_, err := w.Write(buf)
	return err
}

func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is too large", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return hdr[0], p, nil
}
