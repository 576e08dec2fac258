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
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/sandbox"
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
	// Preflight runs the checks before the agent starts.
	Preflight PreflightFunc
	// Agent runs the agent.
	Agent AgentFunc
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
	if (opts.Preflight == nil && !opts.Attach) || opts.Agent == nil || opts.Review == nil {
		return m, errors.New("ui: Preflight, Agent and Review are required")
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
		return tea.Batch(startAgent(m.ctx, m.opts.Agent, m.pane, w, h), tea.RequestBackgroundColor)
	}
	return tea.Batch(startPreflight(m.ctx, m.opts.Preflight), m.pre.spinner.Tick, tea.RequestBackgroundColor)
}

// paneSize is the agent pane's size: the screen less the status bar.
func (m Model) paneSize() (int, int) { return max(1, m.width), max(1, m.height-1) }

// Update routes a message to the phase it belongs to.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
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
		m.pre.finish(msg.verdict, msg.err)
		if m.pre.allowed() && m.opts.Countdown > 0 {
			m.pre.seconds = int((m.opts.Countdown + time.Second - 1) / time.Second)
			m.pre.countGen++
			return m, countdown(m.pre.countGen)
		}
		return m, nil
	case countdownMsg:
		if msg.gen != m.pre.countGen || m.pre.seconds <= 0 || m.phase != phasePreflight {
			return m, nil
		}
		m.pre.seconds--
		if m.pre.seconds == 0 {
			return m.startAgent()
		}
		return m, countdown(msg.gen)

	case agentStartedMsg:
		m.run = msg.run
		m.started = m.opts.Now()
		m.now = m.started
		if !m.opts.Started.IsZero() {
			m.started = m.opts.Started
		}
		return m, tea.Batch(waitFrame(msg.run), waitAgent(msg.run), tick(), m.pollStats(), waitCheckpoint(m.opts.Checkpointed, msg.run),
			waitAsk(m.opts.Asks, msg.run))
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
		return m, tea.Batch(m.pollStats(), countListed(m.opts.Review))
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

// key handles a key press for the phase showing.
func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case m.reviewing:
		if m.readOnly && (key.Matches(msg, m.rkeys.Quit) || msg.String() == "esc") {
			m.reviewing, m.readOnly = false, false
			return m, nil
		}
		return m.updateReview(msg)
	case m.phase == phasePreflight:
		return m.preflightKey(msg)
	case m.phase == phaseAgent && m.asking() && !m.menu:
		return m.askKey(msg)
	case m.phase == phaseAgent:
		return m.agentKey(msg)
	}
	return m, nil
}

// preflightKey handles keys on the preflight screen.
func (m Model) preflightKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	p := &m.pre
	p.seconds = 0 // any key stops the countdown
	switch {
	case p.details:
		if msg.String() == "esc" || key.Matches(msg, m.keys.Quit) || msg.String() == "enter" {
			p.details = false
		}
		return m, nil
	case key.Matches(msg, m.keys.Quit):
		if p.verdict != nil && p.verdict.Blocked {
			m.exit = ExitBlocked
		}
		if p.err != nil {
			m.exit, m.err = ExitError, p.err
			if sandbox.IsJailError(p.err) {
				m.exit = sandbox.ExitNoJail
			}
		}
		return m, tea.Quit
	case key.Matches(msg, m.keys.Down):
		p.move(1)
	case key.Matches(msg, m.keys.Up):
		p.move(-1)
	case key.Matches(msg, m.keys.Passes):
		p.passes = !p.passes
		p.cursor = -1
	case key.Matches(msg, m.keys.HostInfo):
		p.hostInfo = !p.hostInfo
		p.cursor = -1
	case msg.String() == "esc":
		p.cursor = -1
	case p.cursor >= 0 && (msg.String() == "enter" || key.Matches(msg, m.keys.Details)):
		p.details = p.selected() != nil
	case key.Matches(msg, m.keys.Start):
		if p.allowed() {
			return m.startAgent()
		}
	}
	return m, nil
}

