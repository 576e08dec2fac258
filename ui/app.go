// Package ui is shadow's app, `shadow tui -- CMD`: one bubbletea program
// that runs the preflight live, then the agent in a terminal pane inside the
// jail with shadow's status bar and command menu, then the review screen on
// the session. Its dependencies (the preflight, the agent, the session as a
// review source) come in through Options, so the app runs the same over a
// real jail (WithJail) and over test doubles. The pane draws the agent's
// terminal from an emulator's cells, so nothing the agent writes reaches the
// real terminal. With a session store, the real agent runs in an agent host
// (agenthost.go) that outlives the app, so the app can detach from it and
// `shadow tui --attach` can come back.
package ui

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
	"github.com/shadow-sandbox/shadow/ui/keymap"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// Exit codes of the app.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitBlocked = 3
)

// DefaultCountdown is the pause after an allowed preflight before the agent
// starts by itself, for a caller that wants one.
const DefaultCountdown = 5 * time.Second

// AgentFunc runs the agent with tty (the slave side of a pty the app
// reads) as its standard streams, and returns when it has ended. Cancelling
// ctx stops it.
type AgentFunc func(ctx context.Context, tty *os.File) (AgentResult, error)

// HostedFunc runs an agent whose terminal is another process's (an agent host's pty): what the
// user types is read from term and the agent's output written to it, with no pty of the app's
// between the pane and the host, and returns when the agent has ended (or the app detached).
// Cancelling ctx stops it.
type HostedFunc func(ctx context.Context, term agenthost.Terminal) (AgentResult, error)

// AgentResult is how the agent ended.
type AgentResult struct {
	ExitCode int
	// Reason says why shadow stopped it early (timeout, stopped, too large); empty otherwise.
	Reason   string
	Duration time.Duration
	// Notes say what became of the run's writes when not all were staged
	// (sandbox.LayerNotes).
	Notes []string
}

// Stats are the live counts of the status bar.
type Stats struct {
	Files    int // paths staged in the session
	Requests int // network requests through the proxy
	Denied   int // of Requests, those the proxy refused
	// Checkpoints counts the session's checkpoints; LastCheckpoint is the latest one's id.
	Checkpoints    int
	LastCheckpoint string
}

// Layer is one layer of the jail as the status bar shows it.
type Layer struct {
	Name string // "userns", "netns" (or "netns+proxy"), "overlay", "landlock7", "seccomp"
	On   bool
}

// Options are everything the app needs, as values and functions, so that it
// runs the same with a real jail or with test doubles. Run fills the
// functions left nil from Session, Lock and Policy.
type Options struct {
	// Argv is the agent's command.
	Argv []string
	// Profile is the trust profile the preflight judges by.
	Profile string
	// SessionID names the session in the status bar.
	SessionID string
	// SessionName is the session's name (--session NAME), shown with SessionID; empty for an
	// unnamed session.
	SessionName string
	// Others, when set, lists the project's other open sessions once the agent has ended, for
	// the end box (SPEC §15).
	Others func() []OtherSession
	// Preflight runs the checks before the agent starts.
	Preflight PreflightFunc
	// Agent runs the agent.
	Agent AgentFunc
	// Hosted, when set, runs the agent instead of Agent, in an agent host.
	Hosted HostedFunc
	// Review is the session as the review screen reads and changes it.
	Review diffview.Source
	// Stats, when set, is polled every second for the status bar's counts.
	Stats func() Stats
	// Layers are the jail's layers, as the status bar lists them.
	Layers []Layer
	// Countdown starts the agent by itself this long after an allowed
	// verdict unless a key is pressed; zero waits for enter.
	Countdown time.Duration
	// PrefixKey opens shadow's commands while the agent runs (default ctrl+]).
	PrefixKey string
	// Keys rebinds actions (the config's keys table).
	Keys map[string][]string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnResize is called after the agent's pty got a new size, for a jail
	// that relays the size to its own pty.
	OnResize func()
	// Detach, when set, leaves the app while the agent keeps running.
	Detach func() error
	// Checkpoint, when set, asks the running agent's jail for a checkpoint (SPEC §12), saying
	// what took it (sandbox.CheckpointPrompt, sandbox.CheckpointManual). It must not block:
	// the app calls it while it handles the key. Checkpointed then delivers the checkpoints the
	// jail writes and its answers to the requests (see checkpoint.go).
	Checkpoint   func(trigger string)
	Checkpointed <-chan CheckpointEvent
	// Asks, when set, delivers the questions of the agent's jail about requests off its
	// allow-list, which the app puts to the user in a dialog (netask.go).
	Asks <-chan AskEvent
	// Attach opens the app on the agent's pane, without a preflight: the
	// agent already runs and Agent connects to it.
	Attach bool
	// Started is when an attached agent started, for the elapsed time.
	Started time.Time
	// Dark selects the theme until the terminal reports its background.
	Dark bool
	// Jail, when set, supplies the real preflight, agent, review, counts
	// and layers for whichever of the above are nil (see WithJail).
	Jail *Jail
	// Resume, when set, is given the agent's last screen when it ends, and returns the command
	// that resumes its conversation inside shadow when the screen holds the agent's own resume
	// hint (which, run outside, finds nothing: the conversation is in the jail's agent state),
	// or "". The end box shows it.
	Resume func(screen string) string
	// Exec, when set, is how the review gives the terminal to the editor (Run sets it: the app
	// draws its own frames, so it gives its screen up around the editor).
	Exec diffview.ExecFunc
}

