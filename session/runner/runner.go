// Package runner is the run sequence: a command run in the jail over a project's session, from the
// writer lock to the run's recorded end and what its summary says. `shadow run`, `shadow shell`,
// `shadow tui` and the agent host all run a command through it, so that a run ends the same way
// whichever started it: the cheap end of a run that staged nothing, the session marked incomplete
// when not all of a run's writes could be staged (and said when even that fails), the change set
// for the summary read with the run's end.
//
// It catches no signal: a caller stops the run by cancelling its context, after saying which
// signal did it (cmd/shadow and the agent host's main own the handlers).
package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/store"
)

// OpenOptions says which session a run goes into.
type OpenOptions struct {
	// Project is the project's directory.
	Project string
	// Command names the command holding the writer lock, for whoever waits on it ("run", "tui").
	Command string
	// Wait waits for the writer lock when another command holds it.
	Wait bool
	// New opens a new session even when one is open (the store refuses while it holds changes).
	New bool
	// ID, when set, continues that session (a run handed over to the agent host).
	ID string
	// Name selects the project's open session of that name, or opens one (`--session NAME`);
	// "" is the project's only open session.
	Name string
	// Protected are the config's protected paths, set on the session.
	Protected []string
}

// Opened is a session opened for a run, under its staging lock: the project's writer lock is
// given up once the session is chosen, so that other sessions of the project run meanwhile.
type Opened struct {
	Lock    *session.ProjectLock
	Session *session.Session
	// Created says the session was opened for this run.
	Created bool
	// Recovered says what the lock finished or rolled back first ("" when nothing).
	Recovered string
}

// Open takes the project's writer lock and continues its open session (or the one o.ID or
// o.Name names), or opens one, then keeps only that session's staging lock. When the lock was taken but no session could be, the lock is released and the
// Opened returned with the error holds only Recovered.
func Open(st *session.Store, o OpenOptions) (*Opened, error) {
	// The project's lock is held only while the session is chosen: a run starting beside
	// another of the project waits that moment out rather than failing (Brief).
	lk, err := st.LockProject(o.Project, store.LockOptions{Wait: o.Wait, Command: o.Command, Brief: true})
	if err != nil {
		return nil, err
	}
	op := &Opened{Lock: lk, Recovered: lk.Recovered}
	switch {
	case o.ID != "":
		op.Session, err = lk.Get(o.ID)
	case o.New:
		op.Session, err = lk.CreateNamed(o.Name)
		op.Created = true
	default:
		op.Session, op.Created, err = lk.CurrentOrCreateNamed(o.Name)
	}
	if err == nil {
		err = lk.HandOver(op.Session)
	}
	if err != nil {
		lk.Release()
		return &Opened{Recovered: op.Recovered}, err
	}
	op.Session.SetProtected(o.Protected)
	return op, nil
}

// Wiring is what a run is connected to, beside its policy: the command's streams and the
// checkpoint hooks. Nil streams are the process's own.
type Wiring struct {
	Stdin                  io.Reader
	Stdout, Stderr, Notice io.Writer
	// Warnings receives the jail's own warnings (nil: Stderr).
	Warnings io.Writer
	// Signals are relayed to the jail (sandbox.IO.Signals).
	Signals <-chan os.Signal
	// CheckpointRequests asks the jail for a checkpoint while the command runs.
	CheckpointRequests <-chan string
	// Checkpointed and CheckpointAnswered, when set, hear of every checkpoint written and of the
	// jail's answer to every request (sandbox.Policy).
	Checkpointed       func(sandbox.Checkpoint)
	CheckpointAnswered func(trigger string)
	// AskNetwork, when set, is asked about a request for a host off the allow-list
	// (sandbox.IO.AskNetwork).
	AskNetwork proxy.Asker
}

// Options are a run's settings beside its policy.
type Options struct {
	// StateRoot is shadow's state directory, named when the run's end fails for lack of space.
	StateRoot string
	// Summary reads the session's change set with the run's end, for a summary that lists it.
	Summary bool
}

