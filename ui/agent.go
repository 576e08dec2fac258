package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/creack/pty"

	"github.com/shadow-sandbox/shadow/ui/pane"
	"github.com/shadow-sandbox/shadow/ui/screen"
)

// Pacing of the redraws caused by agent output. A flood of output costs at most one frame per
// frameInterval; the first frameBurst frames after a quiet spell come at once, since an agent
// draws the echo of a key in a few writes a few milliseconds apart (codex in three to five):
// pacing the second write a frame after the first delayed every echo by up to a frame.
const (
	frameInterval = time.Second / 60
	frameBurst    = 4
)

// agentRun is one running agent: the host side of its pty and the
// goroutines moving bytes between the pty and the pane.
type agentRun struct {
	master *os.File // nil for a hosted agent, whose terminal is the pane
	cancel context.CancelFunc
	// dirty is signalled (without blocking) when output changed the pane.
	dirty chan struct{}
	// exited delivers how the agent ended, once.
	exited chan agentExitMsg
	// outputDone is closed when the pty has no more output.
	outputDone chan struct{}
	// done is closed when the agent's function has returned.
	done chan struct{}
	// pace spaces the frames waitFrame reports (only the one waitFrame running at a time reads
	// or writes it).
	pace screen.Pacer
}

// framePace is the pace of an agent's frames.
func framePace() screen.Pacer { return screen.Pacer{Interval: frameInterval, Burst: frameBurst} }

// Messages of the agent phase.
type (
	agentStartedMsg     struct{ run *agentRun }
	agentStartFailedMsg struct{ err error }
	agentExitMsg        struct {
		res AgentResult
		err error
	}
	frameMsg struct{ run *agentRun }
)

// startAgent starts the agent of opts (see startHosted for a hosted one), on a pty of the
// pane's size that it opens, and the goroutines that feed its output to the pane and the
// pane's input to it.
func startAgent(ctx context.Context, opts Options, p *Pane, w, h int) tea.Cmd {
	if opts.Hosted != nil {
		return startHosted(ctx, opts.Hosted, p)
	}
	agent := opts.Agent
	return func() tea.Msg {
		master, tty, err := pty.Open()
		if err != nil {
			return agentStartFailedMsg{err: fmt.Errorf("open a pty for the agent: %w", err)}
		}
		if err := pty.Setsize(master, &pty.Winsize{Cols: uint16(w), Rows: uint16(h)}); err != nil {
			master.Close()
			tty.Close()
			return agentStartFailedMsg{err: fmt.Errorf("size the agent's pty: %w", err)}
		}
		ctx, cancel := context.WithCancel(ctx)
		r := &agentRun{
			master:     master,
			cancel:     cancel,
			dirty:      make(chan struct{}, 1),
			exited:     make(chan agentExitMsg, 1),
			outputDone: make(chan struct{}),
			done:       make(chan struct{}),
			pace:       framePace(),
		}
		go r.copyOutput(p)
		go r.copyInput(ctx, p)
		go func() {
			res, err := agent(ctx, tty)
			close(r.done)
			// The agent has ended: closing our copy of its tty lets the
			// output drain to EOF.
			tty.Close()
			select {
			case <-r.outputDone:
			case <-time.After(2 * time.Second):
			}
			cancel()
			master.Close()
			r.exited <- agentExitMsg{res: res, err: err}
		}()
		return agentStartedMsg{run: r}
	}
}

// startHosted starts an agent host's client with the pane as its terminal: a key goes from the
// pane's input queue to the host's socket, and the agent's output from the socket to the pane's
// feeder, with no pty in between (a pty costs a wakeup of the kernel's worker each way, which
// on a loaded machine took milliseconds, at times tens).
func startHosted(ctx context.Context, agent HostedFunc, p *Pane) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithCancel(ctx)
		r := &agentRun{
			cancel:     cancel,
			dirty:      make(chan struct{}, 1),
			exited:     make(chan agentExitMsg, 1),
			outputDone: make(chan struct{}),
			done:       make(chan struct{}),
			pace:       framePace(),
		}
		out := newOutput(p, func() int {
			_, h := p.Size()
			return max(compactRows, h)
		})
		go func() {
			defer close(r.outputDone)
			out.feed(p, r.dirty)
		}()
		go func() {
			res, err := agent(ctx, &paneTerminal{p: p, out: out, done: r.done})
			close(r.done)
			out.put(nil, true)
			select {
			case <-r.outputDone:
			case <-time.After(2 * time.Second):
			}
			cancel()
			r.exited <- agentExitMsg{res: res, err: err}
		}()
		return agentStartedMsg{run: r}
	}
}