// phase is which of the app's three screens is showing.
type phase int

const (
	phasePreflight phase = iota
	phaseAgent
	phaseReview
)

// Model is the app: one root model that owns the screen and routes every
// message to the phase showing — the preflight, the agent's pane, or the
// review browser.
type Model struct {
	opts   Options
	ctx    context.Context
	keys   keymap.KeyMap
	rkeys  diffview.KeyMap
	styles Styles
	help   help.Model
	dark   bool

	width, height int
	phase         phase
	pre           preflight

	pane      *Pane
	run       *agentRun
	started   time.Time
	now       time.Time
	stats     Stats
	result    *AgentResult
	agentErr  error
	menu      bool
	helpOpen  bool
	detaching bool // the app is leaving the agent running
	note      string

	// listed is, once the agent has ended, the number of files the review lists: the staged
	// count the end box and the status bar show from then on.
	listed *int

	// holding is set while a prompt checkpoint is taken: held are the keys, pastes and clicks
	// for the agent since its Enter, sent once PID 1 answers (checkpoint.go); holdGen names the
	// hold for its time limit.
	holding bool
	held    []tea.Msg
	holdGen int
	// input is where the input the next Enter submits began in the pane (checkpoint.go).
	input promptInput
	// resume is how to resume the agent's conversation inside shadow, when it printed how to
	// resume it (Options.Resume).
	resume string
	// others are the project's other open sessions, read when the agent ended (Options.Others).
	others []OtherSession
	// asks are the open questions of the jail's proxy, the first one's dialog showing (netask.go).
	asks []NetQuestion
	// askShown is the id of the question whose dialog was last drawn whole: the only one an
	// answer key answers. Shared by the model's copies, since View draws on a copy.
	askShown *atomic.Uint64

	review    diffview.Model
	reviewing bool // a review browser is open (read-only over a running agent, or the review phase)
	readOnly  bool

	exit int
	err  error
}

// NewModel returns the app for opts; ctx bounds the preflight and the agent.
func NewModel(ctx context.Context, opts Options) (Model, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Profile == "" {
		opts.Profile = "dependency"
	}
	m := Model{opts: opts, ctx: ctx, keys: keymap.DefaultKeyMap(), rkeys: diffview.DefaultKeyMap(), dark: opts.Dark,
		askShown: new(atomic.Uint64)}
	if opts.PrefixKey != "" {
		m.keys.SetPrefix(opts.PrefixKey)
	}
	if err := keymap.ApplyKeys(&m.keys, &m.rkeys, opts.Keys); err != nil {
		return m, err
	}
	if (opts.Preflight == nil && !opts.Attach) || (opts.Agent == nil && opts.Hosted == nil) || opts.Review == nil {
		return m, errors.New("ui: Preflight, Agent (or Hosted) and Review are required")
	}
	m.styles = DefaultStyles(m.dark)
	m.help = help.New()
	m.help.Styles = help.DefaultStyles(m.dark)
	m.pre = newPreflight()
	m.width, m.height = 80, 24
	m.pane = NewPane(m.paneSize())
	if opts.Attach {
		m.phase = phaseAgent
	}
	return m, nil
}

// ExitCode is the app's exit status once it has quit, as `shadow run` would
// have exited: the agent's status once it ran (124 when --timeout stopped
// it, 128+N when signal N killed it, 125 when the jail could not be built),
// 3 when the preflight blocked, 1 when something else failed, 0 when no
// agent ran or it keeps running detached.
func (m Model) ExitCode() int { return m.exit }

// Err is what made the app fail, if anything.
func (m Model) Err() error { return m.err }

