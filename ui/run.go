package ui

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/confine"
	"github.com/shadow-sandbox/shadow/sandbox/doctor"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/runner"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
	"github.com/shadow-sandbox/shadow/ui/keymap"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
	"github.com/shadow-sandbox/shadow/ui/screen"
)

// Jail is what the real preflight, agent, review and status bar work on:
// the project's open session, obtained through its writer lock, and the
// run's jail policy (its Upper, Work, CacheDir and RuntimeDir are taken
// from the session).
type Jail struct {
	Lock    *session.ProjectLock
	Session *session.Session
	Policy  sandbox.Policy
	// Apply holds the options of an apply from the review (the config's
	// protected paths).
	Apply session.ApplyOptions
	// Granted are the variables a preset passes on purpose: the in-jail
	// verification reports them as granted, not leaked.
	Granted []string
	// VerifyTimeout bounds the in-jail verification (default 60s).
	VerifyTimeout time.Duration
	// Store, when set, runs the agent in an agent host (`shadow
	// __agent-host`) that outlives the app, so that the app can detach; the
	// app hands the writer lock to the host while the agent runs and takes
	// it back when the agent ends. Nil runs the agent inside the app.
	Store *session.Store
	// Attach, when set, is a running agent host of Session to connect to
	// instead of starting one (`shadow tui --attach`); Lock may be nil until
	// the agent ends.
	Attach *agenthost.State
	// AskNetwork puts a request of the jail's proxy for a host off the allow-list to the user
	// in the app (netask.go) instead of refusing it at once.
	AskNetwork bool

	mu       sync.Mutex
	client   *agenthost.Client
	review   *reviewsrc.Source
	running  atomic.Bool
	detached atomic.Bool

	// The app's checkpoint requests and the checkpoints the run's jail wrote (checkpoint.go).
	cpOnce     sync.Once
	cpRequests chan string
	cpEvents   chan CheckpointEvent
	// The questions of the run's proxy, for the app (netask.go).
	asking netAsking
}

// Detached reports whether the app left the agent running in its host.
func (j *Jail) Detached() bool { return j.detached.Load() }

// Release gives up the writer lock the jail holds now (the app may have
// handed it to the agent host and taken it back).
func (j *Jail) Release() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.Lock.Release()
}

// Run runs the app on the terminal until the user quits, and returns its
// exit status: 0, 3 when the preflight blocked the agent, 1 on failure.
// Functions left nil in opts are filled from opts.Jail.
func Run(ctx context.Context, opts Options) (int, error) {
	if opts.Jail != nil {
		opts = WithJail(opts, opts.Jail)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// SIGHUP (the terminal went away) ends the app as SIGTERM does: the agent is stopped after
	// the jail's last checkpoint, as `shadow run` stops its command. Only a detach leaves it
	// running.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		select {
		case <-hup:
			cancel()
		case <-ctx.Done():
		}
	}()
	// The app draws its own frames (ui/screen): the echo of a key after a quiet spell is on
	// the terminal as soon as the model has it, not at bubbletea's next tick.
	term, err := screen.NewTerminal()
	if err != nil {
		return ExitError, err
	}
	opts.Exec = term.Exec
	m, err := NewModel(ctx, opts)
	if err != nil {
		return ExitError, err
	}
	final, err := term.Run(ctx, m)
	fm, ok := final.(Model)
	if r := fm.run; ok && r != nil && fm.result == nil && !fm.Detached() {
		// The app ended under a running agent (it was quit, killed by its context, or lost
		// its terminal): stop the jail, which takes its last checkpoint, and let the run be
		// recorded before returning. Only a detach leaves the agent running.
		r.cancel()
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
		}
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return ExitError, fmt.Errorf("run the app: %w", err)
	}
	if !ok {
		return ExitError, errors.New("run the app: no final state")
	}
	return fm.ExitCode(), fm.Err()
}

