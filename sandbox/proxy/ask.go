package proxy

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Answer is the user's answer to a request for a host off the allow-list
// (SPEC §14, asking).
type Answer int

const (
	AnswerDeny    Answer = iota // refuse it (the default, and what a timeout gives)
	AnswerOnce                  // let this request through
	AnswerSession               // let every request to host:port through until the proxy ends
)

// Question is a request off the allow-list as the user is asked about it:
// its destination, and its method and path where the proxy sees them (a
// tunnel's CONNECT has no path). Requests for the same destination that
// come while it is asked wait for its answer.
type Question struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Method string `json:"method"`
	Path   string `json:"path,omitempty"`
}

// Asker asks the user whether q's destination, which is not on the
// allow-list, may be reached. It returns the answer, or AnswerDeny once ctx
// is done (the proxy's timeout).
type Asker func(ctx context.Context, q Question) Answer

// defaultAskTimeout is how long the proxy waits for an answer.
const defaultAskTimeout = 30 * time.Second

// What the agent writes into a question is bounded, so that the question fits the user's
// screen whole, with what it warns of: its path is cut at maxQuestionPath bytes (the log keeps
// it whole), a host that is neither an address nor a name DNS could resolve (too long, a label
// past 63 bytes, bytes outside letters, digits, '-' and '_', such as controls or bidi marks) is
// refused without asking, and so is a destination past maxOpenQuestions open at once.
const (
	maxQuestionPath  = 200
	maxOpenQuestions = 8
)

// asking is the proxy's state of the questions it asked: the answers for
// the session, and the questions still open, which requests for the same
// destination wait on rather than ask again.
type asking struct {
	mu      sync.Mutex
	granted map[string]bool
	open    map[string]*question
}

type question struct {
	done   chan struct{}
	answer Answer
}

// grantKey marks a request's context with the destination its user let
// through once: dialChecked lets it by as it lets a wildcard's name by.
type grantKey struct{}

// ask returns whether q's destination, off the allow-list, may be reached,
// and the rule (or reason) the log records.
func (p *Proxy) ask(q0 Question) (bool, string) {
	if _, err := netip.ParseAddr(q0.Host); err != nil && !validName(q0.Host) {
		return false, "not in the allow-list; not asked: not a host name"
	}
	q0.Path = cutPath(q0.Path)
	dst := net.JoinHostPort(q0.Host, strconv.Itoa(q0.Port))
	a := &p.asking
	a.mu.Lock()
	if a.granted[dst] {
		a.mu.Unlock()
		return true, "asked: for the session"
	}
	q := a.open[dst]
	if q == nil {
		if len(a.open) >= maxOpenQuestions {
			a.mu.Unlock()
			return false, "not in the allow-list; not asked: " + strconv.Itoa(maxOpenQuestions) + " questions are open"
		}
		q = &question{done: make(chan struct{})}
		if a.open == nil {
			a.open = map[string]*question{}
		}
		a.open[dst] = q
		timeout := p.cfg.AskTimeout
		if timeout <= 0 {
			timeout = defaultAskTimeout
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			ans := p.cfg.Ask(ctx, q0)
			if ctx.Err() != nil {
				ans = AnswerDeny // an answer after the timeout does not count
			}
			cancel()
			a.mu.Lock()
			if ans == AnswerSession {
				if a.granted == nil {
					a.granted = map[string]bool{}
				}
				a.granted[dst] = true
			}
			delete(a.open, dst)
			q.answer = ans
			a.mu.Unlock()
			close(q.done)
		}()
	}
	a.mu.Unlock()
	<-q.done
	switch q.answer {
	case AnswerOnce:
		return true, "asked: once"
	case AnswerSession:
		return true, "asked: for the session"
	}
	return false, "not in the allow-list; asked: denied (or no answer in time)"
}

// cutPath is path as a question shows it: cut, at a character's start, past maxQuestionPath
// bytes, and then ending in "…".
func cutPath(path string) string {
	if len(path) <= maxQuestionPath {
		return path
	}
	n := maxQuestionPath
	for n > 0 && !utf8.RuneStart(path[n]) {
		n--
	}
	return path[:n] + "…"
}

// grantedFor reports whether the user let host:port through: for the
// session, or once for the request of ctx.
func (p *Proxy) grantedFor(ctx context.Context, host string, port int) bool {
	dst := net.JoinHostPort(host, strconv.Itoa(port))
	if g, _ := ctx.Value(grantKey{}).(string); g == dst {
		return true
	}
	p.asking.mu.Lock()
	defer p.asking.mu.Unlock()
	return p.asking.granted[dst]
}
