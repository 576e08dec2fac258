package agenthost

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/runner"
)

// Main is the agent host: it reads its spec from fd 3, takes the
// project's writer lock, records the run in the session, starts the agent
// in the jail on a pty, reports on fd 4 that the socket is ready, and relays
// the pty to one client at a time until the agent ends. The run's record
// names this process, so the session counts the run as active (apply and
// discard refuse) for as long as the agent host lives. It returns the
// process's exit status.
//
// The host runs in a session of its own, with no terminal: SIGHUP means nothing to it and is
// ignored. The hang-up of an attached app's terminal reaches it as that app's stop (the app
// stops the agent as `shadow run` stops its command); only a detach leaves the agent running.
// SIGTERM and SIGINT stop the agent, after the jail's last checkpoint.
func Main() int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
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
	go func() { <-sigs; h.stop() }()
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
	state State
	// asked are the questions of the jail's proxy still open, by id; lastAsk is the latest id.
	asked   map[uint64]*openQuestion
	lastAsk uint64
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
func writeHostState(dir string, st State) error {
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
	op, err := runner.Open(st, runner.OpenOptions{Project: spec.Project, ID: spec.SessionID, Wait: true, Command: "tui (agent)",
		Protected: spec.Protected})
	if err != nil {
		return nil, err
	}
	lk, s := op.Lock, op.Session
	fail := func(err error) (*agentHost, error) { lk.Release(); return nil, err }
	dir := hostDir(s)
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
	h := &agentHost{ln: ln, master: master, dir: dir, ended: make(chan struct{}), requests: make(chan string, 8)}
	// The jail gets the user's signals as a command outside it would.
	// They are relayed for as long as the run goes, which is past this function's return.
	relay := make(chan os.Signal, 8)
	signal.Notify(relay, sandbox.RelayedSignals()...)
	w := runner.Wiring{Stdin: tty, Stdout: tty, Stderr: tty, Warnings: tty, Signals: relay,
		CheckpointRequests: h.requests, Checkpointed: h.checkpointed, CheckpointAnswered: h.checkpointAnswered}
	if spec.Ask {
		w.AskNetwork = h.askNetwork
	}
	run, err := runner.Begin(s, spec.Policy, spec.Argv, w, runner.Options{StateRoot: spec.StateRoot})
	if err != nil {
		signal.Stop(relay)
		closeAll()
		return fail(fmt.Errorf("session %s: %w", s.ID(), err))
	}
	h.state = State{PID: os.Getpid(), Socket: sock, SessionID: s.ID(), Argv: spec.Argv,
		Started: time.Now().UTC(), Layers: spec.Layers}
	if err := writeHostState(dir, h.state); err != nil {
		signal.Stop(relay)
		closeAll()
		_ = run.Abandon()
		return fail(fmt.Errorf("agent host: write %s: %w", hostStatePath(dir), err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel

	outputDone := make(chan struct{})
	go h.copyOutput(outputDone)
	go func() {
		out := run.Jail(ctx)
		signal.Stop(relay)
		tty.Close()
		select {
		case <-outputDone:
		case <-time.After(2 * time.Second):
		}
		lk.Release()
		ex := Exit{ExitCode: out.Code, Reason: out.Result.StopReason, Notes: out.Notes(), Duration: out.Result.Duration}
		if out.JailErr != nil {
			ex.Err = out.JailErr.Error()
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
func (h *agentHost) finish(ex Exit) {
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
	h.sendQuestionsLocked()
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
		case frameAnswer:
			h.answered(p)
		case frameCheckpoint:
			// A client asks only for the checkpoints a user takes (a prompt's with its line).
			if t, _ := sandbox.SplitRequest(string(p)); t == sandbox.CheckpointPrompt || t == sandbox.CheckpointManual {
				select {
				case h.requests <- string(p):
				default:
				}
			}
		}
	}
}