// Init starts the preflight, or connects to the running agent.
func (m Model) Init() tea.Cmd {
	if m.opts.Attach {
		w, h := m.paneSize()
		return tea.Batch(startAgent(m.ctx, m.opts, m.pane, w, h), tea.RequestBackgroundColor)
	}
	return tea.Batch(startPreflight(m.ctx, m.opts.Preflight), m.pre.spinner.Tick, tea.RequestBackgroundColor)
}

// paneSize is the agent pane's size: the screen less the status bar.
func (m Model) paneSize() (int, int) { return max(1, m.width), max(1, m.height-1) }

// Update routes a message to the phase it belongs to.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m.resized(msg)
	case tea.BackgroundColorMsg:
		m.dark = msg.IsDark()
		m.styles = DefaultStyles(m.dark)
		m.help.Styles = help.DefaultStyles(m.dark)
		if m.reviewing {
			var cmd tea.Cmd
			m.review, cmd = m.review.Update(msg)
			return m, cmd
		}
		return m, nil
	case spinner.TickMsg:
		if m.phase != phasePreflight || m.pre.verdict != nil {
			return m, nil
		}
		var cmd tea.Cmd
		m.pre.spinner, cmd = m.pre.spinner.Update(msg)
		return m, cmd

	case preflightStartedMsg:
		return m, nextPreflight(msg.events, msg.done)
	case preflightEventMsg:
		m.pre.add(msg.ev)
		return m, nextPreflight(msg.events, msg.done)
	case preflightDoneMsg:
		return m.preflightDone(msg)
	case countdownMsg:
		return m.countedDown(msg)

	case agentStartedMsg:
		return m.agentStarted(msg)
	case agentStartFailedMsg:
		m.agentErr = msg.err
		m.result = &AgentResult{ExitCode: -1}
		m.exit = ExitError
		return m, nil
	case frameMsg:
		if m.run == nil || msg.run != m.run {
			return m, nil
		}
		return m, waitFrame(msg.run)
	case agentExitMsg:
		return m.agentExited(msg)
	case tickMsg:
		if m.phase != phaseAgent {
			return m, nil
		}
		m.now = m.opts.Now()
		if m.result != nil {
			return m, nil
		}
		m = m.dropExpired()
		return m, tea.Batch(tick(), m.pollStats())
	case statsMsg:
		m.stats = Stats(msg)
		if m.listed != nil {
			m.stats.Files = *m.listed
		}
		return m, nil
	case othersMsg:
		m.others = msg
		return m, nil
	case listedMsg:
		if msg.err == nil {
			n := msg.n
			m.listed, m.stats.Files = &n, n
		}
		return m, nil
	case checkpointMsg:
		return m.checkpointed(msg)
	case askMsg:
		return m.asked(msg)
	case checkpointWaitMsg:
		if msg.gen == m.holdGen && m.holding {
			m = m.release()
			m.note = "no checkpoint answer in time: the keys went on without one"
		}
		return m, nil
	case statusNoteMsg:
		m.note = string(msg)
		return m, nil
	case detachFailedMsg:
		m.detaching = false
		m.note = "detach: " + msg.err.Error()
		return m, nil

	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.PasteMsg:
		if m.phase == phaseAgent && !m.reviewing && !m.menu && !m.asking() && m.result == nil {
			return m.forward(msg), nil
		}
	case tea.MouseMsg:
		if m.phase == phaseAgent && !m.reviewing && !m.menu && !m.asking() && m.result == nil {
			if w, ok := msg.(tea.MouseWheelMsg); ok && m.pane.Wheel(w) {
				return m, nil // the pane's scrollback
			}
			return m.forward(msg), nil
		}
	}
	if m.reviewing {
		return m.updateReview(msg)
	}
	return m, nil
}

// resized lays the screens out for the terminal's new size, and gives the agent's pty the
// pane's.
func (m Model) resized(msg tea.WindowSizeMsg) (tea.Model, tea.Cmd) {
	m.width, m.height = msg.Width, msg.Height
	m.help.SetWidth(msg.Width)
	w, h := m.paneSize()
	ow, oh := m.pane.Size()
	m.pane.SetSize(w, h)
	m.review.SetSize(m.reviewSize())
	if m.run != nil && (w != ow || h != oh) {
		return m, resizePty(m.run, w, h, m.opts.OnResize)
	}
	return m, nil
}

// preflightDone shows the preflight's verdict, and starts the countdown to the agent's start
// when it allows it and the caller wants one.
func (m Model) preflightDone(msg preflightDoneMsg) (tea.Model, tea.Cmd) {
	m.pre.finish(msg.verdict, msg.err)
	if m.pre.allowed() && m.opts.Countdown > 0 {
		m.pre.seconds = int((m.opts.Countdown + time.Second - 1) / time.Second)
		m.pre.countGen++
		return m, countdown(m.pre.countGen)
	}
	return m, nil
}

