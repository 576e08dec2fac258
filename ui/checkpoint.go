package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// Checkpoints while the agent runs (SPEC §12): the jail's PID 1 writes one when the user submits
// input to the agent (Enter typed into its pane), on ctrl+] c, after writes followed by quiet, and
// at the end of the run. The app asks for the first two through Options.Checkpoint, and hears
// through Options.Checkpointed of every checkpoint written and of PID 1 being done with each
// request.
//
// A prompt checkpoint must hold what came before the prompt, so the Enter that asks for it is
// held, with every key, paste and click after it, until PID 1 has answered (or, should it not,
// for checkpointWait): the agent cannot act on a prompt it has not received. The request and the
// key go different ways (PID 1's control pipe, and the pty), so holding the key is the only way
// to know which comes first. Enter pressed again while one is held asks for nothing more, and an
// Enter with no change since the last checkpoint costs a request that PID 1 answers without
// writing anything.

// checkpointWait bounds how long keys are held for a prompt checkpoint that is not answered.
const checkpointWait = 2 * time.Second

// CheckpointEvent is news of the run's checkpoints: one the jail wrote, or its answer to a
// request (Answered is what took it), which comes after the checkpoint it wrote if any.
type CheckpointEvent struct {
	Written  *sandbox.Checkpoint
	Answered string
}

// checkpointMsg is a checkpoint event of run's jail.
type checkpointMsg struct {
	ev  CheckpointEvent
	run *agentRun
}

// checkpointWaitMsg ends the hold of the prompt checkpoint gen when no answer came.
type checkpointWaitMsg struct{ gen int }

// waitCheckpoint returns the next checkpoint event while run's agent runs (and those its end
// brings, which are delivered before the agent's function returns).
func waitCheckpoint(ch <-chan CheckpointEvent, r *agentRun) tea.Cmd {
	if ch == nil || r == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case ev := <-ch:
			return checkpointMsg{ev: ev, run: r}
		case <-r.done:
			select {
			case ev := <-ch:
				return checkpointMsg{ev: ev, run: r}
			default:
				return nil
			}
		}
	}
}

// canCheckpoint reports whether the running agent's jail takes checkpoints on request.
func (m Model) canCheckpoint() bool {
	return m.opts.Checkpoint != nil && m.run != nil && m.result == nil
}

// promptCheckpoint asks for the checkpoint of a prompt and holds enter, and what follows it,
// until it is answered.
func (m Model) promptCheckpoint(enter tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.opts.Checkpoint(sandbox.PromptRequest(m.promptLine()))
	m.holding = true
	m.holdGen++
	m.held = append(m.held, enter)
	gen := m.holdGen
	return m, tea.Tick(checkpointWait, func(time.Time) tea.Msg { return checkpointWaitMsg{gen: gen} })
}

// forward passes a key, paste or click on to the agent, or holds it behind a prompt checkpoint
// being taken.
func (m Model) forward(msg tea.Msg) Model {
	if m.holding {
		m.held = append(m.held, msg)
		return m
	}
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		m.input = m.input.key(m.pane, msg)
		m.pane.SendKey(msg)
	case tea.PasteMsg:
		m.input = m.input.text(m.pane, msg.Content)
		m.pane.Paste(msg.Content)
	case tea.MouseMsg:
		mm := msg.Mouse()
		m.pane.SendMouse(msg, mm.X, mm.Y)
	}
	return m
}

// release sends what was held for a prompt checkpoint on to the agent, in order.
func (m Model) release() Model {
	held := m.held
	m.holding, m.held = false, nil
	for _, msg := range held {
		m = m.forward(msg)
	}
	return m
}

// promptInput is the input that the next Enter submits: the cursor's cell in the pane when the
// first text of it went to the agent (what the agent draws before it on that row is its own
// prompt: `> `, `│ > `, `prompt-one> `), and the text typed since, while only text and backspace
// were typed (edited is set by any other key: a cursor move, a history recall, a completion).
type promptInput struct {
	typing bool
	x, y   int
	typed  []rune
	edited bool
}

// maxTyped bounds the text kept of an input: a checkpoint keeps its first line, shorter still.
const maxTyped = 1024

// key is the input after a key goes to the agent: Enter ends it; text begins one or adds to it.
func (in promptInput) key(p *Pane, k tea.KeyPressMsg) promptInput {
	switch {
	case k.String() == "enter":
		return promptInput{}
	case k.Text != "":
		return in.text(p, k.Text)
	case !in.typing:
	case k.String() == "backspace":
		if n := len(in.typed); n > 0 {
			in.typed = in.typed[:n-1]
		}
	default:
		in.edited = true
	}
	return in
}

// text is the input after text is typed or pasted.
func (in promptInput) text(p *Pane, s string) promptInput {
	if !in.typing {
		x, y, _ := p.Cursor()
		in = promptInput{typing: true, x: x, y: y}
	}
	if len(in.typed) < maxTyped {
		in.typed = append(slices.Clip(in.typed), []rune(s)...)
	}
	return in
}