// Outcome is how a run ended and what its summary needs.
type Outcome struct {
	Result sandbox.Result
	// Code is the exit status, as `shadow run` exits with it.
	Code int
	// JailErr is why the jail could not run the command (nil when it ran).
	JailErr error
	// Unchanged says the run staged nothing: its end read nothing staged.
	Unchanged bool
	// Changes is the session's change set after the run, when Options.Summary asked for it and
	// it could be read; nil when Unchanged.
	Changes *changeset.ChangeSet
	// EndErr is why the run's end could not be recorded, or its change set not read.
	EndErr error
	// Incomplete says the run's writes are not all staged, and the session is marked so.
	Incomplete bool
	// MarkErr is why the session could not be marked incomplete.
	MarkErr error
	// SessionID is the run's session; Session names it for a person (its name and ID).
	SessionID, Session string
}

// Run runs argv in the jail over s, as p allows, and records the run in s (Begin, then the jail).
// Cancelling ctx stops the command (the jail takes its last checkpoint first). Its error is a
// failure before the jail started; how the jail ended is in the Outcome.
func Run(ctx context.Context, s *session.Session, p sandbox.Policy, argv []string, w Wiring, o Options) (Outcome, error) {
	r, err := Begin(s, p, argv, w, o)
	if err != nil {
		return Outcome{SessionID: s.ID(), Session: s.Label(), Code: sandbox.ExitNoJail}, err
	}
	return r.Jail(ctx), nil
}

// Started is a run recorded as begun in its session, its jail not started yet.
type Started struct {
	s    *session.Session
	p    sandbox.Policy
	io   sandbox.IO
	argv []string
	o    Options

	mu            sync.Mutex
	staged, ended bool
	out           Outcome
}

// Begin records the start of argv's run in s: it waits for the checkpoints a dead run's jail
// still writes, records the run (the session counts it active from now on, as long as this
// process lives), and makes the jail's policy over the session's layers and checkpoints.
func Begin(s *session.Session, p sandbox.Policy, argv []string, w Wiring, o Options) (*Started, error) {
	if err := s.AwaitCheckpoints(w.Notice); err != nil {
		return nil, err
	}
	p = SessionPolicy(p, s)
	jw := sandbox.IO{Stdin: w.Stdin, Stdout: w.Stdout, Stderr: w.Stderr, Warnings: w.Warnings, Signals: w.Signals,
		CheckpointRequests: w.CheckpointRequests, CheckpointAnswered: w.CheckpointAnswered, AskNetwork: w.AskNetwork}
	if err := s.StartRun(argv); err != nil {
		return nil, err
	}
	var err error
	if p.Checkpoints, p.NextCheckpoint, err = s.Checkpointing(); err != nil {
		_ = s.EndRun(sandbox.ExitNoJail)
		return nil, err
	}
	jw.RunLayer = s.PrecaptureLayer
	r := &Started{s: s, argv: argv, o: o, out: Outcome{SessionID: s.ID(), Session: s.Label()}}
	jw.Checkpointed = func(cp sandbox.Checkpoint) {
		r.mu.Lock()
		r.staged = true
		r.mu.Unlock()
		if w.Checkpointed != nil {
			w.Checkpointed(cp)
		}
	}
	// The run's end is recorded while the jail is torn down, when the jail reports it.
	jw.Ended = func(res sandbox.Result) { r.end(res, sandbox.ExitStatus(res, nil), true) }
	r.p, r.io = p, jw
	return r, nil
}

// Abandon records the end of a run whose jail never started.
func (r *Started) Abandon() error { return r.s.EndRun(sandbox.ExitNoJail) }

// Jail runs the command in the jail and records the run's end.
func (r *Started) Jail(ctx context.Context) Outcome {
	res, jailErr := sandbox.Run(ctx, r.p, r.argv, r.io)
	code := sandbox.ExitStatus(res, jailErr)
	r.mu.Lock()
	ended := r.ended
	r.mu.Unlock()
	if !ended {
		r.end(res, code, false)
	}
	out := r.out
	out.Result, out.JailErr, out.Code = res, jailErr, code
	if res.StagingError != "" {
		// Some of what the run wrote is not staged (the state directory is full): the session
		// says so from now on, and the run does not end as a success.
		out.Incomplete = true
		out.MarkErr = r.s.MarkIncomplete(res.StagingError)
		if r.o.StateRoot != "" {
			out.Result.StagingError += " (shadow's state directory is " + r.o.StateRoot + ")"
		}
		if out.Code == 0 {
			out.Code = ExitIncomplete
		}
	}
	return out
}

