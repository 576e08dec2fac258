package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// askEnv is a proxy whose allow-list is empty and that asks answers[host],
// counting the questions by host in asked and keeping the last in last.
func askEnv(t *testing.T, answers map[string]Answer, asked *sync.Map, timeout time.Duration) env {
	t.Helper()
	names := map[string][]netip.Addr{"local.test": addrs("127.0.0.1")}
	for h := range answers {
		if _, ok := names[h]; !ok {
			names[h] = addrs("203.0.113.7") // the test dialer takes it to 127.0.0.1
		}
	}
	log := &syncBuffer{}
	d := &net.Dialer{}
	p := New(Config{Resolver: &fakeDNS{names: names}, Log: log, AskTimeout: timeout,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			ap := netip.MustParseAddrPort(addr)
			if netip.MustParsePrefix("203.0.113.0/24").Contains(ap.Addr()) {
				addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()).String()
			}
			return d.DialContext(ctx, network, addr)
		},
		Ask: func(ctx context.Context, q Question) Answer {
			n, _ := asked.LoadOrStore(q.Host, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			asked.Store("last:"+q.Host, q)
			a, ok := answers[q.Host]
			if !ok || a < 0 {
				<-ctx.Done() // never answers
				return AnswerOnce
			}
			return a
		}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	u, _ := url.Parse("http://" + l.Addr().String())
	return env{proxyURL: u, log: log}
}

// TestAskOffTheList: a request off the allow-list is let through once, for
// the session, or refused, as the user answers; no answer in time refuses
// it; requests that come while a question is open wait for its answer; a
// destination let through still may not resolve to a local address; every
// answer is in the log.
func TestAskOffTheList(t *testing.T) {
	_, port := backend(t)
	asked := &sync.Map{}
	e := askEnv(t, map[string]Answer{"once.test": AnswerOnce, "session.test": AnswerSession, "deny.test": AnswerDeny,
		"slow.test": -1, "local.test": AnswerSession, "burst.test": AnswerSession}, asked, 200*time.Millisecond)
	c := e.client()
	questions := func(h string) int64 {
		n, ok := asked.Load(h)
		if !ok {
			return 0
		}
		return n.(*atomic.Int64).Load()
	}
	for _, tc := range []struct {
		host      string
		codes     []int
		questions int64
		rule      string
	}{
		{"once.test", []int{200, 200}, 2, "asked: once"},
		{"session.test", []int{200, 200}, 1, "asked: for the session"},
		{"deny.test", []int{403}, 1, ""},
		{"slow.test", []int{403}, 1, ""},
		{"local.test", []int{403}, 1, "asked: for the session"},
	} {
		for _, want := range tc.codes {
			if code, body := get(t, c, "http://"+tc.host+":"+port+"/"); code != want {
				t.Errorf("%s: %d %s, want %d", tc.host, code, body, want)
			}
		}
		if n := questions(tc.host); n != tc.questions {
			t.Errorf("%s: asked %d times, want %d", tc.host, n, tc.questions)
		}
		for _, l := range e.log.entries(t) {
			if l.Host != tc.host {
				continue
			}
			switch {
			case tc.rule != "" && l.Allowed && l.Rule != tc.rule:
				t.Errorf("%s: logged rule %q, want %q", tc.host, l.Rule, tc.rule)
			case !l.Allowed && !strings.Contains(l.Reason, "asked: denied") && !strings.Contains(l.Reason, "local or private"):
				t.Errorf("%s: logged %+v", tc.host, l)
			}
		}
	}
	// Several at once: one question.
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get("http://burst.test:" + port + "/")
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("burst: %v %v", resp, err)
			}
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := questions("burst.test"); n != 1 {
		t.Errorf("five requests at once asked %d times, want 1", n)
	}
	// A tunnel to a destination let through for the session.
	conn := connect(t, e.proxyURL.Host, "session.test:"+port)
	conn.Close()
}

