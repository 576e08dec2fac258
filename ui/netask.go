package ui

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// Asking (SPEC §14): with Jail.AskNetwork, a request the jail's proxy has for a host off the
// allow-list is put to the user in a dialog over the agent's pane, which takes the keyboard
// until it is answered: once (this request), for the session (every request to that host and
// port until the run ends), or deny (also esc). The proxy refuses the request when no answer
// comes within its time (30 s); the dialog then goes by itself. The proxy's log records the
// answer as the request's rule.

// NetQuestion is one question of the jail's proxy, as the app shows it.
type NetQuestion struct {
	ID uint64
	proxy.Question
	// Deadline is when the proxy stops waiting and refuses the request.
	Deadline time.Time
	// answer sends the user's answer; it may block briefly, and is called off the app's loop.
	answer func(proxy.Answer)
}

// AskEvent is what Options.Asks delivers: a question (Asked), or that the question with the id
// Done is no longer open (answered, or its time ran out).
type AskEvent struct {
	Asked *NetQuestion
	Done  uint64
}

// askMsg is an AskEvent of the running agent's jail.
type askMsg struct {
	ev  AskEvent
	run *agentRun
}

// The dialog's answers.
var (
	askOnce    = key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "once"))
	askSession = key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "for the session"))
	askDeny    = key.NewBinding(key.WithKeys("d", "n", "esc"), key.WithHelp("d/esc", "deny"))
)

// waitAsk returns the next question event while run's agent runs.
func waitAsk(ch <-chan AskEvent, r *agentRun) tea.Cmd {
	if ch == nil || r == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case ev := <-ch:
			return askMsg{ev: ev, run: r}
		case <-r.done:
			return nil
		}
	}
}

// asked queues a question, or drops one that is no longer open.
func (m Model) asked(msg askMsg) (tea.Model, tea.Cmd) {
	next := waitAsk(m.opts.Asks, msg.run)
	if msg.run != m.run {
		return m, next
	}
	if q := msg.ev.Asked; q != nil {
		if m.result == nil {
			m.asks = append(m.asks, *q)
		}
		return m, next
	}
	for i, q := range m.asks {
		if q.ID == msg.ev.Done {
			m.asks = append(m.asks[:i:i], m.asks[i+1:]...)
			break
		}
	}
	return m, next
}

// asking reports whether a question's dialog is over the pane.
func (m Model) asking() bool { return len(m.asks) > 0 && m.result == nil }

// dropExpired drops the questions whose time has run out (the proxy has refused them).
func (m Model) dropExpired() Model {
	kept := m.asks[:0:0]
	for _, q := range m.asks {
		if q.Deadline.IsZero() || m.now.Before(q.Deadline) {
			kept = append(kept, q)
		}
	}
	m.asks = kept
	return m
}

// askKey answers the first question with the key, when it is one of the answers; every other
// key is held back from the agent while the dialog is up.
func (m Model) askKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	var a proxy.Answer
	var said string
	switch {
	case key.Matches(msg, askOnce):
		a, said = proxy.AnswerOnce, "let through once"
	case key.Matches(msg, askSession):
		a, said = proxy.AnswerSession, "let through for the session"
	case key.Matches(msg, askDeny):
		a, said = proxy.AnswerDeny, "denied"
	case key.Matches(msg, m.keys.Prefix):
		// The menu opens over a question, so that questions without end cannot keep the user
		// from stopping the agent.
		m.menu = true
		return m, nil
	default:
		m.note = "answer the network question first (or " + m.keys.Prefix.Help().Key + " for shadow's commands)"
		return m, nil
	}
	q := m.asks[0]
	if m.askShown == nil || m.askShown.Load() != q.ID {
		// The question the key was meant for went (answered by a key before, or its time ran
		// out) and another took its place, not yet on the screen.
		m.note = "another network question came up: read it, then answer"
		return m, nil
	}
	m.asks = m.asks[1:]
	m.note = q.destination() + ": " + said
	answer := q.answer
	if answer == nil {
		return m, nil
	}
	return m, func() tea.Msg { answer(a); return nil }
}

// destination is where the request goes, quoted where it holds what a terminal would act on.
func (q NetQuestion) destination() string {
	return quote.Path(net.JoinHostPort(q.Host, strconv.Itoa(q.Port)))
}