// startAgent leaves the preflight for the agent's pane.
func (m Model) startAgent() (tea.Model, tea.Cmd) {
	m.phase = phaseAgent
	w, h := m.paneSize()
	m.pane.SetSize(w, h)
	return m, startAgent(m.ctx, m.opts.Agent, m.pane, w, h)
}

// agentKey handles keys while the agent's pane is showing.
func (m Model) agentKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.result != nil {
		switch {
		case key.Matches(msg, m.keys.Continue):
			return m.openReview(false)
		case key.Matches(msg, m.keys.Quit):
			return m, tea.Quit
		}
		return m, nil
	}
	if m.helpOpen {
		m.helpOpen = false
		return m, nil
	}
	if m.menu {
		m.menu = false
		if !m.fits(m.menuBox()) && !key.Matches(msg, m.keys.Prefix) {
			// The menu is not on screen: no key of it stops or detaches.
			return m, nil
		}
		switch {
		case key.Matches(msg, m.keys.Prefix):
			m = m.forward(msg)
		case key.Matches(msg, m.keys.Review):
			return m.openReview(true)
		case key.Matches(msg, m.keys.Checkpoint):
			m.note = m.manualCheckpoint()
		case key.Matches(msg, m.keys.Stop):
			m.note = "stopping the agent…"
			return m, stopAgent(m.run)
		case key.Matches(msg, m.keys.Detach):
			if m.opts.Detach == nil {
				m.note = "detach is not available: this jail ends with shadow"
				return m, nil
			}
			detach := m.opts.Detach
			m.detaching = true
			return m, func() tea.Msg {
				if err := detach(); err != nil {
					return detachFailedMsg{err: err}
				}
				return tea.Quit()
			}
		case key.Matches(msg, m.keys.Help):
			m.helpOpen = true
		}
		return m, nil
	}
	if key.Matches(msg, m.keys.Prefix) {
		m.menu = true
		m.note = ""
		return m, nil
	}
	if m.pane.ScrollKey(msg) {
		return m, nil // the pane's scrollback
	}
	if msg.String() == "enter" && !m.holding && m.canCheckpoint() {
		// The user submits input to the agent: the checkpoint is taken before the key leaves.
		return m.promptCheckpoint(msg)
	}
	return m.forward(msg), nil
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
		diffview.WithStyles(DefaultStyles(m.dark).Review), diffview.WithReadOnly(readOnly))
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

// View draws the phase showing.
func (m Model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "shadow"
	switch {
	case m.reviewing:
		content := m.review.View()
		if m.readOnly {
			content = m.readOnlyBanner(content)
		}
		v.Content = content
		v.MouseMode = tea.MouseModeCellMotion
	case m.phase == phasePreflight:
		v.Content = fit(m.pre.view(m.styles, m.keys, &m.opts, m.width, m.height), m.width, m.height)
	default:
		v.Content = fit(m.agentView(), m.width, m.height)
		v.MouseMode = tea.MouseModeCellMotion
		if t := m.pane.Title(); t != "" {
			v.WindowTitle = "shadow: " + t // bubbletea clears it at exit
		}
		if m.result == nil && !m.menu && !m.helpOpen && !m.asking() {
			if x, y, ok := m.pane.Cursor(); ok {
				v.Cursor = tea.NewCursor(x, y)
			}
		}
	}
	return v
}

// reviewSize is the review browser's area: the screen, less a banner line
// when it is read-only.
func (m Model) reviewSize() (int, int) {
	if m.readOnly {
		return m.width, max(1, m.height-1)
	}
	return m.width, m.height
}

// readOnlyBanner puts a note above the browser that it is read-only.
func (m Model) readOnlyBanner(content string) string {
	text := " read-only: the agent is still running · q or esc returns to it "
	if m.asking() {
		text = " read-only · a network request waits for your answer: q or esc returns to the agent "
	}
	banner := m.styles.Warned.Render(text)
	return fit(ansi.Truncate(banner, m.width, "…")+"\n"+content, m.width, m.height)
}