// countedDown takes a second off the countdown, and starts the agent at zero.
func (m Model) countedDown(msg countdownMsg) (tea.Model, tea.Cmd) {
	if msg.gen != m.pre.countGen || m.pre.seconds <= 0 || m.phase != phasePreflight {
		return m, nil
	}
	m.pre.seconds--
	if m.pre.seconds == 0 {
		return m.startAgent()
	}
	return m, countdown(msg.gen)
}

// agentStarted starts what follows the running agent: its frames, its end, the clock, the
// counts, its checkpoints and its jail's questions.
func (m Model) agentStarted(msg agentStartedMsg) (tea.Model, tea.Cmd) {
	m.run = msg.run
	m.started = m.opts.Now()
	m.now = m.started
	if !m.opts.Started.IsZero() {
		m.started = m.opts.Started
	}
	return m, tea.Batch(waitFrame(msg.run), waitAgent(msg.run), tick(), m.pollStats(), waitCheckpoint(m.opts.Checkpointed, msg.run),
		waitAsk(m.opts.Asks, msg.run))
}

// agentExited records how the agent ended, for the end box, and counts what the review will
// list.
func (m Model) agentExited(msg agentExitMsg) (tea.Model, tea.Cmd) {
	if m.detaching {
		return m, nil
	}
	if IsBusy(msg.err) {
		// Another app holds the agent, which runs on: no run ended here,
		// so there is nothing to show; the app ends saying who holds it.
		m.exit, m.err = ExitError, msg.err
		return m, tea.Quit
	}
	res := msg.res
	m.result, m.agentErr = &res, msg.err
	switch {
	case res.ExitCode >= 0:
		m.exit = res.ExitCode
	case msg.err != nil:
		m.exit = ExitError
	}
	m.holding, m.held = false, nil
	m.menu = false
	m.asks = nil
	m.now = m.opts.Now()
	m.resume = m.resumeCommand()
	return m, tea.Batch(m.pollStats(), countListed(m.opts.Review), listOthers(m.opts.Others))
}

// statusNoteMsg puts a note in the status bar.
type statusNoteMsg string

// detachFailedMsg says the agent could not be left running.
type detachFailedMsg struct{ err error }

// Detached reports whether the app quit leaving the agent running.
func (m Model) Detached() bool { return m.detaching }

// openReview opens the review browser: read-only over a running agent, or
// as the review phase once it has ended.
func (m Model) openReview(readOnly bool) (tea.Model, tea.Cmd) {
	var src diffview.Source = m.opts.Review
	if readOnly {
		src = reviewsrc.ReadOnly{Source: src}
	} else {
		m.phase = phaseReview
	}
	m.review = diffview.New(diffview.WithSource(src), diffview.WithKeyMap(m.rkeys),
		diffview.WithStyles(DefaultStyles(m.dark).Review), diffview.WithReadOnly(readOnly),
		diffview.WithExec(m.opts.Exec))
	m.reviewing, m.readOnly = true, readOnly
	m.review.SetSize(m.reviewSize())
	return m, m.review.Init()
}

// updateReview passes a message to the review browser.
func (m Model) updateReview(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	m.review, cmd = m.review.Update(msg)
	if m.readOnly && m.review.Quitting() {
		m.reviewing, m.readOnly = false, false
		return m, nil
	}
	return m, cmd
}

// resumeCommand asks Options.Resume about the agent's last screen.
func (m Model) resumeCommand() string {
	if m.opts.Resume == nil || m.pane == nil {
		return ""
	}
	_, h := m.pane.Size()
	rows := make([]string, h)
	for y := range rows {
		rows[y] = m.pane.Line(y, 0)
	}
	return m.opts.Resume(strings.Join(rows, "\n"))
}

// Messages of the ticks.
type (
	tickMsg  time.Time
	statsMsg Stats
)

// tick fires once a second while the agent runs.
func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// countdown counts the preflight's auto-start down by a second.
func countdown(gen int) tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return countdownMsg{gen: gen} })
}

// listedMsg is how many files the review lists, counted once the agent has ended.
type listedMsg struct {
	n   int
	err error
}

// countListed counts the files the review lists, by loading them as the review does: the end
// box says what the review will show.
func countListed(src diffview.Source) tea.Cmd {
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		files, err := src.Load()
		return listedMsg{n: len(files), err: err}
	}
}

// pollStats reads the live counts.
func (m Model) pollStats() tea.Cmd {
	stats := m.opts.Stats
	if stats == nil {
		return nil
	}
	return func() tea.Msg { return statsMsg(stats()) }
}
