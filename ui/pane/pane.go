// Package pane is the agent's terminal as a component of the app: the bytes
// the agent writes drive a terminal emulator (charmbracelet/x/vt), and the
// pane is drawn from the emulator's cells, so nothing the agent writes
// (clipboard, title, hyperlinks, queries) ever reaches the real terminal.
// Keys, pastes and mouse events are encoded for the agent as a terminal
// would, and the emulator's replies to the agent's queries are drained
// continuously onto the same input queue.
//
// What the agent writes is read first by the clamp (clamp.go) with the
// tokenizer the relay's filter uses, so that no sequence in any form costs
// the emulator more than a line feed; a flood of plain lines is coalesced
// (coalesce.go) so that it costs a screenful per write, not a scroll per
// line. The emulator is fed a KB at a time under the pane's lock (feed.go),
// so keys and frames interleave with any output.
package pane

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/x/vt"
)

// Bounds on what one write of agent output may cost.
const (
	// paneChunk is the most bytes the emulator parses under the pane's lock
	// at once, so input and drawing interleave with a flood of output.
	paneChunk = 1 << 10
	// maxParam is the largest numeric parameter of a control sequence that
	// reaches the emulator; larger counts are clamped (a repeat of 2^31
	// characters would otherwise keep it busy for minutes).
	maxParam = 9999
	// maxSeq is the longest control sequence (CSI) passed on whole; a longer
	// one is dropped.
	maxSeq = 256
	// inputQueue is how many writes to the agent (keys, pastes, replies to
	// its terminal queries) wait while the agent does not read them.
	inputQueue = 1024
)

// Model is the pane. Its copies share one terminal: the agent's output is
// written to it from another goroutine while the app draws it.
type Model struct {
	*term
	keys KeyMap
}

// term is the emulator and what feeds it, behind the pane's lock.
type term struct {
	mu     sync.Mutex
	emu    *vt.Emulator
	width  int
	height int
	clamp  clamper
	// filtered holds a chunk of output after the clamp, reused.
	filtered []byte

	// gen counts the changes to the emulator's state (writes, resizes,
	// resets), so a write worked out from a snapshot knows it is stale.
	gen uint64
	// coalesce lets a flood of plain lines skip the ones that scroll off
	// before they could be seen (see coalesceWrite).
	coalesce bool

	// offset is how many lines back from the live view the pane shows.
	offset int

	// wmu serializes writes, which reuse bufs to coalesce.
	wmu  sync.Mutex
	bufs coalesceBufs

	in      chan []byte
	dropped atomic.Int64
	resets  atomic.Int64
	written atomic.Int64
}

// Option configures a new pane.
type Option func(*options)

type options struct {
	width, height int
	coalesce      bool
	keys          KeyMap
}

// WithSize sets the pane's size in cells (80×24 by default).
func WithSize(width, height int) Option {
	return func(o *options) { o.width, o.height = width, height }
}

// WithoutCoalescing has every line of a flood drawn as written: what the
// pane shows is the same, only slower (for comparisons).
func WithoutCoalescing() Option {
	return func(o *options) { o.coalesce = false }
}

// New returns a pane.
func New(opts ...Option) Model {
	o := options{width: 80, height: 24, coalesce: true, keys: DefaultKeyMap()}
	for _, opt := range opts {
		opt(&o)
	}
	w, h := max(1, o.width), max(1, o.height)
	p := &term{width: w, height: h, in: make(chan []byte, inputQueue), coalesce: o.coalesce}
	p.clamp.w, p.clamp.h = w, h
	p.emu = p.newEmulator(w, h)
	return Model{term: p, keys: o.keys}
}

// SetSize changes the pane's size in cells.
func (m *Model) SetSize(width, height int) { m.resize(width, height) }

// Resize is SetSize, as the app called it.
func (m *Model) Resize(width, height int) { m.resize(width, height) }

// KeyMap is the pane's keys.
func (m Model) KeyMap() KeyMap { return m.keys }

// newEmulator makes an emulator and starts draining its replies.
func (p *term) newEmulator(w, h int) *vt.Emulator {
	e := vt.NewEmulator(w, h)
	e.SetScrollbackSize(maxScrollback)
	go p.drain(e)
	return e
}

// drain moves what the emulator produces for the agent (encoded keys,
// pastes, replies to queries) onto the input queue until the emulator is
// retired. It never blocks on the agent: when the queue is full, the bytes
// are dropped and counted, so a flood of queries cannot stall the emulator.
func (p *term) drain(e *vt.Emulator) {
	buf := make([]byte, 4096)
	for {
		n, err := e.Read(buf)
		if n > 0 {
			b := append([]byte(nil), buf[:n]...)
			select {
			case p.in <- b:
			default:
				p.dropped.Add(int64(n))
			}
		}
		if err != nil {
			return
		}
	}
}

// retire stops an emulator's drain goroutine without touching the
// emulator's own state.
func retire(e *vt.Emulator) {
	if c, ok := e.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
}

// Close stops the pane's reply drain; the pane must not be used after.
func (p *term) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	retire(p.emu)
}

// Hold takes the pane's lock until the returned function is called: no
// output is fed and no frame drawn meanwhile, as when the pane is slow (for
// tests of what waits on it).
func (p *term) Hold() (release func()) {
	p.mu.Lock()
	return p.mu.Unlock
}

// Input is the queue of bytes for the agent's terminal input.
func (p *term) Input() <-chan []byte { return p.in }

// Size is the pane's width and height in cells.
func (p *term) Size() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.width, p.height
}

// Resets counts the times the emulator failed on hostile output and was
// replaced by a fresh one.
func (p *term) Resets() int64 { return p.resets.Load() }

// Dropped counts the input bytes dropped because the agent did not read.
func (p *term) Dropped() int64 { return p.dropped.Load() }

// Written counts the bytes of output the pane has taken.
func (p *term) Written() int64 { return p.written.Load() }

// State is where in a control sequence or string the output fed to the
// pane so far left off: what output waiting to be fed is read from (see
// Compact).
type State struct {
	c       clamper
	scratch []byte
}

// State is the clamp's state after the output fed so far.
func (p *term) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return State{c: p.clamp.clone()}
}

// Clone is a copy of s that shares nothing with it.
func (s State) Clone() State { return State{c: s.c.clone()} }

// Advance moves s past output b, as feeding b to the pane would.
func (s *State) Advance(b []byte) { s.scratch = s.c.filterInto(s.scratch[:0], b) }

// Compact appends to dst output b, waiting for a pane of at most rows rows
// whose state before it is st, with the lines dropped that the pane would
// scroll off unseen (see compactOutput).
func Compact(dst, b []byte, st State, rows int) []byte {
	return compactOutput(dst, b, st.c.clone(), rows)
}