// agentView is the pane with the status bar, and the menu or help over it.
func (m Model) agentView() string {
	w, h := m.paneSize()
	body := m.pane.View()
	switch {
	case m.asking() && !m.menu:
		box := m.askBox()
		if m.fits(box) {
			m.askShown.Store(m.asks[0].ID)
		}
		body = overlay(body, m.shown(box), w, h)
	case m.helpOpen:
		body = overlay(body, m.shown(m.helpBox()), w, h)
	case m.menu:
		body = overlay(body, m.shown(m.menuBox()), w, h)
	case m.result != nil:
		body = overlay(body, m.shown(m.endBox()), w, h)
	}
	return body + "\n" + m.statusBar()
}

// menuBox is the prefix key's command menu.
func (m Model) menuBox() string {
	var b strings.Builder
	b.WriteString(m.styles.Title.Render("shadow") + m.styles.Subtle.Render(" · "+m.keys.Close.Help().Key+" back to the agent") + "\n")
	for _, k := range m.keys.MenuHelp() {
		fmt.Fprintf(&b, "%s  %s\n", m.styles.Key.Render(fmt.Sprintf("%-5s", k.Help().Key)), k.Help().Desc)
	}
	fmt.Fprintf(&b, "%s  %s", m.styles.Key.Render(fmt.Sprintf("%-5s", m.keys.Prefix.Help().Key)), "send "+m.keys.Prefix.Help().Key+" to the agent")
	return m.dialogBox(b.String())
}