// WithJail fills the functions opts leaves nil with the real ones over j.
func WithJail(opts Options, j *Jail) Options {
	profile := audit.Profile(opts.Profile)
	if profile == "" {
		profile = audit.DefaultProfile
		opts.Profile = string(profile)
	}
	if opts.Preflight == nil {
		opts.Preflight = JailPreflight(j, profile)
	}
	if opts.Layers == nil && j.Attach != nil {
		// The layers of the agent's jail, as its host started it.
		for _, l := range j.Attach.Layers {
			opts.Layers = append(opts.Layers, Layer(l))
		}
	}
	if opts.Layers == nil {
		opts.Layers = PolicyLayers(j.Policy)
	}
	if opts.Agent == nil && opts.Hosted == nil && (j.Store != nil || j.Attach != nil) {
		opts.Hosted = j.hostAgent(opts.Argv, opts.Layers)
		opts.Detach = j.detach
		opts.OnResize = j.resizeHost
		if j.Attach != nil {
			opts.Attach, opts.Started = true, j.Attach.Started
		}
	}
	if opts.Agent == nil && opts.Hosted == nil {
		opts.Agent = JailAgent(j, opts.Argv)
	}
	if opts.Checkpoint == nil {
		_, events := j.checkpointChans()
		opts.Checkpoint, opts.Checkpointed = j.requestCheckpoint, events
	}
	if opts.Asks == nil {
		opts.Asks = j.askEvents()
	}
	if opts.Review == nil {
		rs := reviewsrc.New(j.Lock, j.Session, reviewsrc.WithApplyOptions(j.Apply), reviewsrc.WithFindings(j.stagedFindings()))
		j.review = rs
		opts.Review = rs
	}
	if opts.Stats == nil {
		opts.Stats = SessionStats(j.Session)
	}
	if opts.SessionID == "" {
		opts.SessionID, opts.SessionName = j.Session.ID(), j.Session.Name()
	}
	if opts.Others == nil && j.Store != nil {
		opts.Others = OtherSessions(j.Store, j.Session, func(a, b string) string { return "shadow compare " + a + " " + b })
	}
	if opts.OnResize == nil {
		// sandbox.Run relays SIGWINCH to the jail's PID 1, which copies the
		// size of its terminal (the app's pty) to the agent's own pty.
		opts.OnResize = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGWINCH) }
	}
	return opts
}

// JailAgent runs argv in the jail over the session, recording the run.
func JailAgent(j *Jail, argv []string) AgentFunc {
	return func(ctx context.Context, tty *os.File) (AgentResult, error) {
		reqs, _ := j.checkpointChans()
		// The jail gets the user's signals as a command outside it would.
		relay := make(chan os.Signal, 8)
		signal.Notify(relay, sandbox.RelayedSignals()...)
		defer signal.Stop(relay)
		w := runner.Wiring{Stdin: tty, Stdout: tty, Stderr: tty, Warnings: tty, Notice: tty, Signals: relay,
			CheckpointRequests: reqs, Checkpointed: j.checkpointed, CheckpointAnswered: j.checkpointAnswered,
			AskNetwork: j.inAppAsker()}
		out, err := runner.Run(ctx, j.Session, j.Policy, argv, w, runner.Options{StateRoot: j.stateRoot()})
		if err != nil {
			return AgentResult{ExitCode: -1}, err
		}
		return OutcomeResult(out), out.JailErr
	}
}

// OutcomeResult is how a run ended as the app shows it.
func OutcomeResult(out runner.Outcome) AgentResult {
	return AgentResult{ExitCode: out.Code, Reason: out.Result.StopReason, Notes: out.Notes(), Duration: out.Result.Duration}
}

// stateRoot is shadow's state directory, when the jail knows its store.
func (j *Jail) stateRoot() string {
	if j.Store == nil {
		return ""
	}
	return j.Store.Root
}

