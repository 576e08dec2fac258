package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// TestAppAsksAboutARequest: a question of the jail's proxy shows a dialog over the agent's pane
// with where the request goes and its method and path (a tunnel's CONNECT without one); while
// it is up, keys and pastes do not reach the agent; o answers once, s for the session, and d,
// n and esc deny; a second question waits behind the first; a question the proxy closed (its
// time ran out) goes, and so does one whose deadline has passed.
func TestAppAsksAboutARequest(t *testing.T) {
	asks := make(chan AskEvent, 8)
	answers := make(chan string, 8)
	question := func(id uint64, q proxy.Question, deadline time.Time) AskEvent {
		return AskEvent{Asked: &NetQuestion{ID: id, Question: q, Deadline: deadline,
			answer: func(a proxy.Answer) { answers <- fmt.Sprintf("%d:%d", id, a) }}}
	}
	opts := testOptions(nil, echoAgent).withReview(t)
	opts.Asks = asks
	var late atomic.Bool // the clock is past the late question's deadline
	opts.Now = func() time.Time {
		if late.Load() {
			return fixedNow.Add(3 * time.Second)
		}
		return fixedNow
	}
	tm, obs := startApp(t, opts, 100, 30)
	waitScreen(t, tm, obs, 10*time.Second, "the verdict", contains("allowed"))
	tm.Send(press("enter"))
	waitScreen(t, tm, obs, 10*time.Second, "the agent", contains("echo ready"))

	later := fixedNow.Add(time.Hour)
	get := proxy.Question{Host: "example.com", Port: 80, Method: "GET", Path: "/v1/x?q=1"}
	for _, tc := range []struct {
		key  string
		want proxy.Answer
	}{{"o", proxy.AnswerOnce}, {"s", proxy.AnswerSession}, {"d", proxy.AnswerDeny}, {"n", proxy.AnswerDeny}, {"esc", proxy.AnswerDeny}} {
		id := uint64(len(tc.key) + int(tc.key[0]))
		asks <- question(id, get, later)
		waitScreen(t, tm, obs, 5*time.Second, "the dialog", func(s string) bool {
			return strings.Contains(s, "network request off the allow-list") && strings.Contains(s, "example.com:80") &&
				strings.Contains(s, "GET /v1/x?q=1") && strings.Contains(s, "o once") && strings.Contains(s, "d/esc deny")
		})
		// Held back from the agent, with a note why.
		tm.Send(press("x"))
		tm.Send(tea.PasteMsg{Content: "pasted"})
		tm.Send(press("enter"))
		waitScreen(t, tm, obs, 5*time.Second, "the note", contains("answer the network question first"))
		tm.Send(press(tc.key))
		select {
		case got := <-answers:
			if want := fmt.Sprintf("%d:%d", id, tc.want); got != want {
				t.Errorf("key %s answered %s, want %s", tc.key, got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("key %s sent no answer", tc.key)
		}
		waitScreen(t, tm, obs, 5*time.Second, "the dialog to go", func(s string) bool {
			return !strings.Contains(s, "network request off the allow-list") && strings.Contains(s, "example.com:80: ")
		})
	}

	// Two at once: the second waits behind the first; a tunnel shows no path.
	asks <- question(100, proxy.Question{Host: "a.test", Port: 443, Method: "CONNECT"}, later)
	asks <- question(101, proxy.Question{Host: "127.0.0.1", Port: 8080, Method: "POST", Path: "/"}, later)
	waitScreen(t, tm, obs, 5*time.Second, "the tunnel's question", func(s string) bool {
		return strings.Contains(s, "a.test:443") && strings.Contains(s, "CONNECT: an HTTPS tunnel") && strings.Contains(s, "1 more waiting")
	})
	tm.Send(press("o"))
	if got := <-answers; got != "100:1" {
		t.Errorf("the tunnel's answer: %s", got)
	}
	waitScreen(t, tm, obs, 5*time.Second, "the second question", func(s string) bool {
		return strings.Contains(s, "127.0.0.1:8080") && strings.Contains(s, "POST /") && strings.Contains(s, "an address of this machine")
	})
	// The proxy closed it (no answer in time): the dialog goes.
	asks <- AskEvent{Done: 101}
	waitScreen(t, tm, obs, 5*time.Second, "the closed question to go", func(s string) bool { return !strings.Contains(s, "127.0.0.1:8080") })
	// A deadline passed goes with the next tick.
	asks <- question(102, proxy.Question{Host: "late.test", Port: 80, Method: "GET", Path: "/"}, fixedNow.Add(2*time.Second))
	waitScreen(t, tm, obs, 5*time.Second, "the late question", contains("denied without an answer in 2 s"))
	late.Store(true)
	waitScreen(t, tm, obs, 5*time.Second, "the late question to go", func(s string) bool { return !strings.Contains(s, "late.test") })

	// A question that comes while the review is open read-only is named in its banner, and
	// waits for the return to the pane.
	tm.Send(press("ctrl+]"))
	tm.Send(press("r"))
	waitScreen(t, tm, obs, 5*time.Second, "the read-only review", contains("read-only: the agent is still running"))
	asks <- question(103, get, later)
	waitScreen(t, tm, obs, 5*time.Second, "the banner", contains("a network request waits for your answer"))
	tm.Send(press("q"))
	waitScreen(t, tm, obs, 5*time.Second, "the dialog over the pane", contains("network request off the allow-list"))
	tm.Send(press("esc"))
	if got := <-answers; got != "103:0" {
		t.Errorf("the answer after the review: %s", got)
	}
	waitScreen(t, tm, obs, 5*time.Second, "the dialog to go", func(s string) bool { return !strings.Contains(s, "network request off the allow-list") })

	// None of the keys held back reached the agent: the next line it reads is this one.
	tm.Send(press("z"))
	tm.Send(press("enter"))
	scr := waitScreen(t, tm, obs, 5*time.Second, "the agent's echo", contains("got "))
	if strings.Count(scr, "got ") != 1 || !strings.Contains(scr, "got 7a ") {
		t.Errorf("the agent read more than the z typed after the dialogs:\n%s", scr)
	}
	if len(answers) != 0 {
		t.Errorf("%d answers to questions that closed by themselves", len(answers))
	}
	tm.Send(press("ctrl+]"))
	tm.Send(press("s"))
	waitScreen(t, tm, obs, 10*time.Second, "the stopped agent", contains("stopped from the menu"))
	tm.Send(press("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// TestJailAgentAsks: a jail the app runs itself (no agent host) puts its proxy's question to the
// app as the host does: a jailed request off the allow-list waits for the answer, once lets it
// through, and the log records the answer as its rule.
func TestJailAgentAsks(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, lk, s, project := checkpointSession(t)
	defer lk.Release()
	rules, err := proxy.ParseRules([]string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	j := &Jail{Lock: lk, Session: s, Policy: sandbox.Policy{Project: project, NoCache: true, AllowDomains: rules}, AskNetwork: true}
	app := newAppPty(t)
	script := `printf 'code-%s\n' "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '' -x "$HTTP_PROXY" ` + srv.URL + `/asked)"`
	end := runAgent(JailAgent(j, []string{"/bin/sh", "-c", script}), context.Background(), app.tty)
	var q *NetQuestion
	select {
	case ev := <-j.askEvents():
		q = ev.Asked
	case <-time.After(2 * time.Minute):
		t.Fatal("no question came")
	}
	if q == nil || q.Method != "GET" || q.Path != "/asked" || "http://"+q.destination() != srv.URL || q.Deadline.IsZero() {
		t.Fatalf("question %+v", q)
	}
	q.answer(proxy.AnswerOnce)
	app.waitFor(t, "code-200")
	if e := waitEnd(t, end); e.err != nil || e.res.ExitCode != 0 {
		t.Fatalf("the run ended with %+v", e)
	}
	reqs, err := s.Requests()
	if err != nil || len(reqs) != 1 || reqs[0].Rule != "asked: once" || !reqs[0].Allowed {
		t.Errorf("the log holds %+v (%v)", reqs, err)
	}
}

// TestAskDialogSizes: the question's dialog fits over the pane at every size the app is tested
// at, shrinking to where the request goes and the keys on a small screen.
func TestAskDialogSizes(t *testing.T) {
	for _, sz := range append(sizes, struct{ w, h int }{40, 10}, struct{ w, h int }{30, 8}) {
		m := newModel(t, testOptions(nil, idleAgent).withReview(t))
		m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		m.phase = phaseAgent
		m.asks = []NetQuestion{{ID: 1, Question: proxy.Question{Host: "api.example.com", Port: 443, Method: "CONNECT"},
			Deadline: fixedNow.Add(30 * time.Second)}}
		s := screenText(m)
		if !strings.Contains(s, "api.example.com:443") || !strings.Contains(s, "once") || !strings.Contains(s, "deny") {
			t.Errorf("%dx%d: the dialog does not show where the request goes and the answers:\n%s", sz.w, sz.h, s)
		}
	}
}

// TestAskWarnsOfLocalAddressesAtEverySize: an IP literal of this machine or its network, which
// the proxy lets through as it is when answered, is named so in the question's dialog at every
// size the app is tested at, the small screen's short form too, with a short path and with the
// longest the proxy asks with.
func TestAskWarnsOfLocalAddressesAtEverySize(t *testing.T) {
	local := []string{"127.0.0.1", "0.0.0.0", "::1", "::", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"fd00::1", "fe80::1", "100.64.0.1", "100.127.255.254", "224.0.0.1", "ff02::1", "::ffff:10.0.0.1"}
	for _, host := range local {
		if !proxy.LocalAddr(netip.MustParseAddr(host)) {
			t.Errorf("%s is not taken for a local address", host)
		}
		for _, path := range []string{"/", "/" + strings.Repeat("a", 199) + "…"} {
			for _, sz := range append(sizes, struct{ w, h int }{40, 10}) {
				m := newModel(t, testOptions(nil, idleAgent).withReview(t))
				m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
				m.phase = phaseAgent
				m.asks = []NetQuestion{{ID: 1, Question: proxy.Question{Host: host, Port: 80, Method: "GET", Path: path},
					Deadline: fixedNow.Add(30 * time.Second)}}
				if s := screenText(m); !strings.Contains(s, "this machine or its network") || !strings.Contains(s, "once") {
					t.Errorf("%s, a path of %d bytes, %dx%d: no warning that it is a local address:\n%s", host, len(path), sz.w, sz.h, s)
				}
			}
		}
	}
}