// promptLine is the first line of the prompt an Enter submits: the text typed, when nothing but
// text and backspace was (keys typed ahead of the agent's echo count too); otherwise what the
// pane shows, its row from where the typing began or, should that be empty now (the agent redrew
// its input box elsewhere), the cursor's row, with the agent's frame and prompt marks trimmed. An
// Enter with no text typed since the last (a dialog answered, a bare Enter) submits no prompt.
func (m Model) promptLine() string {
	switch {
	case !m.input.typing:
		return ""
	case !m.input.edited:
		return string(m.input.typed)
	}
	if line := trimDecoration(m.pane.Line(m.input.y, m.input.x)); line != "" {
		return line
	}
	_, y, _ := m.pane.Cursor()
	return trimDecoration(m.pane.Line(y, 0))
}

// trimDecoration takes away what agents draw around their input: spaces and box-drawing or block
// characters at both ends (a frame), and prompt marks at the start.
func trimDecoration(line string) string {
	frame := func(r rune) bool { return unicode.IsSpace(r) || r >= 0x2500 && r <= 0x259f }
	line = strings.TrimRightFunc(line, frame)
	return strings.TrimLeftFunc(line, func(r rune) bool { return frame(r) || strings.ContainsRune(">›❯»▶▸$#%", r) })
}

// manualCheckpoint asks for a checkpoint now, and returns what to tell the user.
func (m Model) manualCheckpoint() string {
	if !m.canCheckpoint() {
		return "checkpoints are not available for this agent"
	}
	m.opts.Checkpoint(sandbox.CheckpointManual)
	return "checkpoint asked for: written if anything changed since the last"
}

// checkpointed handles a checkpoint event: a checkpoint written is counted at once (the count
// read from the session follows), an answer to a prompt's request lets the held keys go.
func (m Model) checkpointed(msg checkpointMsg) (tea.Model, tea.Cmd) {
	if msg.run == nil || msg.run != m.run {
		return m, nil
	}
	next := waitCheckpoint(m.opts.Checkpointed, msg.run)
	if cp := msg.ev.Written; cp != nil {
		m.stats.Checkpoints++
		m.stats.LastCheckpoint = cp.ID
		if cp.Trigger == sandbox.CheckpointManual {
			m.note = fmt.Sprintf("checkpoint %s: %s", cp.ID, english.Count(len(cp.Paths), "path"))
		}
		return m, tea.Batch(next, m.pollStats())
	}
	if msg.ev.Answered == sandbox.CheckpointPrompt && m.holding {
		m = m.release()
	}
	return m, next
}

// checkpointCount is the status bar's count of checkpoints, with the latest one's id.
func (m Model) checkpointCount() string {
	if m.stats.Checkpoints == 0 {
		return "no checkpoint"
	}
	return fmt.Sprintf("%s (%s)", english.Count(m.stats.Checkpoints, "checkpoint"), m.stats.LastCheckpoint)
}

// latestCheckpoint is the latest checkpoint's id after a space, for a narrow status bar (ids count
// up from c1, so it is the count too), or "" when there is none.
func (m Model) latestCheckpoint() string {
	if m.stats.LastCheckpoint == "" {
		return ""
	}
	return " " + m.stats.LastCheckpoint
}

// checkpointEvents is the jail's end of the app's checkpoint requests and events. Neither side
// blocks the other: the buffers are larger than what a user asks for in a checkpoint's time,
// and an event the app does not take in time is dropped (the status bar also reads the
// session's count, and a held key is let go after checkpointWait).
func (j *Jail) checkpointChans() (chan string, chan CheckpointEvent) {
	j.cpOnce.Do(func() {
		j.cpRequests, j.cpEvents = make(chan string, 8), make(chan CheckpointEvent, 64)
	})
	return j.cpRequests, j.cpEvents
}

// requestCheckpoint asks the running jail for a checkpoint; it never blocks.
func (j *Jail) requestCheckpoint(trigger string) {
	reqs, _ := j.checkpointChans()
	select {
	case reqs <- trigger:
	default:
	}
}

// checkpointed passes a checkpoint the jail wrote on to the app.
func (j *Jail) checkpointed(cp sandbox.Checkpoint) { j.checkpointEvent(CheckpointEvent{Written: &cp}) }

// checkpointAnswered passes PID 1's answer to a request on to the app.
func (j *Jail) checkpointAnswered(trigger string) {
	j.checkpointEvent(CheckpointEvent{Answered: trigger})
}

func (j *Jail) checkpointEvent(ev CheckpointEvent) {
	_, events := j.checkpointChans()
	select {
	case events <- ev:
	default:
	}
}

// forwardCheckpoints sends the app's checkpoint requests to the agent host over c until stop is
// called.
func (j *Jail) forwardCheckpoints(c *agenthost.Client) (stop func()) {
	reqs, _ := j.checkpointChans()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case t := <-reqs:
				_ = c.RequestCheckpoint(t)
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
