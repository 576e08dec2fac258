package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// interrupts catches signals that ask shadow to stop while work that must not be cut short runs:
// the context is cancelled at the first one, and the work decides how to end (an apply is
// finished or undone, a run's jail is stopped).
type interrupts struct {
	ctx    context.Context
	cancel context.CancelFunc
	stopc  chan os.Signal
	mu     sync.Mutex
	sig    syscall.Signal
}

// catchInterrupts starts catching sigs (none given: SIGINT, SIGTERM and SIGHUP); stop gives
// them their default action back.
func catchInterrupts(parent context.Context, sigs ...os.Signal) *interrupts {
	if parent == nil {
		parent = context.Background()
	}
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	}
	in := &interrupts{stopc: make(chan os.Signal, 4)}
	in.ctx, in.cancel = context.WithCancel(parent)
	signal.Notify(in.stopc, sigs...)
	go func() {
		for {
			select {
			case s := <-in.stopc:
				in.mu.Lock()
				if in.sig == 0 {
					in.sig = s.(syscall.Signal)
				}
				in.mu.Unlock()
				in.cancel()
			case <-in.ctx.Done():
				return
			}
		}
	}()
	return in
}

// Context is cancelled when a signal arrives.
func (in *interrupts) Context() context.Context { return in.ctx }

// Signal is the first signal caught, 0 when none was.
func (in *interrupts) Signal() syscall.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// stop stops catching.
func (in *interrupts) stop() {
	signal.Stop(in.stopc)
	in.cancel()
}

// outliveClosedOutput turns a write to a closed pipe (`shadow apply --yes | head -0`) into an
// error that the write returns, where by default SIGPIPE would kill shadow between two steps of
// work that must not be cut short: the apply and its commit are finished, only the lines are
// lost. A caught signal is back at its default in every program shadow starts, so git and the
// jail see SIGPIPE as usual.
func outliveClosedOutput() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// signalName is a signal as a user knows it: "SIGINT (Ctrl+C)", "SIGTERM".
func signalName(sig syscall.Signal) string {
	name := unix.SignalName(sig)
	if name == "" {
		name = sig.String()
	}
	if sig == syscall.SIGINT {
		name += " (Ctrl+C)"
	}
	return name
}