// hostAgent runs argv in an agent host that the app connects to (or, with
// j.Attach, connects to the running one), and takes the project's writer
// lock back when the agent ends.
func (j *Jail) hostAgent(argv []string, layers []Layer) HostedFunc {
	return func(ctx context.Context, term agenthost.Terminal) (AgentResult, error) {
		j.running.Store(true)
		defer j.running.Store(false)
		c, err := j.connect(argv, layers, term)
		if err != nil {
			// The host may hold the lock still (or another client is
			// attached): take it back only if it is free.
			if e := j.relock(false); e != nil && !errors.Is(e, session.ErrBusy) {
				err = errors.Join(err, e)
			}
			return AgentResult{ExitCode: -1}, err
		}
		c.Checkpointed, c.CheckpointAnswered = j.checkpointed, j.checkpointAnswered
		j.hearQuestions(c)
		stop := j.forwardCheckpoints(c)
		ex, err := c.Relay(ctx, term)
		stop()
		res := AgentResult{ExitCode: ex.ExitCode, Reason: ex.Reason, Notes: ex.Notes, Duration: ex.Duration}
		if errors.Is(err, agenthost.ErrDetached) || IsBusy(err) {
			return res, err
		}
		// Once the agent has ended, its host releases the lock before it
		// says so; after a lost connection the host may still hold it.
		if e := j.relock(c.Ended()); e != nil && err == nil {
			err = e
		}
		return res, err
	}
}

// connect starts the agent host, handing it the writer lock, or finds the
// one to attach to, and connects to it.
func (j *Jail) connect(argv []string, layers []Layer, term agenthost.Terminal) (*agenthost.Client, error) {
	sock := ""
	if j.Attach != nil {
		sock = j.Attach.Socket
	} else {
		if j.Store == nil {
			return nil, errors.New("start the agent host: no session store")
		}
		cols, rows := 80, 24
		if c, r, err := term.Size(); err == nil {
			cols, rows = c, r
		}
		j.mu.Lock()
		j.Lock.Release()
		j.mu.Unlock()
		hl := make([]agenthost.Layer, len(layers))
		for i, l := range layers {
			hl[i] = agenthost.Layer(l)
		}
		if err := agenthost.Start(j.Store, j.Session, j.Policy, j.Apply.Protected, argv, hl, cols, rows, j.AskNetwork); err != nil {
			return nil, err
		}
		sock = agenthost.SocketPath(j.Session)
	}
	c, err := agenthost.Dial(sock)
	if err != nil {
		return nil, err
	}
	c.BusyAdvice = BusyAdvice()
	j.mu.Lock()
	j.client = c
	j.mu.Unlock()
	return c, nil
}

// relock takes the project's writer lock again once the agent host has
// released it, for the review; wait blocks until it is free.
func (j *Jail) relock(wait bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.client = nil
	if j.Store == nil {
		return errors.New("take the project's writer lock for the review: no session store")
	}
	// Held only to take the session back (Brief): a run of another session starting meanwhile
	// waits that moment out instead of failing.
	lk, err := j.Store.LockProject(j.Session.Project(), session.LockOptions{Wait: wait, Command: "tui", Brief: true})
	if err != nil {
		return err
	}
	s, err := lk.Get(j.Session.ID())
	if err == nil {
		// The review holds its session, not the project: another session's run or review
		// goes on meanwhile, and an apply takes the project's lock for itself.
		err = lk.HandOver(s)
	}
	if err != nil {
		lk.Release()
		return err
	}
	s.SetProtected(j.Apply.Protected)
	j.Lock, j.Session = lk, s
	if j.review != nil {
		j.review.Rebind(lk, s)
	}
	return nil
}

// detach closes the app's connection to the agent host; the agent keeps
// running.
func (j *Jail) detach() error {
	j.mu.Lock()
	c := j.client
	j.mu.Unlock()
	if c == nil {
		return errors.New("the agent is not connected yet")
	}
	j.detached.Store(true)
	return c.Detach()
}

// resizeHost passes the pane's size on to the agent host.
func (j *Jail) resizeHost() {
	j.mu.Lock()
	c := j.client
	j.mu.Unlock()
	if c != nil {
		c.Resize()
	}
}

// BusyAdvice is what can be done about an agent another app holds, with the default keys.
func BusyAdvice() string {
	k := keymap.DefaultKeyMap()
	return fmt.Sprintf("wait for it to end there, or detach it there (%s then %s) and run shadow tui --attach here, or stop it there (%s then %s)",
		k.Prefix.Help().Key, k.Detach.Help().Key, k.Prefix.Help().Key, k.Stop.Help().Key)
}

