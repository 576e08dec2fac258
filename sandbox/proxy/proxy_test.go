package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDNS maps test names to addresses and counts lookups.
type fakeDNS struct {
	names   map[string][]netip.Addr
	lookups atomic.Int64
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.lookups.Add(1)
	if a, ok := f.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// syncBuffer is a log sink safe for the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) entries(t *testing.T) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// waitEntries waits until the log holds n entries: a line is written when
// the handler returns, which may be after the client has its response.
func (s *syncBuffer) waitEntries(t *testing.T, n int) []Entry {
	t.Helper()
	var l []Entry
	for range 200 {
		if l = s.entries(t); len(l) >= n {
			break
		}
		waitABit()
	}
	if len(l) != n {
		t.Fatalf("log has %d entries, want %d: %+v", len(l), n, l)
	}
	return l
}

type env struct {
	proxyURL *url.URL
	dns      *fakeDNS
	log      *syncBuffer
	dialed   *[]string
}

// startProxy serves a proxy on 127.0.0.1 for the allow-list. Dials go to
// the real address, except 203.0.113.0/24 (documentation addresses standing
// for public servers), which is sent to the test server at 127.0.0.1.
func startProxy(t testing.TB, allow []string, names map[string][]netip.Addr) env {
	t.Helper()
	rules, err := ParseRules(allow)
	if err != nil {
		t.Fatal(err)
	}
	dns := &fakeDNS{names: names}
	log := &syncBuffer{}
	var dialed []string
	var dmu sync.Mutex
	d := &net.Dialer{}
	p := New(Config{
		Allow:    rules,
		Resolver: dns,
		Log:      log,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dmu.Lock()
			dialed = append(dialed, addr)
			dmu.Unlock()
			ap := netip.MustParseAddrPort(addr)
			if netip.MustParsePrefix("203.0.113.0/24").Contains(ap.Addr()) {
				addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()).String()
			}
			return d.DialContext(ctx, network, addr)
		},
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	u, _ := url.Parse("http://" + l.Addr().String())
	return env{proxyURL: u, dns: dns, log: log, dialed: &dialed}
}

func (e env) client() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.proxyURL)}}
}

func backend(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "host=%s path=%s body=%s", r.Host, r.URL.Path, body)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestExactNameMayGoWhereItResolves(t *testing.T) {
	_, port := backend(t)
	e := startProxy(t, []string{"api.test:" + port}, map[string][]netip.Addr{"api.test": addrs("127.0.0.1")})
	code, body := get(t, e.client(), "http://api.test:"+port+"/v1")
	if code != 200 || body != "host=api.test:"+port+" path=/v1 body=" {
		t.Fatalf("%d %q", code, body)
	}
	resp, err := e.client().Post("http://API.test.:"+port+"/up", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST with upper case and trailing dot: %d", resp.StatusCode)
	}
	var l Entry
	for _, en := range e.log.waitEntries(t, 2) { // lines may come in either order
		if en.Method == "POST" {
			l = en
		}
	}
	if !l.Allowed || l.Method != "POST" || l.Host != "api.test" || l.Port != mustAtoi(port) || l.Up != 5 || l.Down == 0 || l.Status != 200 {
		t.Errorf("log entry %+v", l)
	}
}

func mustAtoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func TestNotListedIsDeniedWithoutLookup(t *testing.T) {
	_, port := backend(t)
	e := startProxy(t, []string{"api.test:" + port}, map[string][]netip.Addr{"evil.test": addrs("127.0.0.1")})
	code, _ := get(t, e.client(), "http://evil.test:"+port+"/")
	if code != http.StatusForbidden {
		t.Fatalf("status %d", code)
	}
	if n := e.dns.lookups.Load(); n != 0 {
		t.Errorf("%d lookups for a name not in the list", n)
	}
	l := e.log.waitEntries(t, 1)
	if l[0].Allowed || l[0].Reason != "not in the allow-list" || l[0].Host != "evil.test" {
		t.Errorf("log %+v", l)
	}
}

func TestPortDefaults(t *testing.T) {
	_, port := backend(t)
	// No port: 80 and 443 only; the test server's port is neither.
	e := startProxy(t, []string{"api.test"}, map[string][]netip.Addr{"api.test": addrs("127.0.0.1")})
	if code, _ := get(t, e.client(), "http://api.test:"+port+"/"); code != http.StatusForbidden {
		t.Fatalf("port %s allowed by a rule without port: %d", port, code)
	}
	rules, _ := ParseRules([]string{"api.test"})
	for _, p := range []int{80, 443} {
		if matchRules(rules, "api.test", p) != exactMatch {
			t.Errorf("port %d not allowed", p)
		}
	}
}

