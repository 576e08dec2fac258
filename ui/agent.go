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
	master *os.File
	cancel context.CancelFunc
	// dirty is signalled (without blocking) when output changed the pane.
	dirty chan struct{}
	// exited delivers how the agent ended, once.
	exited chan agentExitMsg
	// outputDone is closed when the pty has no more output.
	outputDone chan struct{}
	// done is closed when the agent's function has returned.
	done chan struct{}
	// paced is when the frames waitFrame reported would have ended, each
	// taking frameInterval (only the one waitFrame running at a time reads
	// or writes it): frames pass at once while it is at most
	// frameBurst-1 intervals ahead of now.
	paced time.Time
}

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

// startAgent opens a pty of the pane's size, starts the agent on it and the
// goroutines that feed its output to the pane and the pane's input to it.
func startAgent(ctx context.Context, agent AgentFunc, p *Pane, w, h int) tea.Cmd {
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

// copyOutput feeds the agent's output to the pane and marks it dirty. One
// goroutine reads the pty while another feeds the pane, so that output
// arriving while the pane is busy is fed in one batch: a flood of lines
// then costs the pane a screenful per batch rather than per line. When the
// pane falls behind by maxBacklog, the waiting output is compacted (the
// lines that would scroll off unseen are dropped, see pane.Compact) rather
// than the agent's writes blocked; only output that cannot be compacted
// blocks them.
func (r *agentRun) copyOutput(p *Pane) {
	var (
		mu   sync.Mutex
		cond = sync.NewCond(&mu)
		// The output waiting for the pane is read into one buffer while
		// the other is fed. Both are made at the most that may wait plus
		// one read when the agent starts: growing them during a flood cost
		// the reader copies and page faults while the agent waited on it.
		backlog = make([]byte, 0, maxBacklog+readSize)
		spare   = make([]byte, 0, maxBacklog+readSize) // a fed batch's buffer, for reuse
		eof     bool
		// The pane's clamp state where the backlog starts, which compacting
		// needs: base, or while a batch is being fed, inflightBase (where
		// the batch starts) carried over the batch.
		base         = p.State()
		inflight     []byte
		inflightBase pane.State
	)
	buf := make([]byte, readSize)
	go func() {
		var compacted []byte
		for {
			n, err := r.master.Read(buf)
			mu.Lock()
			backlog = append(backlog, buf[:n]...)
			if len(backlog) >= maxBacklog && err == nil {
				st := base.Clone()
				if inflight != nil {
					st = inflightBase.Clone()
					st.Advance(inflight)
				}
				rows := compactRows
				if ws, err := pty.GetsizeFull(r.master); err == nil {
					rows = max(rows, int(ws.Rows)) // the pane's size, told to the agent
				}
				compacted = pane.Compact(compacted[:0], backlog, st, rows)
				backlog = append(backlog[:0], compacted...)
				// What compacting cannot shrink enough waits for the pane.
				for len(backlog) >= maxBacklog*3/4 {
					cond.Wait()
				}
			}
			if err != nil {
				eof = true
			}
			cond.Broadcast()
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	defer close(r.outputDone)
	var (
		fed  time.Time // when the last batch was fed
		last int       // and its size
	)
	for {
		mu.Lock()
		for len(backlog) == 0 && !eof {
			cond.Wait()
		}
		if wait := frameInterval - time.Since(fed); !eof && last >= floodBatch && len(backlog) < gatherBytes && wait > 0 {
			mu.Unlock()
			time.Sleep(wait)
			mu.Lock()
		}
		fed = time.Now()
		data, done := backlog, eof
		last = len(data)
		backlog, spare = spare[:0], nil
		inflight, inflightBase = data, base
		cond.Broadcast()
		mu.Unlock()
		if len(data) > 0 {
			_, _ = p.Write(data)
			select {
			case r.dirty <- struct{}{}:
			default:
			}
		}
		end := p.State()
		mu.Lock()
		base, inflight = end, nil
		spare = data // the next batch is read into it
		mu.Unlock()
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
		if wait := time.Until(r.paced.Add(-(frameBurst - 1) * frameInterval)); wait > 0 {
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
		if now := time.Now(); r.paced.Before(now) {
			r.paced = now
		}
		r.paced = r.paced.Add(frameInterval)
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
		if err := pty.Setsize(r.master, &pty.Winsize{Cols: uint16(w), Rows: uint16(h)}); err != nil {
			return nil // the agent has ended
		}
		if notify != nil {
			notify()
		}
		return nil
	}
}