// IsBusy reports whether err says that another app holds the agent.
func IsBusy(err error) bool { return agenthost.IsBusy(err) }

// JailPreflight is the real preflight: doctor's host checks, the host
// environment for information, then AuditPreflight over the project and a
// fresh jail built with the run's policy.
func JailPreflight(j *Jail, profile audit.Profile) PreflightFunc {
	gate := AuditPreflight(j.Policy.Project, profile, j.startInside)
	return func(ctx context.Context, emit func(Event)) (Verdict, error) {
		v := Verdict{Profile: string(profile)}
		rep := doctor.Run(ctx)
		for _, c := range rep.Checks {
			f := hostFinding(c)
			if f.Blocks {
				v.Blocked = true
				v.Blocking = append(v.Blocking, c.Name)
			}
			emit(Event{Stage: StageHost, Finding: &f})
		}
		emit(Event{Stage: StageHost, Done: true})
		if v.Blocked {
			for st := StageHostEnv; st < numStages; st++ {
				emit(Event{Stage: st, Done: true})
			}
			v.Remedy = "This host cannot build the jail: select a check for its remedy, or run shadow doctor."
			return v, nil
		}

		// The host as it is: information only, the jail hides it.
		for f := range audit.Run(ctx, audit.Options{Env: audit.LiveEnv(), Project: j.Policy.Project, Profile: profile, Domains: audit.InsideDomains}) {
			uf := auditFinding(StageHostEnv, f, profile)
			uf.Info, uf.Blocks = true, false
			emit(Event{Stage: StageHostEnv, Finding: &uf})
		}
		emit(Event{Stage: StageHostEnv, Done: true})
		return gate(ctx, emit)
	}
}

// AuditPreflight is the preflight's project and jail stages: audit.Preflight, the gate `shadow
// run --trust` applies too, its findings streamed as the stages' lines and its report's verdict
// the app's. start runs the in-jail audit.
func AuditPreflight(project string, profile audit.Profile, start func(context.Context, []string, io.Writer) error) PreflightFunc {
	stage := map[audit.PreflightStage]Stage{audit.PreflightProject: StageProject, audit.PreflightJail: StageJail}
	return func(ctx context.Context, emit func(Event)) (Verdict, error) {
		v := Verdict{Profile: string(profile)}
		rep, err := audit.Preflight(ctx, project, profile, start, func(ev audit.PreflightEvent) {
			st := stage[ev.Stage]
			if ev.Finding == nil {
				emit(Event{Stage: st, Done: true})
				return
			}
			uf := auditFinding(st, *ev.Finding, profile)
			emit(Event{Stage: st, Finding: &uf})
		})
		if err != nil {
			return v, err
		}
		rv := rep.Verdict()
		v.Blocked, v.Warned, v.Blocking = rv.Blocked, rv.Warned, rv.Blocking
		if v.Blocked {
			v.Remedy = fmt.Sprintf("Fix what blocks (select a finding for its remedy), or rerun with a --trust profile that accepts it; shadow verify --trust %s writes the full report.", profile)
		}
		return v, nil
	}
}

// startInside runs `shadow verify --inside-child` in a fresh jail with the
// run's policy and a throwaway staging layer, its stdout to w.
func (j *Jail) startInside(ctx context.Context, args []string, w io.Writer) error {
	p := j.Policy
	p.Upper, p.CacheDir, p.NetLog = "", "", ""
	if len(j.Granted) > 0 {
		p.Env = append(append([]string{}, p.Env...), audit.GrantedEnvVar+"="+strings.Join(j.Granted, ","))
	}
	p.Timeout = j.VerifyTimeout
	if p.Timeout <= 0 {
		p.Timeout = 60 * time.Second
	}
	return sandbox.RunSelf(ctx, p, args, w)
}

