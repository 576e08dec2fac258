package ui

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
)

// AgentHostArg is the hidden first argument that makes the shadow binary an
// agent host: the process that owns a detachable agent's jail and pty, and
// relays them to the app over a unix socket.
const AgentHostArg = "__agent-host"

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
)

// maxFrame bounds a frame's payload, so a broken peer cannot make the
// other side allocate without limit.
const maxFrame = 1 << 20

// replaySize is how much of the agent's latest output the host keeps to
// redraw the pane of a client that attaches.
const replaySize = 256 << 10

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
}

// AgentHostState is the agent host's state file: how `shadow tui --attach`
// finds a running agent.
type AgentHostState struct {
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

// BusyError says that another app is attached to the agent, and which.
type BusyError struct {
	Holder *AttachedApp // nil when the host did not say
}

// Error says who holds the agent and what can be done.
func (e *BusyError) Error() string {
	who := "another shadow tui"
	if e.Holder != nil {
		who += " (" + e.Holder.String() + ")"
	}
	return who + " is attached to this agent; " + BusyAdvice()
}

// BusyAdvice is what can be done about an agent another app holds, with the default keys.
func BusyAdvice() string {
	k := DefaultKeyMap()
	return fmt.Sprintf("wait for it to end there, or detach it there (%s then %s) and run shadow tui --attach here, or stop it there (%s then %s)",
		k.Prefix.Help().Key, k.Detach.Help().Key, k.Prefix.Help().Key, k.Stop.Help().Key)
}

// IsBusy reports whether err says that another app holds the agent.
func IsBusy(err error) bool {
	var b *BusyError
	return errors.As(err, &b)
}

// hostExit is the payload of an exit frame.
type hostExit struct {
	ExitCode int           `json:"exit_code"`
	Reason   string        `json:"reason,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	Duration time.Duration `json:"duration"`
	Err      string        `json:"err,omitempty"`
}

// agentHostDir is where a session's agent host keeps its socket and state
// file. It is in the session's directory but outside its runtime directory,
// which the jail sees.
func agentHostDir(s *session.Session) string { return filepath.Join(s.Dir(), "agent") }

func hostStatePath(dir string) string  { return filepath.Join(dir, "state.json") }
func hostSocketPath(dir string) string { return filepath.Join(dir, "sock") }

// ErrNoAgent is returned by FindAgentHost when no agent runs in the session.
var ErrNoAgent = errors.New("no agent is running")

// FindAgentHost returns the state of the agent host running in s, or an
// error matching ErrNoAgent when there is none.
func FindAgentHost(s *session.Session) (AgentHostState, error) {
	var st AgentHostState
	data, err := os.ReadFile(hostStatePath(agentHostDir(s)))
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

// AgentHostMain is the agent host: it reads its spec from fd 3, takes the
// project's writer lock, records the run in the session, starts the agent
// in the jail on a pty, reports on fd 4 that the socket is ready, and relays
// the pty to one client at a time until the agent ends. The run's record
// names this process, so the session counts the run as active (apply and
// discard refuse) for as long as the agent host lives. It returns the
// process's exit status.
func AgentHostMain() int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	specR, ready := os.NewFile(3, "spec"), os.NewFile(4, "ready")
	report := func(err error) {
		if ready == nil {
			return
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		_ = json.NewEncoder(ready).Encode(struct {
			Err string `json:"err"`
		}{msg})
		ready.Close()
		ready = nil
	}
	var spec hostSpec
	if err := json.NewDecoder(specR).Decode(&spec); err != nil {
		report(fmt.Errorf("agent host: read the spec: %w", err))
		return 1
	}
	specR.Close()
	h, err := startHost(spec)
	if err != nil {
		report(err)
		return 1
	}
	report(nil)
	h.serve()
	return 0
}

// agentHost is the running agent host.
type agentHost struct {
	ln     net.Listener
	master *os.File
	dir    string
	stop   context.CancelFunc
	ended  chan struct{} // closed when the run is recorded as ended
	// requests are the clients' checkpoint requests, for the jail's PID 1.
	requests chan string

	mu     sync.Mutex
	client net.Conn
	replay []byte
	exit   []byte // the exit frame's payload once the agent has ended
	// state is what the state file says; its Attached follows the client.
	state AgentHostState
}

// setClientLocked makes c (nil: none) the client and says so in the state
// file, until the agent has ended (then the file is gone).
func (h *agentHost) setClientLocked(c net.Conn) {
	h.client = c
	h.state.Attached = nil
	if c != nil {
		h.state.Attached = peerApp(c)
	}
	if h.exit == nil {
		_ = writeHostState(h.dir, h.state)
	}
}

// writeHostState replaces the state file whole, so a reader never sees part of it.
func writeHostState(dir string, st AgentHostState) error {
	data, _ := json.MarshalIndent(st, "", "  ")
	tmp := hostStatePath(dir) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, hostStatePath(dir))
}

// startHost does everything up to a running agent and a listening socket.
func startHost(spec hostSpec) (*agentHost, error) {
	st, err := session.Open(spec.StateRoot)
	if err != nil {
		return nil, err
	}
	lk, err := st.LockProject(spec.Project, session.LockOptions{Wait: true, Command: "tui (agent)"})
	if err != nil {
		return nil, err
	}
	s, err := lk.Get(spec.SessionID)
	if err != nil {
		lk.Release()
		return nil, err
	}
	fail := func(err error) (*agentHost, error) { lk.Release(); return nil, err }
	dir := agentHostDir(s)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(fmt.Errorf("agent host: create %s: %w", dir, err))
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fail(fmt.Errorf("agent host: chmod %s: %w", dir, err))
	}
	// A state directory deep enough puts the socket past sockaddr_un's 108 bytes: ListenUnix
	// reaches it through its directory's descriptor.
	sock := hostSocketPath(dir)
	ln, err := sandbox.ListenUnix(sock)
	if err != nil {
		return fail(fmt.Errorf("agent host: %w", err))
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return fail(fmt.Errorf("agent host: chmod %s: %w", sock, err))
	}
	master, tty, err := pty.Open()
	if err != nil {
		ln.Close()
		return fail(fmt.Errorf("agent host: open a pty: %w", err))
	}
	_ = pty.Setsize(master, &pty.Winsize{Cols: uint16(max(spec.Cols, 1)), Rows: uint16(max(spec.Rows, 1))})
	closeAll := func() { ln.Close(); master.Close(); tty.Close(); os.Remove(sock) }
	if err := s.StartRun(spec.Argv); err != nil {
		closeAll()
		return fail(fmt.Errorf("record the run in session %s: %w", s.ID(), err))
	}
	cpDir, cpNext, err := s.Checkpointing()
	if err != nil {
		closeAll()
		_ = s.EndRun(sandbox.ExitNoJail)
		return fail(fmt.Errorf("session %s: %w", s.ID(), err))
	}
	state := AgentHostState{PID: os.Getpid(), Socket: sock, SessionID: s.ID(), Argv: spec.Argv,
		Started: time.Now().UTC(), Layers: spec.Layers}
	if err := writeHostState(dir, state); err != nil {
		closeAll()
		_ = s.EndRun(sandbox.ExitNoJail)
		return fail(fmt.Errorf("agent host: write %s: %w", hostStatePath(dir), err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &agentHost{ln: ln, master: master, dir: dir, stop: cancel, ended: make(chan struct{}), requests: make(chan string, 8), state: state}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sigs; cancel() }()

	outputDone := make(chan struct{})
	go h.copyOutput(outputDone)
	go func() {
		p := sessionPolicy(spec.Policy, s)
		p.Checkpoints, p.NextCheckpoint = cpDir, cpNext
		p.RunLayer = s.PrecaptureLayer
		p.CheckpointRequests, p.Checkpointed, p.CheckpointAnswered = h.requests, h.checkpointed, h.checkpointAnswered
		p.Stdin, p.Stdout, p.Stderr, p.Warnings = tty, tty, tty, tty
		res, err := sandbox.Run(ctx, p, spec.Argv)
		tty.Close()
		select {
		case <-outputDone:
		case <-time.After(2 * time.Second):
		}
		code := sandbox.ExitStatus(res, err)
		if res.StagingError != "" {
			_ = s.MarkIncomplete(res.StagingError) // the notes say it too
		}
		if e := s.EndRun(code); e != nil && err == nil {
			err = fmt.Errorf("record the end of the run in session %s: %w", s.ID(), e)
		}
		lk.Release()
		ex := hostExit{ExitCode: code, Reason: res.StopReason, Notes: sandbox.LayerNotes(res), Duration: res.Duration}
		if err != nil {
			ex.Err = err.Error()
		}
		h.finish(ex)
	}()
	return h, nil
}

// copyOutput keeps the agent's latest output for replay and sends it to the
// attached client.
func (h *agentHost) copyOutput(done chan struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := h.master.Read(buf)
		if n > 0 {
			h.mu.Lock()
			h.replay = append(h.replay, buf[:n]...)
			if len(h.replay) > replaySize {
				h.replay = append([]byte(nil), h.replay[len(h.replay)-replaySize:]...)
			}
			if h.client != nil {
				h.sendLocked(frameData, buf[:n])
			}
			h.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// sendLocked writes a frame to the client, dropping a client that does not
// read within a few seconds so that it cannot stall the agent.
func (h *agentHost) sendLocked(typ byte, p []byte) {
	_ = h.client.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := writeFrame(h.client, typ, p); err != nil {
		h.client.Close()
		h.setClientLocked(nil)
	}
}

// checkpointed tells the attached client of a checkpoint the jail wrote.
func (h *agentHost) checkpointed(cp sandbox.Checkpoint) {
	data, err := json.Marshal(cp)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		h.sendLocked(frameCheckpointed, data)
	}
}

// checkpointAnswered tells the attached client that the jail is done with a
// checkpoint request: the app holds the keys that asked for it until then.
func (h *agentHost) checkpointAnswered(trigger string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		h.sendLocked(frameCheckpointAnswered, []byte(trigger))
	}
}

// finish removes the state file and socket (no client can attach any more)
// and tells the attached client how the run ended.
func (h *agentHost) finish(ex hostExit) {
	data, _ := json.Marshal(ex)
	h.mu.Lock()
	h.exit = data // from now on no client change rewrites the state file
	_ = os.Remove(hostStatePath(h.dir))
	_ = os.Remove(hostSocketPath(h.dir))
	h.ln.Close()
	if h.client != nil {
		h.sendLocked(frameExit, data)
	}
	h.mu.Unlock()
	close(h.ended)
}

// serve accepts clients until the agent has ended, then gives an attached
// client a moment to read the end before the host exits.
func (h *agentHost) serve() {
	go func() {
		for {
			c, err := h.ln.Accept()
			if err != nil {
				return
			}
			h.attach(c)
		}
	}()
	<-h.ended
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		attached := h.client != nil
		h.mu.Unlock()
		if !attached {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attach makes c the client, replaying the latest output, unless another
// client is attached or c is not this user.
func (h *agentHost) attach(c net.Conn) {
	if !sameUser(c) {
		c.Close()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		var holder []byte
		if h.state.Attached != nil {
			holder, _ = json.Marshal(h.state.Attached)
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_ = writeFrame(c, frameBusy, holder)
		c.Close()
		return
	}
	h.setClientLocked(c)
	if len(h.replay) > 0 {
		h.sendLocked(frameData, h.replay)
	}
	if h.client != nil && h.exit != nil {
		h.sendLocked(frameExit, h.exit)
	}
	go h.readClient(c)
}

// sameUser reports whether the peer of c runs as this process's user.
func sameUser(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	return err == nil && cred != nil && int(cred.Uid) == os.Getuid()
}

// readClient applies the client's frames until it goes away.
func (h *agentHost) readClient(c net.Conn) {
	defer func() {
		h.mu.Lock()
		if h.client == c {
			h.setClientLocked(nil)
		}
		h.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		typ, p, err := readFrame(r)
		if err != nil {
			return
		}
		switch typ {
		case frameData:
			if _, err := h.master.Write(p); err != nil {
				return
			}
		case frameResize:
			if len(p) == 4 {
				cols, rows := binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:])
				if pty.Setsize(h.master, &pty.Winsize{Cols: cols, Rows: rows}) == nil {
					// sandbox.Run relays SIGWINCH to the jail's PID 1, which
					// copies this pty's size to the agent's own.
					_ = syscall.Kill(os.Getpid(), syscall.SIGWINCH)
				}
			}
		case frameStop:
			h.stop()
		case frameCheckpoint:
			// A client asks only for the checkpoints a user takes.
			if t := string(p); t == sandbox.CheckpointPrompt || t == sandbox.CheckpointManual {
				select {
				case h.requests <- t:
				default:
				}
			}
		}
	}
}

// startAgentHost starts `shadow __agent-host` in its own session for argv
// over s and waits until its socket is ready.
func startAgentHost(st *session.Store, s *session.Session, p sandbox.Policy, argv []string, layers []Layer, cols, rows int) error {
	spec := hostSpec{StateRoot: st.Root, Project: s.Project(), SessionID: s.ID(), Policy: p, Argv: argv,
		Cols: cols, Rows: rows, Layers: layers}
	spec.Policy.Stdin, spec.Policy.Stdout, spec.Policy.Stderr, spec.Policy.Warnings = nil, nil, nil, nil
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("start the agent host: encode the spec: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the agent host: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return fmt.Errorf("start the agent host: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", AgentHostArg)
	cmd.Args[0] = "shadow"
	cmd.ExtraFiles = []*os.File{specR, readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	specR.Close()
	readyW.Close()
	if err != nil {
		specW.Close()
		readyR.Close()
		return fmt.Errorf("start the agent host: %w", err)
	}
	// The host outlives this process; its exit status is not waited for.
	go func() { _ = cmd.Wait() }()
	_, werr := specW.Write(data)
	specW.Close()
	defer readyR.Close()
	var reply struct {
		Err string `json:"err"`
	}
	if err := json.NewDecoder(readyR).Decode(&reply); err != nil {
		if werr != nil {
			err = werr
		}
		return fmt.Errorf("start the agent host: no answer: %w", err)
	}
	if reply.Err != "" {
		return errors.New(reply.Err)
	}
	return nil
}

// hostClient is the app's connection to an agent host.
type hostClient struct {
	conn     net.Conn
	wmu      sync.Mutex
	ttyMu    sync.Mutex
	tty      *os.File
	detached bool
	// ended is set once the host said how the agent ended.
	ended bool
	// checkpointed and checkpointAnswered, when set, are told of every
	// checkpoint the host's jail wrote and of its answer to every request.
	checkpointed       func(sandbox.Checkpoint)
	checkpointAnswered func(trigger string)
}

// dialAgentHost connects to the agent host listening on sock.
func dialAgentHost(sock string) (*hostClient, error) {
	c, err := sandbox.DialUnix(sock)
	if err != nil {
		return nil, fmt.Errorf("connect to the agent at %s: %w", sock, err)
	}
	return &hostClient{conn: c}, nil
}

func (c *hostClient) send(typ byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(c.conn, typ, p)
}

// resize sends the size of the app's pty to the host.
func (c *hostClient) resize() {
	c.ttyMu.Lock()
	tty := c.tty
	c.ttyMu.Unlock()
	if tty == nil {
		return
	}
	var ws *unix.Winsize
	raw, err := tty.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) { ws, err = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) })
	if err != nil || ws == nil {
		return
	}
	var p [4]byte
	binary.BigEndian.PutUint16(p[:], ws.Col)
	binary.BigEndian.PutUint16(p[2:], ws.Row)
	_ = c.send(frameResize, p[:])
}

// detach leaves the agent running and closes the connection.
func (c *hostClient) detach() error {
	c.wmu.Lock()
	c.detached = true
	c.wmu.Unlock()
	return c.conn.Close()
}

func (c *hostClient) isDetached() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.detached
}

// errDetached ends the agent phase of an app that detached.
var errDetached = errors.New("detached: the agent keeps running")

// relay moves bytes between tty (the app's pty) and the host until the
// agent ends or the app detaches. Cancelling ctx stops the agent.
func (c *hostClient) relay(ctx context.Context, tty *os.File) (AgentResult, error) {
	if err := makeRaw(tty); err != nil {
		return AgentResult{ExitCode: -1}, err
	}
	c.ttyMu.Lock()
	c.tty = tty
	c.ttyMu.Unlock()
	defer func() {
		c.ttyMu.Lock()
		c.tty = nil
		c.ttyMu.Unlock()
		c.conn.Close()
	}()
	c.resize()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			if n > 0 && c.send(frameData, buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			if !c.isDetached() {
				_ = c.send(frameStop, nil)
			}
		case <-done:
		}
	}()
	r := bufio.NewReader(c.conn)
	for {
		typ, p, err := readFrame(r)
		if err != nil {
			if c.isDetached() {
				return AgentResult{ExitCode: -1}, errDetached
			}
			return AgentResult{ExitCode: -1}, fmt.Errorf("lost the connection to the agent (it may still run: shadow tui --attach): %w", err)
		}
		switch typ {
		case frameData:
			if _, err := tty.Write(p); err != nil {
				return AgentResult{ExitCode: -1}, fmt.Errorf("relay the agent's output: %w", err)
			}
		case frameBusy:
			b := &BusyError{}
			if len(p) > 0 {
				var a AttachedApp
				if json.Unmarshal(p, &a) == nil && a.PID > 0 {
					b.Holder = &a
				}
			}
			return AgentResult{ExitCode: -1}, b
		case frameCheckpointed:
			var cp sandbox.Checkpoint
			if err := json.Unmarshal(p, &cp); err == nil && c.checkpointed != nil {
				c.checkpointed(cp)
			}
		case frameCheckpointAnswered:
			if c.checkpointAnswered != nil {
				c.checkpointAnswered(string(p))
			}
		case frameExit:
			c.ended = true
			var ex hostExit
			if err := json.Unmarshal(p, &ex); err != nil {
				return AgentResult{ExitCode: -1}, fmt.Errorf("read the agent's end: %w", err)
			}
			res := AgentResult{ExitCode: ex.ExitCode, Reason: ex.Reason, Notes: ex.Notes, Duration: ex.Duration}
			if ex.Err != "" {
				return res, errors.New(ex.Err)
			}
			return res, nil
		}
	}
}

// makeRaw puts tty in raw mode, so that bytes pass the app's pty unchanged
// on their way between the pane and the agent host.
func makeRaw(tty *os.File) error {
	raw, err := tty.SyscallConn()
	if err != nil {
		return fmt.Errorf("set the agent's pty raw: %w", err)
	}
	// Fd would put tty in blocking mode, and a blocked read would then
	// outlive its Close.
	var cerr error
	if err := raw.Control(func(fd uintptr) { cerr = setRaw(int(fd)) }); err != nil {
		return fmt.Errorf("set the agent's pty raw: %w", err)
	}
	return cerr
}

// setRaw clears the line discipline's processing on fd.
func setRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("set the agent's pty raw: %w", err)
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return fmt.Errorf("set the agent's pty raw: %w", err)
	}
	return nil
}