// paneTerminal is the pane as the terminal of a hosted agent (agenthost.Terminal): Read takes
// the pane's input, Write puts output for the pane's feeder, Size is the pane's.
type paneTerminal struct {
	p   *Pane
	out *output
	// done is closed when the agent's function has returned: Read then ends.
	done <-chan struct{}
	rest []byte // of the input taken last, what Read has not returned yet
}

func (t *paneTerminal) Read(b []byte) (int, error) {
	if len(t.rest) == 0 {
		select {
		case t.rest = <-t.p.Input():
		case <-t.done:
			return 0, io.EOF
		}
	}
	n := copy(b, t.rest)
	t.rest = t.rest[n:]
	return n, nil
}

func (t *paneTerminal) Write(b []byte) (int, error) {
	t.out.put(b, false)
	return len(b), nil
}

func (t *paneTerminal) Size() (int, int, error) {
	w, h := t.p.Size()
	return w, h, nil
}

// Bounds on the agent output waiting for the pane.
const (
	// maxBacklog is how much agent output may wait for the pane before it
	// is compacted (and, what cannot be compacted, before the agent's
	// writes block). Compacting is done on the reader's path, while the
	// agent's writes wait: a frame's worth of the fastest flood a pty
	// carries here (~90 MB/s, 1.5 MB a frame) stays under it.
	maxBacklog = 2 << 20
	// compactRows is the fewest rows compacted output is kept right for,
	// as the pane may grow between compacting and feeding. Should it grow
	// past them, its top rows show older lines until the flood has drawn
	// a screenful more.
	compactRows = 64
	// readSize is the most one read of the pty takes.
	readSize = 32 << 10
	// floodBatch and gatherBytes: after a batch of floodBatch bytes or
	// more, the next batch gathers until a frame has passed since that
	// one was fed, or until gatherBytes wait. The pane is drawn once a
	// frame, so feeding a flood more often only costs more: a batch pays
	// for a screenful of lines, however many it holds (see coalesceLines).
	// Smaller output, such as the echo of a key, is fed as it comes.
	floodBatch  = 1 << 10
	gatherBytes = 512 << 10
)

// copyOutput feeds the agent's output from its pty to the pane and marks it
// dirty: one goroutine reads the pty while another feeds the pane (output).
func (r *agentRun) copyOutput(p *Pane) {
	out := newOutput(p, func() int {
		if ws, err := pty.GetsizeFull(r.master); err == nil {
			return max(compactRows, int(ws.Rows)) // the pane's size, told to the agent
		}
		return compactRows
	})
	go func() {
		buf := make([]byte, readSize)
		for {
			n, err := r.master.Read(buf)
			out.put(buf[:n], err != nil)
			if err != nil {
				return
			}
		}
	}()
	defer close(r.outputDone)
	out.feed(p, r.dirty)
}

// output is the agent's output on its way to the pane: what is read (from the agent's pty, or
// from an agent host's socket) is put in a backlog while the pane is fed the one before, so
// that output arriving while the pane is busy is fed in one batch: a flood of lines then costs
// the pane a screenful per batch rather than per line. When the pane falls behind by
// maxBacklog, the waiting output is compacted (the lines that would scroll off unseen are
// dropped, see pane.Compact) rather than the agent's writes blocked; only output that cannot be
// compacted blocks them.
type output struct {
	mu   sync.Mutex
	cond *sync.Cond
	// The output waiting for the pane is put into one buffer while the
	// other is fed. Both are made at the most that may wait plus one read
	// when the agent starts: growing them during a flood cost the reader
	// copies and page faults while the agent waited on it.
	backlog, spare []byte
	compacted      []byte
	eof            bool
	// The pane's clamp state where the backlog starts, which compacting
	// needs: base, or while a batch is being fed, inflightBase (where the
	// batch starts) carried over the batch.
	base         pane.State
	inflight     []byte
	inflightBase pane.State
	// rows is the pane's height as the agent was told it.
	rows func() int
}