// helpBox lists the keys of the agent phase.
func (m Model) helpBox() string {
	k := m.keys
	agentKeys := [][]key.Binding{{k.Prefix, k.Review, k.Checkpoint, k.Stop, k.Detach, k.Help, k.Close, k.Continue}}
	return m.dialogBox(m.styles.Title.Render("keys while the agent runs") + "\n" + m.help.FullHelpView(agentKeys) +
		"\n" + m.styles.Subtle.Render("every other key goes to the agent") +
		"\n\n" + m.styles.Title.Render("scrolling back") + "\n" + m.help.FullHelpView(m.pane.KeyMap().FullHelp()) +
		"\n" + m.styles.Subtle.Render("while scrolled back every other key returns to the live view"))
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

// endBox says how the agent ended and what comes next.
func (m Model) endBox() string {
	var s string
	switch {
	case m.agentErr != nil:
		s = m.styles.Error.Render("the agent could not run: ") + m.agentErr.Error()
	case m.result.Reason != "":
		s = fmt.Sprintf("the agent was stopped: %s (status %d)", m.result.Reason, m.result.ExitCode)
	default:
		s = fmt.Sprintf("the agent exited with status %d", m.result.ExitCode)
	}
	for _, n := range m.result.Notes {
		s += "\n" + m.styles.Error.Render("! ") + n
	}
	if m.resume != "" {
		s += "\nto resume the agent's conversation, where shadow keeps its state:\n  " + m.styles.Key.Render(m.resume)
	}
	s += fmt.Sprintf("\n%s staged · %s\n", english.Count(m.stats.Files, "file"), english.Count(m.stats.Requests, "network request"))
	s += m.styles.Key.Render(m.keys.Continue.Help().Key) + " review the changes   " + m.styles.Key.Render(m.keys.Quit.Help().Key) + " quit (the session stays open)"
	return m.dialogBox(s)
}

// statusBar is the agent phase's bottom line: session, layers, elapsed
// time, counts and the prefix key. On a narrow screen the layers are
// abbreviated, then the labels dropped.
func (m Model) statusBar() string {
	st := m.styles
	elapsed := time.Duration(0)
	if !m.started.IsZero() {
		elapsed = m.now.Sub(m.started)
	}
	right := st.Key.Render(m.keys.Prefix.Help().Key) + " menu"
	if m.note != "" {
		right = m.note
	}
	if off, total := m.pane.Scrollback(); off > 0 {
		right = fmt.Sprintf("scrollback %d/%d", off, total)
	}
	if m.result != nil {
		right = "agent ended"
	}
	var line string
	for compact := 0; compact < 3; compact++ {
		var parts []string
		switch id := m.opts.SessionID; {
		case compact == 0:
			parts = append(parts, st.Title.Render("shadow")+" "+id)
		case len(id) > 8 && strings.Contains(id, "-"):
			parts = append(parts, "…"+id[strings.LastIndex(id, "-")+1:])
		default:
			parts = append(parts, id)
		}
		var layers []string
		for _, l := range m.opts.Layers {
			name := l.Name
			if compact > 0 {
				name = abbreviate(name)
			}
			if l.On {
				layers = append(layers, st.LayerOn.Render("✓"+name))
			} else {
				layers = append(layers, st.LayerOff.Render("✗"+name))
			}
		}
		if len(layers) > 0 {
			parts = append(parts, strings.Join(layers, " "))
		}
		parts = append(parts, fmtElapsed(elapsed))
		if t := m.pane.Title(); t != "" && compact < 2 {
			parts = append(parts, st.Subtle.Render(ansi.Truncate(t, 40/(compact+1), "…")))
		}
		switch compact {
		case 0:
			parts = append(parts, fmt.Sprintf("%d staged", m.stats.Files), fmt.Sprintf("%d net", m.stats.Requests)+m.deniedCount(), m.checkpointCount())
		case 1:
			parts = append(parts, fmt.Sprintf("%d staged %d net", m.stats.Files, m.stats.Requests)+m.deniedCount()+m.latestCheckpoint())
			if off, _ := m.pane.Scrollback(); m.note == "" && m.result == nil && off == 0 {
				right = st.Key.Render(m.keys.Prefix.Help().Key)
			}
		default:
			parts = append(parts, fmt.Sprintf("%d+%d", m.stats.Files, m.stats.Requests))
			if m.stats.Denied > 0 {
				parts[len(parts)-1] += fmt.Sprintf("!%d", m.stats.Denied)
			}
		}
		left := strings.Join(parts, " │ ")
		gap := m.width - lipgloss.Width(left) - lipgloss.Width(right) - 2
		if gap >= 1 {
			line = " " + left + strings.Repeat(" ", gap) + right + " "
			break
		}
		line = ansi.Truncate(" "+left+" │ "+right, m.width, "…")
	}
	return st.StatusBar.Width(m.width).MaxWidth(m.width).Render(line)
}

// abbreviate shortens a layer's name for a narrow status bar.
func abbreviate(name string) string {
	switch {
	case name == "userns":
		return "user"
	case strings.HasPrefix(name, "netns"):
		return "net" + strings.TrimPrefix(name, "netns")
	case name == "overlay":
		return "ovl"
	case strings.HasPrefix(name, "landlock"):
		return "ll" + strings.TrimPrefix(name, "landlock")
	case name == "seccomp":
		return "scmp"
	}
	return name
}

// fmtElapsed is a duration as mm:ss, or h:mm:ss past an hour.
func fmtElapsed(d time.Duration) string {
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// fit clips content to width×height cells, so that a screen too small for
// a layout degrades instead of scrolling the terminal.
func fit(content string, width, height int) string {
	lines := strings.Split(content, "\n")
	if len(lines) > height {
		lines = lines[:max(height, 1)]
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > width {
			lines[i] = ansi.Truncate(l, width, "")
		}
	}
	return strings.Join(lines, "\n")
}

// overlay draws box centred over the width×height background.
func overlay(bg, box string, width, height int) string {
	lines := strings.Split(bg, "\n")
	for len(lines) < height {
		lines = append(lines, strings.Repeat(" ", width))
	}
	bl := strings.Split(box, "\n")
	bw := lipgloss.Width(box)
	x := max(0, (width-bw)/2)
	y := max(0, (height-len(bl))/2)
	for i, l := range bl {
		if y+i >= len(lines) {
			break
		}
		row := lines[y+i]
		l = ansi.Truncate(l, width-x, "")
		left := ansi.Truncate(row, x, "")
		if pad := x - ansi.StringWidth(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ansi.TruncateLeft(row, x+ansi.StringWidth(l), "")
		lines[y+i] = left + "\x1b[m" + l + "\x1b[m" + right
	}
	return strings.Join(lines[:height], "\n")
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

// deniedCount is what the status bar adds to the network count when the
// proxy refused requests: " (N DENIED)", else nothing.
func (m Model) deniedCount() string {
	if m.stats.Denied == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d DENIED)", m.stats.Denied)
}