func TestIPLiterals(t *testing.T) {
	_, port := backend(t)
	e := startProxy(t, []string{"*.example.test:" + port, "api.test:" + port}, nil)
	if code, _ := get(t, e.client(), "http://127.0.0.1:"+port+"/"); code != http.StatusForbidden {
		t.Fatalf("unlisted IP literal: %d", code)
	}
	// A wildcard whose suffix looks like the end of an address covers
	// names, never IP literals.
	e = startProxy(t, []string{"*.0.0.1:" + port, "*.8.8:" + port}, nil)
	for _, ip := range []string{"127.0.0.1", "8.8.8.8"} {
		if code, _ := get(t, e.client(), "http://"+ip+":"+port+"/"); code != http.StatusForbidden {
			t.Errorf("IP literal %s through a wildcard: %d", ip, code)
		}
	}
	e = startProxy(t, []string{"127.0.0.1:" + port}, nil)
	if code, _ := get(t, e.client(), "http://127.0.0.1:"+port+"/"); code != 200 {
		t.Fatalf("listed IP literal: %d", code)
	}
}

// TestWildcardRebinding: a wildcard-matched name that resolves to loopback,
// private or link-local addresses is refused; to a public address it is
// allowed; with both, only the public one is dialed.
func TestWildcardRebinding(t *testing.T) {
	_, port := backend(t)
	e := startProxy(t, []string{"*.example.test:" + port}, map[string][]netip.Addr{
		"loop.example.test":   addrs("127.0.0.1"),
		"lan.example.test":    addrs("192.168.1.10", "10.0.0.1"),
		"meta.example.test":   addrs("169.254.169.254"),
		"mapped.example.test": addrs("::ffff:127.0.0.1"),
		"v6loop.example.test": addrs("::1"),
		"pub.example.test":    addrs("203.0.113.7"),
		"mixed.example.test":  addrs("127.0.0.1", "203.0.113.8"),
	})
	for _, name := range []string{"loop", "lan", "meta", "mapped", "v6loop"} {
		code, body := get(t, e.client(), "http://"+name+".example.test:"+port+"/")
		if code != http.StatusForbidden || !strings.Contains(body, "local or private") {
			t.Errorf("%s: %d %q", name, code, body)
		}
	}
	if code, body := get(t, e.client(), "http://pub.example.test:"+port+"/"); code != 200 {
		t.Errorf("public: %d %q", code, body)
	}
	if code, _ := get(t, e.client(), "http://mixed.example.test:"+port+"/"); code != 200 {
		t.Errorf("mixed: %d", code)
	}
	for _, d := range *e.dialed {
		if strings.HasPrefix(d, "127.") || strings.HasPrefix(d, "192.168.") || strings.HasPrefix(d, "169.254.") || strings.HasPrefix(d, "[::") {
			t.Errorf("dialed a local address %s", d)
		}
	}
	// The wildcard does not cover the domain itself.
	if code, _ := get(t, e.client(), "http://example.test:"+port+"/"); code != http.StatusForbidden {
		t.Errorf("bare domain under a wildcard: %d", code)
	}
	denied := 0
	for _, l := range e.log.waitEntries(t, 8) {
		if !l.Allowed {
			denied++
		}
	}
	if denied != 6 {
		t.Errorf("%d denied entries, want 6", denied)
	}
}

// TestConnectTunnel: HTTPS through CONNECT, bytes counted both ways.
func TestConnectTunnel(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret-ok")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// httptest's certificate is valid for example.com.
	e := startProxy(t, []string{"example.com:" + port}, map[string][]netip.Addr{"example.com": addrs("127.0.0.1")})
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(e.proxyURL)
	c := &http.Client{Transport: tr}
	code, body := get(t, c, "https://example.com:"+port+"/")
	if code != 200 || body != "secret-ok" {
		t.Fatalf("%d %q", code, body)
	}
	tr.CloseIdleConnections()
	// The log line is written when the tunnel closes.
	l := e.log.waitEntries(t, 1)
	if !l[0].Allowed || l[0].Method != "CONNECT" || l[0].Up < 100 || l[0].Down < 100 {
		t.Fatalf("log %+v", l)
	}
	// CONNECT to a port not listed.
	conn, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT example.com:22 HTTP/1.1\r\nHost: example.com:22\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to port 22: %v %v", resp, err)
	}
}

