package agenthost

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
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
)

// BusyError says that another app is attached to the agent, and which.
type BusyError struct {
	Holder *AttachedApp // nil when the host did not say
	// Advice says what can be done, in the app's keys (Client.BusyAdvice).
	Advice string
}

// Error says who holds the agent and what can be done.
func (e *BusyError) Error() string {
	who := "another shadow tui"
	if e.Holder != nil {
		who += " (" + e.Holder.String() + ")"
	}
	if e.Advice == "" {
		return who + " is attached to this agent"
	}
	return who + " is attached to this agent; " + e.Advice
}

// IsBusy reports whether err says that another app holds the agent.
func IsBusy(err error) bool {
	var b *BusyError
	return errors.As(err, &b)
}

// Start starts `shadow __agent-host` in its own session for argv
// over s and waits until its socket is ready. With ask, the host puts the requests its jail's
// proxy has off the allow-list to the attached app (Client.Asked).
func Start(st *session.Store, s *session.Session, p sandbox.Policy, protected, argv []string, layers []Layer, cols, rows int, ask bool) error {
	spec := hostSpec{StateRoot: st.Root, Project: s.Project(), SessionID: s.ID(), Policy: p, Argv: argv,
		Cols: cols, Rows: rows, Layers: layers, Protected: protected, Ask: ask}
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
	cmd := exec.Command("/proc/self/exe", Arg)
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

// Client is the app's connection to an agent host.
type Client struct {
	conn     net.Conn
	wmu      sync.Mutex
	termMu   sync.Mutex
	term     Terminal
	detached bool
	// ended is set once the host said how the agent ended.
	ended bool
	// BusyAdvice is what a BusyError says can be done about an agent another app holds.
	BusyAdvice string
	// checkpointed and checkpointAnswered, when set, are told of every
	// checkpoint the host's jail wrote and of its answer to every request.
	Checkpointed       func(sandbox.Checkpoint)
	CheckpointAnswered func(trigger string)
	// Asked, when set, is given every question of the jail's proxy about a request off its
	// allow-list (answer it with Answer); AskDone is told when one is no longer open. They are
	// called from Relay's loop and must not block.
	Asked   func(Question)
	AskDone func(id uint64)
}

// Dial connects to the agent host listening on sock.
func Dial(sock string) (*Client, error) {
	c, err := sandbox.DialUnix(sock)
	if err != nil {
		return nil, fmt.Errorf("connect to the agent at %s: %w", sock, err)
	}
	return &Client{conn: c}, nil
}

func (c *Client) send(typ byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(c.conn, typ, p)
}

// Terminal is the app's end of the agent's terminal as Relay moves it: what the user types is
// read from it, the agent's output is written to it, and Size is the size the agent's pty takes.
// The app's pane is one (no pty of the app's between the pane and the host); PTY makes one of
// a pty's slave side.
type Terminal interface {
	io.ReadWriter
	Size() (cols, rows int, err error)
}

// PTY is the slave side of a pty that the app reads, as a Terminal: set raw, so that bytes pass
// it unchanged on their way between the app and the host.
func PTY(tty *os.File) (Terminal, error) {
	if err := makeRaw(tty); err != nil {
		return nil, err
	}
	return ptyTerminal{tty}, nil
}

type ptyTerminal struct{ *os.File }

// Size is the pty's size.
func (t ptyTerminal) Size() (int, int, error) {
	raw, err := t.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	// Fd would put the pty in blocking mode, and a blocked read would then outlive its Close.
	var ws *unix.Winsize
	if cerr := raw.Control(func(fd uintptr) { ws, err = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) }); cerr != nil {
		return 0, 0, cerr
	}
	if err != nil {
		return 0, 0, err
	}
	return int(ws.Col), int(ws.Row), nil
}

// Resize sends the size of the app's terminal to the host.
func (c *Client) Resize() {
	c.termMu.Lock()
	term := c.term
	c.termMu.Unlock()
	if term == nil {
		return
	}
	cols, rows, err := term.Size()
	if err != nil {
		return
	}
	var p [4]byte
	binary.BigEndian.PutUint16(p[:], uint16(cols))
	binary.BigEndian.PutUint16(p[2:], uint16(rows))
	_ = c.send(frameResize, p[:])
}

// detach leaves the agent running and closes the connection.
func (c *Client) Detach() error {
	c.wmu.Lock()
	c.detached = true
	c.wmu.Unlock()
	return c.conn.Close()
}

// Ended reports whether the host said how the agent ended.
func (c *Client) Ended() bool { return c.ended }

// RequestCheckpoint asks the host's jail for a checkpoint; trigger says what took it
// (sandbox.CheckpointPrompt or sandbox.CheckpointManual).
func (c *Client) RequestCheckpoint(trigger string) error {
	return c.send(frameCheckpoint, []byte(trigger))
}

func (c *Client) isDetached() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.detached
}

// ErrDetached ends the agent phase of an app that detached.
var ErrDetached = errors.New("detached: the agent keeps running")

// Relay moves bytes between term (the app's end of the agent's terminal) and the host until
// the agent ends or the app detaches. Cancelling ctx stops the agent.
func (c *Client) Relay(ctx context.Context, term Terminal) (Exit, error) {
	c.termMu.Lock()
	c.term = term
	c.termMu.Unlock()
	defer func() {
		c.termMu.Lock()
		c.term = nil
		c.termMu.Unlock()
		c.conn.Close()
	}()
	c.Resize()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := term.Read(buf)
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
				return Exit{ExitCode: -1}, ErrDetached
			}
			return Exit{ExitCode: -1}, fmt.Errorf("lost the connection to the agent (it may still run: shadow tui --attach): %w", err)
		}
		switch typ {
		case frameData:
			if _, err := term.Write(p); err != nil {
				return Exit{ExitCode: -1}, fmt.Errorf("relay the agent's output: %w", err)
			}
		case frameBusy:
			b := &BusyError{Advice: c.BusyAdvice}
			if len(p) > 0 {
				var a AttachedApp
				if json.Unmarshal(p, &a) == nil && a.PID > 0 {
					b.Holder = &a
				}
			}
			return Exit{ExitCode: -1}, b
		case frameCheckpointed:
			var cp sandbox.Checkpoint
			if err := json.Unmarshal(p, &cp); err == nil && c.Checkpointed != nil {
				c.Checkpointed(cp)
			}
		case frameCheckpointAnswered:
			if c.CheckpointAnswered != nil {
				c.CheckpointAnswered(string(p))
			}
		case frameAsk:
			c.asked(p)
		case frameAskDone:
			c.askDone(p)
		case frameExit:
			c.ended = true
			var ex Exit
			if err := json.Unmarshal(p, &ex); err != nil {
				return Exit{ExitCode: -1}, fmt.Errorf("read the agent's end: %w", err)
			}
			if ex.Err != "" {
				return ex, errors.New(ex.Err)
			}
			return ex, nil
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
