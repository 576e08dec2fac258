package proxy

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// askEnv is a proxy whose allow-list is empty and that asks answers[host].
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
		Ask: func(ctx context.Context, host string, port int) Answer {
			n, _ := asked.LoadOrStore(host, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			a, ok := answers[host]
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