func newOutput(p *Pane, rows func() int) *output {
	o := &output{
		backlog: make([]byte, 0, maxBacklog+readSize),
		spare:   make([]byte, 0, maxBacklog+readSize),
		base:    p.State(),
		rows:    rows,
	}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// put adds b to the backlog; with eof, the output ends after it.
func (o *output) put(b []byte, eof bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.backlog = append(o.backlog, b...)
	if len(o.backlog) >= maxBacklog && !eof {
		st := o.base.Clone()
		if o.inflight != nil {
			st = o.inflightBase.Clone()
			st.Advance(o.inflight)
		}
		o.compacted = pane.Compact(o.compacted[:0], o.backlog, st, o.rows())
		o.backlog = append(o.backlog[:0], o.compacted...)
		// What compacting cannot shrink enough waits for the pane.
		for len(o.backlog) >= maxBacklog*3/4 {
			o.cond.Wait()
		}
	}
	if eof {
		o.eof = true
	}
	o.cond.Broadcast()
}

// feed feeds the backlog to p, a batch at a time, signalling dirty after each, until the output
// has ended.
func (o *output) feed(p *Pane, dirty chan<- struct{}) {
	var (
		fed  time.Time // when the last batch was fed
		last int       // and its size
	)
	for {
		o.mu.Lock()
		for len(o.backlog) == 0 && !o.eof {
			o.cond.Wait()
		}
		if wait := frameInterval - time.Since(fed); !o.eof && last >= floodBatch && len(o.backlog) < gatherBytes && wait > 0 {
			o.mu.Unlock()
			time.Sleep(wait)
			o.mu.Lock()
		}
		fed = time.Now()
		data, done := o.backlog, o.eof
		last = len(data)
		o.backlog, o.spare = o.spare[:0], nil
		o.inflight, o.inflightBase = data, o.base
		o.cond.Broadcast()
		o.mu.Unlock()
		if len(data) > 0 {
			_, _ = p.Write(data)
			select {
			case dirty <- struct{}{}:
			default:
			}
		}
		end := p.State()
		o.mu.Lock()
		o.base, o.inflight = end, nil
		o.spare = data // the next batch is put into it
		o.mu.Unlock()
		if done {
			return
		}
	}
}

// copyInput writes keys, pastes and query replies from the pane to the
// agent until the agent ends.
func (r *agentRun) copyInput(ctx context.Context, p *Pane) {
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-p.Input():
			if _, err := r.master.Write(b); err != nil && !errors.Is(err, io.ErrShortWrite) {
				return
			}
		}
	}
}

// waitFrame returns a frame message when the pane changed: at once for the
// first frameBurst frames after a quiet spell, then once per frameInterval.
// The pause is taken before waiting for a change, not after it: the echo of
// a key, which comes after a quiet spell, is drawn at once (a pause after
// each change delayed every echo by a frame).
func waitFrame(r *agentRun) tea.Cmd {
	return func() tea.Msg {
		if wait := r.pace.Wait(time.Now()); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case <-r.dirty:
		case <-r.outputDone:
			select {
			case <-r.dirty:
			default:
				return nil
			}
		}
		r.pace.Take(time.Now())
		return frameMsg{run: r}
	}
}

// waitAgent returns the agent's end.
func waitAgent(r *agentRun) tea.Cmd {
	return func() tea.Msg { return <-r.exited }
}

// stopAgent cancels the agent's context: the jail is stopped like a timeout.
func stopAgent(r *agentRun) tea.Cmd {
	if r == nil {
		return nil
	}
	return func() tea.Msg {
		r.cancel()
		return nil
	}
}

// resizePty gives the agent's pty the pane's new size.
func resizePty(r *agentRun, w, h int, notify func()) tea.Cmd {
	return func() tea.Msg {
		// A hosted agent's terminal is the pane, whose size notify tells its host.
		if r.master != nil {
			if err := pty.Setsize(r.master, &pty.Winsize{Cols: uint16(w), Rows: uint16(h)}); err != nil {
				return nil // the agent has ended
			}
		}
		if notify != nil {
			notify()
		}
		return nil
	}
}