// stagedFindings names, for the review's badges, the audit rules each staged
// file newly fails: the project rules run in a jail over the session's staged
// view and are compared with the base's. It is computed once, when the review
// first loads after the agent ended (never while a run uses the staging layer).
func (j *Jail) stagedFindings() func(path string) []string {
	var once sync.Once
	var found map[string][]string
	return func(path string) []string {
		if j.running.Load() || j.Session.RunActive() {
			return nil
		}
		once.Do(func() {
			found, _ = runner.StagedFindings(context.Background(), j.Session, j.Policy)
		})
		return found[path]
	}
}

// hostFinding is a doctor check as a preflight line; a missing required
// check blocks (the jail cannot be built).
func hostFinding(c doctor.Check) Finding {
	f := Finding{Stage: StageHost, ID: c.Name, Title: c.Detail, Remedy: c.Remedy}
	switch c.Status {
	case doctor.StatusOK:
		f.Result = audit.Pass
	case doctor.StatusMissing:
		f.Result = audit.Fail
		f.Blocks = c.Required
	default:
		f.Result = audit.Skipped
	}
	return f
}

// auditFinding is an audit finding as a preflight line.
func auditFinding(st Stage, f audit.Finding, p audit.Profile) Finding {
	uf := Finding{Stage: st, Result: f.Result, Severity: f.Severity, Blocks: f.Blocks(p)}
	if f.Rule != nil {
		uf.ID, uf.Title, uf.Remedy = f.Rule.ID, f.Rule.Title, f.Rule.Remedy
	}
	for _, e := range f.Evidence {
		uf.Evidence = append(uf.Evidence, e.String())
	}
	if f.SkipReason != "" {
		uf.Evidence = append(uf.Evidence, "skipped: "+f.SkipReason)
	}
	return uf
}

// SessionStats counts the session's staged paths (up to a bound, so a huge
// staging layer never slows the status bar), those the running run staged in
// its own layer included (session.RunStaged), its network requests and its
// checkpoints (read again only when their directory changed).
func SessionStats(s *session.Session) func() Stats {
	const maxCount = 100000
	var (
		mu      sync.Mutex
		cpMtime time.Time
		cpN     int
		cpLast  string
	)
	checkpoints := func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		fi, err := os.Stat(s.CheckpointDir())
		// A directory changed within the clock's tick of the last read may have changed again
		// without its time moving: it is read again until that time is well past.
		if err != nil || fi.ModTime().Equal(cpMtime) && time.Since(cpMtime) > time.Second {
			return cpN, cpLast
		}
		cps, err := s.Checkpoints()
		if err != nil {
			return cpN, cpLast
		}
		cpMtime, cpN, cpLast = fi.ModTime(), len(cps), ""
		if len(cps) > 0 {
			cpLast = cps[len(cps)-1].ID
		}
		return cpN, cpLast
	}
	return func() Stats {
		var st Stats
		st.Checkpoints, st.LastCheckpoint = checkpoints()
		_ = filepath.WalkDir(s.UpperDir(), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if !d.IsDir() {
				st.Files++
				if st.Files >= maxCount {
					return filepath.SkipAll
				}
			}
			return nil
		})
		// The running run writes into a layer of its own, merged into the staging layer at its
		// end: its precapture counts what it staged beyond it.
		st.Files += s.RunStaged()
		if f, err := os.Open(s.NetLog()); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				st.Requests++
				// The proxy writes each entry with encoding/json: no space in it.
				if bytes.Contains(sc.Bytes(), []byte(`"allowed":false`)) {
					st.Denied++
				}
			}
			f.Close()
		}
		return st
	}
}

// PolicyLayers lists the jail's layers for a policy as the status bar
// shows them.
func PolicyLayers(p sandbox.Policy) []Layer {
	net := Layer{Name: "netns", On: true}
	switch {
	case p.AllowNetwork:
		net = Layer{Name: "netns+internet", On: false}
	case len(p.AllowDomains) > 0:
		net = Layer{Name: "netns+proxy", On: true}
	}
	ll := Layer{Name: "landlock", On: false}
	if abi := confine.LandlockABI(); abi > 0 {
		ll = Layer{Name: fmt.Sprintf("landlock%d", abi), On: true}
	}
	return []Layer{{Name: "userns", On: true}, net, {Name: "overlay", On: true}, ll, {Name: "seccomp", On: true}}
}