// askBox is the dialog of the first open question.
func (m Model) askBox() string {
	q := m.asks[0]
	st := m.styles
	var b strings.Builder
	b.WriteString(st.Title.Render("network request off the allow-list") + "\n")
	b.WriteString("the agent asks to reach " + st.Key.Render(q.destination()) + "\n")
	switch {
	case q.Method == "CONNECT":
		b.WriteString("CONNECT: an HTTPS tunnel, its requests unseen\n")
	case q.Path != "":
		b.WriteString(quote.Path(q.Method) + " " + quote.Path(q.Path) + "\n")
	case q.Method != "":
		b.WriteString(quote.Path(q.Method) + "\n")
	}
	local := false
	if ip, err := netip.ParseAddr(q.Host); err == nil && proxy.LocalAddr(ip) { // the proxy lets an IP literal answered for go there, not a name
		local = true
		b.WriteString(st.Error.Render("! ") + "an address of this machine or its network\n")
	}
	b.WriteString("\n")
	for i, k := range []key.Binding{askOnce, askSession, askDeny} {
		if i > 0 {
			b.WriteString("   ")
		}
		b.WriteString(st.Key.Render(k.Help().Key) + " " + k.Help().Desc)
	}
	if !q.Deadline.IsZero() {
		left := int(q.Deadline.Sub(m.now) / time.Second) // m.now is the last tick's
		fmt.Fprintf(&b, "\n%s", st.Subtle.Render(fmt.Sprintf("denied without an answer in %d s", max(0, left))))
	}
	if n := len(m.asks) - 1; n > 0 {
		fmt.Fprintf(&b, "\n%s", st.Subtle.Render(fmt.Sprintf("%d more waiting", n)))
	}
	if box := m.dialogBox(b.String()); m.fits(box) {
		return box
	}
	// A small screen: where it goes, that it is local, and the keys.
	small := "network: " + q.destination() + "\n"
	if local {
		small += st.Error.Render("! ") + "this machine or its network\n"
	}
	return m.dialogBox(small + st.Key.Render("o") + " once · " + st.Key.Render("s") + " session · " + st.Key.Render("d") + " deny")
}

// netAsking carries a jail's questions to the app.
type netAsking struct {
	once   sync.Once
	events chan AskEvent
	last   atomic.Uint64
}

// askEvents is the channel the app reads the jail's questions from.
func (j *Jail) askEvents() chan AskEvent {
	j.asking.once.Do(func() { j.asking.events = make(chan AskEvent, 64) })
	return j.asking.events
}

// tell passes ev to the app, or drops it when the app is that far behind (the proxy refuses
// a question unanswered in its time).
func (j *Jail) tell(ev AskEvent) {
	select {
	case j.askEvents() <- ev:
	default:
	}
}

// hearQuestions passes the questions the agent host sends c to the app, with their answers
// going back to the host.
func (j *Jail) hearQuestions(c *agenthost.Client) {
	c.Asked = func(q agenthost.Question) {
		j.tell(AskEvent{Asked: &NetQuestion{ID: q.ID, Question: q.Question, Deadline: q.Deadline,
			answer: func(a proxy.Answer) { _ = c.Answer(q.ID, a) }}})
	}
	c.AskDone = func(id uint64) { j.tell(AskEvent{Done: id}) }
}

// inAppAsker is the proxy's Asker of a jail run inside the app (no agent host): nil unless
// j.AskNetwork.
func (j *Jail) inAppAsker() proxy.Asker {
	if !j.AskNetwork {
		return nil
	}
	return func(ctx context.Context, pq proxy.Question) proxy.Answer {
		answers := make(chan proxy.Answer, 1)
		q := &NetQuestion{ID: j.asking.last.Add(1), Question: pq, answer: func(a proxy.Answer) {
			select {
			case answers <- a:
			default:
			}
		}}
		q.Deadline, _ = ctx.Deadline()
		j.tell(AskEvent{Asked: q})
		defer j.tell(AskEvent{Done: q.ID})
		select {
		case a := <-answers:
			return a
		case <-ctx.Done():
			return proxy.AnswerDeny
		}
	}
}