// end records the run's end: cheaply when it took no checkpoint, as the jail reported it (a run
// that staged nothing reads nothing of what the session staged before, so that a run's fixed cost
// does not grow with it); without the jail's report (its PID 1 was killed, or the jail failed),
// reading it all.
func (r *Started) end(res sandbox.Result, code int, reported bool) {
	r.mu.Lock()
	staged := r.staged
	r.ended = true
	r.mu.Unlock()
	s, out := r.s, &r.out
	out.Unchanged = reported && !staged && res.StagingError == ""
	switch {
	case out.Unchanged:
		out.EndErr = s.EndRunUnchanged(code)
	case r.o.Summary:
		out.Changes, out.EndErr = s.EndRunChanges(code)
	default:
		if err := s.EndRun(code); err != nil {
			out.EndErr = fmt.Errorf("record the end of the run in session %s: %w", s.ID(), err)
		}
	}
	out.EndErr = session.ExplainFull(out.EndErr, r.o.StateRoot)
}

// ExitIncomplete is the exit status of a command that exited 0 but whose writes are not all staged.
const ExitIncomplete = 1

// SessionPolicy is p over the session's directories: its staging layer, caches, runtime
// directory and network log.
func SessionPolicy(p sandbox.Policy, s *session.Session) sandbox.Policy {
	p.Upper = s.UpperDir()
	p.CacheDir, p.RuntimeDir = s.CacheDir(), s.RuntimeDir()
	if p.NetLog == "" {
		p.NetLog = s.NetLog()
	}
	return p
}

// Notes are the lines that say what became of the run's writes, for a summary that does not
// list the change set (the app's end box): what the jail could not stage, that the session is
// marked incomplete (or could not be), that the end could not be recorded, that the run staged
// nothing.
func (o Outcome) Notes() []string {
	notes := sandbox.LayerNotes(o.Result)
	if o.Incomplete {
		notes = append(notes, o.IncompleteNote())
	}
	if o.MarkErr != nil {
		notes = append(notes, o.MarkErr.Error())
	}
	if o.EndErr != nil {
		notes = append(notes, o.EndErr.Error())
	}
	if o.Unchanged && o.EndErr == nil {
		notes = append(notes, o.UnchangedNote())
	}
	return notes
}

// IncompleteNote says that the session is marked incomplete and what to do.
func (o Outcome) IncompleteNote() string {
	return fmt.Sprintf("session %s is marked incomplete: staged files may be missing or cut short; `shadow diff` shows what is staged, `shadow discard` drops it", o.label())
}

// UnchangedNote says that the run staged nothing.
func (o Outcome) UnchangedNote() string {
	return fmt.Sprintf("session %s: this run staged no change (`shadow diff --stat` shows what the session holds)", o.label())
}

// label names the run's session for a person.
func (o Outcome) label() string {
	if o.Session != "" {
		return o.Session
	}
	return o.SessionID
}

// StagedFindings audits a session's staged tree against its base and returns, per file, the
// audit rules the agent's changes newly make it fail. The project rules run in a jail over the
// session's staged view, built from p without network, caches or published ports; nothing is
// written to the session. Call it only while no run uses the session.
func StagedFindings(ctx context.Context, s *session.Session, p sandbox.Policy) (map[string][]string, error) {
	p = SessionPolicy(p, s)
	p.NoCache, p.Publish, p.AllowNetwork, p.AllowDomains, p.NetLog = true, nil, false, nil, ""
	p.Timeout = 2 * time.Minute
	start := func(ctx context.Context, args []string, w io.Writer) error {
		return sandbox.RunSelf(ctx, p, args, w)
	}
	return audit.StagedFindings(ctx, s.Project(), start)
}
