package agenthost

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// askRig is an agent host with no jail, whose client is the test's end of a pipe (which
// carries a write only once it is read: the test reads every frame the host sends).
type askRig struct {
	h    *agentHost
	conn net.Conn // the client's end
	r    *bufio.Reader
}

func newAskRig(t *testing.T) *askRig {
	t.Helper()
	// An exit payload keeps the host from writing its state file as clients come and go.
	h := &agentHost{dir: t.TempDir(), exit: []byte("{}")}
	return &askRig{h: h}
}

// attach makes a new pipe the host's client, as attach does after its checks.
func (a *askRig) attach(t *testing.T) {
	t.Helper()
	hostEnd, clientEnd := net.Pipe()
	t.Cleanup(func() { hostEnd.Close(); clientEnd.Close() })
	a.conn, a.r = clientEnd, bufio.NewReader(clientEnd)
	go func() {
		a.h.mu.Lock()
		a.h.setClientLocked(hostEnd)
		a.h.sendQuestionsLocked()
		a.h.mu.Unlock()
		a.h.readClient(hostEnd)
	}()
}

// frame reads the next frame the client gets.
func (a *askRig) frame(t *testing.T) (byte, []byte) {
	t.Helper()
	_ = a.conn.SetReadDeadline(time.Now().Add(time.Minute))
	typ, p, err := readFrame(a.r)
	if err != nil {
		t.Fatalf("read a frame: %v", err)
	}
	return typ, p
}

func (a *askRig) question(t *testing.T) Question {
	t.Helper()
	typ, p := a.frame(t)
	var q Question
	if typ != frameAsk || json.Unmarshal(p, &q) != nil {
		t.Fatalf("got frame %q %q, want a question", typ, p)
	}
	return q
}

func (a *askRig) done(t *testing.T, id uint64) {
	t.Helper()
	if typ, p := a.frame(t); typ != frameAskDone || string(p) != strconv.FormatUint(id, 10) {
		t.Fatalf("got frame %q %q, want question %d done", typ, p, id)
	}
}

func (a *askRig) answer(t *testing.T, id uint64, name string) {
	t.Helper()
	data, _ := json.Marshal(answer{ID: id, Answer: name})
	if err := writeFrame(a.conn, frameAnswer, data); err != nil {
		t.Fatal(err)
	}
}

// ask puts q to the host as the jail's proxy does, and returns its answer when it comes.
func (a *askRig) ask(q proxy.Question, timeout time.Duration) chan proxy.Answer {
	ch := make(chan proxy.Answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ch <- a.h.askNetwork(ctx, q)
	}()
	return ch
}

func got(t *testing.T, ch chan proxy.Answer) proxy.Answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(time.Minute):
		t.Fatal("the proxy's question never returned")
	}
	return 0
}

// TestAskFrames: a question of the jail's proxy goes to the attached client with its request
// and deadline; each answer the client can send comes back to the proxy as that answer, and the
// host then says the question is done; a question asked while no client is attached goes to
// the next one when it attaches; an answer of no known form, or to no open question, is dropped,
// and no answer by the proxy's deadline is a refusal.
func TestAskFrames(t *testing.T) {
	a := newAskRig(t)
	a.attach(t)
	req := proxy.Question{Host: "example.com", Port: 80, Method: "GET", Path: "/x?y=1"}
	for _, tc := range []struct {
		name string
		want proxy.Answer
	}{{"once", proxy.AnswerOnce}, {"session", proxy.AnswerSession}, {"deny", proxy.AnswerDeny}} {
		start := time.Now()
		ch := a.ask(req, time.Minute)
		q := a.question(t)
		if q.Question != req || q.Deadline.Before(start.Add(50*time.Second)) || q.Deadline.After(time.Now().Add(time.Minute)) {
			t.Errorf("question %+v, want %+v with its deadline a minute on", q, req)
		}
		a.answer(t, q.ID+1000, "once") // no such question
		a.answer(t, q.ID, "always")    // no such answer
		a.answer(t, q.ID, tc.name)
		a.done(t, q.ID)
		if ans := got(t, ch); ans != tc.want {
			t.Errorf("answer %q came back as %v, want %v", tc.name, ans, tc.want)
		}
	}

	// No client: the question waits for the next one.
	a.conn.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		a.h.mu.Lock()
		gone := a.h.client == nil
		a.h.mu.Unlock()
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the host never noticed its client had gone")
		}
	}
	tunnel := proxy.Question{Host: "example.org", Port: 443, Method: "CONNECT"}
	ch := a.ask(tunnel, time.Minute)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		a.h.mu.Lock()
		n := len(a.h.asked)
		a.h.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the question was never asked")
		}
	}
	a.attach(t)
	q := a.question(t)
	if q.Question != tunnel {
		t.Errorf("the client that attached was asked %+v, want %+v", q, tunnel)
	}
	a.answer(t, q.ID, "once")
	a.done(t, q.ID)
	if ans := got(t, ch); ans != proxy.AnswerOnce {
		t.Errorf("answer once after attaching came back as %v", ans)
	}

	// No answer in time: refused, and the client told the question is done.
	ch = a.ask(req, 200*time.Millisecond)
	q = a.question(t)
	a.done(t, q.ID)
	if ans := got(t, ch); ans != proxy.AnswerDeny {
		t.Errorf("no answer came back as %v, want a refusal", ans)
	}
}