// TestAskQuestion: the question names the request as the proxy sees it (a
// plain request's method and path, a tunnel's CONNECT without one), and an
// answer for an IP literal, which the user saw as the address itself, lets
// it reach that address though it is local, as a listed one does; a name
// answered for the session still may not resolve to one.
func TestAskQuestion(t *testing.T) {
	_, port := backend(t)
	asked := &sync.Map{}
	e := askEnv(t, map[string]Answer{"127.0.0.1": AnswerOnce, "local.test": AnswerSession, "tunnel.test": AnswerDeny}, asked, time.Second)
	c := e.client()
	if code, body := get(t, c, "http://127.0.0.1:"+port+"/some/path?x=1"); code != 200 || !strings.Contains(body, "path=/some/path") {
		t.Errorf("127.0.0.1 let through once: %d %s", code, body)
	}
	if code, _ := get(t, c, "http://local.test:"+port+"/"); code != 403 {
		t.Errorf("local.test, a name resolving to 127.0.0.1, let through: %d", code)
	}
	conn, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT tunnel.test:443 HTTP/1.1\r\nHost: tunnel.test:443\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != 403 {
		t.Errorf("CONNECT tunnel.test, denied: %v %v", resp, err)
	}
	conn.Close()
	for host, want := range map[string]Question{
		"127.0.0.1":   {Host: "127.0.0.1", Port: atoi(t, port), Method: "GET", Path: "/some/path?x=1"},
		"local.test":  {Host: "local.test", Port: atoi(t, port), Method: "GET", Path: "/"},
		"tunnel.test": {Host: "tunnel.test", Port: 443, Method: "CONNECT"},
	} {
		if got, _ := asked.Load("last:" + host); got != want {
			t.Errorf("asked %+v, want %+v", got, want)
		}
	}
	for _, l := range e.log.entries(t) {
		if l.Host == "127.0.0.1" && (!l.Allowed || l.Rule != "asked: once" || l.Status != 200) {
			t.Errorf("127.0.0.1 logged %+v", l)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rawStatus sends the request line req (with a Host header) to the proxy and returns the
// status of its answer.
func rawStatus(t *testing.T, e env, req string) int {
	t.Helper()
	conn, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "%s\r\nHost: x.test\r\n\r\n", req)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%.60q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAskBoundsWhatTheAgentWrites: what the agent writes into a question is bounded so that the
// question fits the user's screen whole: a host no DNS name or address can be (every way
// validName refuses one: too long, a label too long, an empty label, a byte outside its
// alphabet, in a request in absolute form and in a CONNECT, percent-encoded or raw) is refused
// without asking; a long path is asked cut, and logged whole; past maxOpenQuestions open at once,
// another destination is refused without asking while the open ones still wait.
func TestAskBoundsWhatTheAgentWrites(t *testing.T) {
	_, port := backend(t)
	answers := map[string]Answer{"path.test": AnswerOnce}
	for i := range maxOpenQuestions + 1 {
		answers["open"+strconv.Itoa(i)+".test"] = -1
	}
	bad := []string{strings.Repeat("a.", 126) + "aa", strings.Repeat("a", 64) + ".test", "a..test", "-a.test"}
	for _, r := range []rune{0x01, 0x1b, 0x7f, 0x85, 0x9b, 0x202e, 0x2066, 0x200b, 0xfeff, 'é', ' '} {
		bad = append(bad, "a"+string(r)+"b.test")
	}
	for _, h := range bad {
		answers[h] = AnswerDeny // asked, the answer is quick
	}
	asked := &sync.Map{}
	e := askEnv(t, answers, asked, time.Minute)
	questions := func() int {
		n := 0
		asked.Range(func(k, _ any) bool {
			if !strings.HasPrefix(k.(string), "last:") {
				n++
			}
			return true
		})
		return n
	}

	for _, h := range bad {
		for _, req := range []string{
			"GET http://" + url.PathEscape(h) + ":" + port + "/ HTTP/1.1",
			"CONNECT " + url.PathEscape(h) + ":443 HTTP/1.1",
			"CONNECT " + h + ":443 HTTP/1.1",
		} {
			if code := rawStatus(t, e, req); code != 403 && code != 400 {
				t.Errorf("%.80q: %d, want it refused", req, code)
			}
		}
	}
	if n := questions(); n != 0 {
		var hosts []string
		asked.Range(func(k, _ any) bool { hosts = append(hosts, fmt.Sprintf("%q", k)); return true })
		t.Errorf("%d questions about hosts no name can be: %v", n, hosts)
	}

	long := "/" + strings.Repeat("ab", 4000) + "?end"
	if code, _ := get(t, e.client(), "http://path.test:"+port+long); code != 200 {
		t.Errorf("a long path let through once: %d", code)
	}
	got, _ := asked.Load("last:path.test")
	if q, _ := got.(Question); len(q.Path) > maxQuestionPath+len("…") || !strings.HasSuffix(q.Path, "…") ||
		!strings.HasPrefix(long, strings.TrimSuffix(q.Path, "…")) || !utf8.ValidString(q.Path) {
		t.Errorf("the question's path (%d bytes) is not the path cut at %d: %.80q…", len(q.Path), maxQuestionPath, q.Path)
	}
	if p := cutPath("/" + strings.Repeat("é", 4000)); !utf8.ValidString(p) || len(p) > maxQuestionPath+len("…") {
		t.Errorf("a path of two-byte characters is cut to %d bytes, valid UTF-8 %v", len(p), utf8.ValidString(p))
	}
	for _, l := range e.log.entries(t) {
		if l.Host == "path.test" && l.Path != long {
			t.Errorf("the log's path is not whole: %d bytes", len(l.Path))
		}
	}

	// maxOpenQuestions never answered, then one more.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range maxOpenQuestions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://open"+strconv.Itoa(i)+".test:"+port+"/", nil)
			if resp, err := e.client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); questions() < 1+maxOpenQuestions; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d questions open, want %d", questions()-1, maxOpenQuestions)
		}
	}
	extra := "open" + strconv.Itoa(maxOpenQuestions) + ".test"
	if code, _ := get(t, e.client(), "http://"+extra+":"+port+"/"); code != 403 {
		t.Errorf("a destination past %d open questions: %d, want 403", maxOpenQuestions, code)
	}
	if _, ok := asked.Load(extra); ok {
		t.Errorf("a destination past %d open questions was asked about", maxOpenQuestions)
	}
}
