package sandbox

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/termfilter"
)

// The command's standard streams in PID 1: a pty of the jail's own, or the host's pipes, and
// the relays between them and the host's.

// commandStdio is what the command gets as descriptors 0, 1 and 2, and how
// PID 1 relays them.
type commandStdio struct {
	files  [3]*os.File     // the command's ends
	master *os.File        // the pty's master, when the command has a terminal
	relays []func()        // started once the command runs
	done   []chan struct{} // closed when an output relay has drained
}

// newCommandStdio gives the command a pty of the jail's own devpts when any
// of PID 1's standard streams is a terminal. Otherwise the command gets
// PID 1's pipes and sockets as they are, and a relayed pipe in place of
// anything else (a host file, the host's /dev/null): a host file can be
// neither reopened through /dev/stdout under Landlock (its path is outside
// the jail) nor should it be in the jail's hands.
func newCommandStdio() (*commandStdio, error) {
	c := &commandStdio{}
	if isTerminal(0) || isTerminal(1) || isTerminal(2) {
		m, sl, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("allocate pty: %w", err)
		}
		c.master = m
		c.files = [3]*os.File{sl, sl, sl}
		resizePTY(m)
		c.relays = append(c.relays, func() { c.done = append(c.done, relayPTY(m)) })
		return c, nil
	}
	host := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	for fd, f := range host {
		if isPipeOrSocket(fd) {
			c.files[fd] = f
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("pipe for fd %d: %w", fd, err)
		}
		if fd == 0 {
			c.files[0] = r
			c.relays = append(c.relays, func() {
				go func() {
					_, _ = io.Copy(w, f)
					w.Close()
				}()
			})
			continue
		}
		c.files[fd] = w
		done := make(chan struct{})
		c.done = append(c.done, done)
		c.relays = append(c.relays, func() {
			go func() {
				defer close(done)
				_, _ = io.Copy(f, r)
			}()
		})
	}
	return c, nil
}

// relay closes PID 1's copies of the command's ends and starts relaying.
func (c *commandStdio) relay() {
	host := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	for fd, f := range c.files {
		if f != host[fd] && (fd == 0 || f != c.files[fd-1]) {
			f.Close()
		}
	}
	for _, r := range c.relays {
		r()
	}
}

// drain waits (a little) for the command's last output to be relayed (the
// pty's relay ends by undoing the terminal modes the command left set).
func (c *commandStdio) drain() {
	timeout := time.After(time.Second)
	for _, d := range c.done {
		select {
		case <-d:
		case <-timeout:
		}
	}
}

// isPipeOrSocket reports whether fd is a pipe or a socket.
func isPipeOrSocket(fd int) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	t := st.Mode & unix.S_IFMT
	return t == unix.S_IFIFO || t == unix.S_IFSOCK
}

// relayPTY copies the user's input to the pty and the pty's output, through
// the terminal filter, to the user, then undoes the modes the command left
// set on the user's terminal. The returned channel closes when that is done.
func relayPTY(master *os.File) chan struct{} {
	// Fd puts the master in blocking mode: a read of the command's output then waits in the
	// kernel, in a thread of its own, instead of going round the runtime's poller, which cost
	// a wakeup more for every read (SPEC §9's relay; resizePTY did it too, but only where the
	// user's terminal has a size).
	master.Fd()
	go func() { _, _ = io.Copy(master, os.Stdin) }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := termfilter.New(os.Stdout)
		f.AnswerTo(master) // DA1, which the filter drops and programs wait on
		_, _ = io.Copy(f, master)
		_ = f.Flush()
		// Only what the command left set: a reset it did not need has
		// effects of its own (ESC[?1049l off the alternate screen puts the
		// cursor back where an earlier program saved it, in tmux and
		// xterm, and what follows is written over the command's output).
		if isTerminal(1) {
			_, _ = os.Stdout.Write(f.Restore())
		}
	}()
	return done
}

// resizePTY gives the pty the size of the user's terminal.
func resizePTY(master *os.File) {
	for _, fd := range []int{0, 1, 2} {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil && ws.Row > 0 {
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, ws)
			return
		}
	}
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