func TestNotAProxyRequest(t *testing.T) {
	e := startProxy(t, []string{"api.test"}, nil)
	code, _ := get(t, http.DefaultClient, e.proxyURL.String()+"/")
	if code != http.StatusBadRequest {
		t.Fatalf("origin-form request: %d", code)
	}
}

// TestHostHeaderCannotDiffer: a request whose Host header names another
// host than its URL reaches the URL's host with the URL's host in Host.
func TestHostHeaderCannotDiffer(t *testing.T) {
	_, port := backend(t)
	e := startProxy(t, []string{"api.test:" + port}, map[string][]netip.Addr{"api.test": addrs("127.0.0.1")})
	conn, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET http://api.test:%s/ HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "host=api.test:"+port) {
		t.Fatalf("server saw %d %q", resp.StatusCode, b)
	}
}

func TestUnreachableIsLoggedAsAllowedFailure(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	e := startProxy(t, []string{"api.test:" + port}, map[string][]netip.Addr{"api.test": addrs("127.0.0.1")})
	if code, _ := get(t, e.client(), "http://api.test:"+port+"/"); code != http.StatusBadGateway {
		t.Fatalf("closed port: %d", code)
	}
	if code, _ := get(t, e.client(), "http://api.test:"+port+"/"); code != http.StatusBadGateway {
		t.Fatalf("closed port: %d", code)
	}
	for _, en := range e.log.waitEntries(t, 2) {
		if !en.Allowed || en.Reason == "" || en.Status != http.StatusBadGateway {
			t.Errorf("entry %+v", en)
		}
	}
}

func TestParseRule(t *testing.T) {
	good := map[string]Rule{
		"api.example.com":       {Host: "api.example.com"},
		"API.Example.com.:8443": {Host: "api.example.com", Port: 8443},
		"*.example.com":         {Host: "example.com", Wildcard: true},
		"*.example.com:443":     {Host: "example.com", Wildcard: true, Port: 443},
		"10.1.2.3":              {Host: "10.1.2.3"},
		"10.1.2.3:8080":         {Host: "10.1.2.3", Port: 8080},
		"[::1]:8080":            {Host: "::1", Port: 8080},
		"[2001:db8::1]":         {Host: "2001:db8::1"},
		"my_host.internal":      {Host: "my_host.internal"},
	}
	for in, want := range good {
		got, err := ParseRule(in)
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseRule(got.String()); err != nil || again != got {
			t.Errorf("String() of %q = %q does not parse back", in, got.String())
		}
	}
	for _, in := range []string{"", "*", "*.com", "https://x.com", "x.com:0", "x.com:99999", "x.com:http", "a..b", "-a.com", "ex ample.com", "*.*.com"} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", in, r)
		}
	}
}

func TestLocalAddr(t *testing.T) {
	for a, want := range map[string]bool{
		"127.0.0.1": true, "10.0.0.1": true, "172.16.0.1": true, "192.168.0.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "0.0.0.0": true, "::1": true, "fe80::1": true, "fd00::1": true, "::ffff:10.0.0.1": true,
		"8.8.8.8": false, "2606:4700::1111": false, "203.0.113.1": false,
	} {
		if got := LocalAddr(netip.MustParseAddr(a)); got != want {
			t.Errorf("LocalAddr(%s) = %v", a, got)
		}
	}
}

func waitABit() { time.Sleep(10 * time.Millisecond) }

// TestCloseLogsOpenTunnels: a tunnel still open when the proxy closes is
// logged before Close returns, so the log may be closed right after.
func TestCloseLogsOpenTunnels(t *testing.T) {
	_, port := backend(t)
	rules, _ := ParseRules([]string{"api.test:" + port})
	log := &syncBuffer{}
	p := New(Config{Allow: rules, Resolver: &fakeDNS{names: map[string][]netip.Addr{"api.test": addrs("127.0.0.1")}}, Log: log})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT api.test:%s HTTP/1.1\r\nHost: api.test:%s\r\n\r\n", port, port)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	p.Close()
	if l := log.entries(t); len(l) != 1 || l[0].Method != "CONNECT" || !l[0].Allowed {
		t.Fatalf("log right after Close: %+v", l)
	}
}
