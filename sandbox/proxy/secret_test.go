package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

const (
	testPlaceholder = "shadow-secret-API_KEY-0123456789abcdef"
	testSecret      = "sk-real-value-42"
)

// seen is what a stand-in for the real server received.
type seen struct {
	mu   sync.Mutex
	reqs []string // method, URL, headers and body of each request, as text
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n")
}

// tlsBackend is a TLS server for name with a CA of its own (not the
// host's), recording what it receives; roots trusts it.
func tlsBackend(t testing.TB, name string) (srv *httptest.Server, port string, roots *x509.CertPool, rec *seen) {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.leaf(name)
	if err != nil {
		t.Fatal(err)
	}
	rec = &seen{}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s host=%s\n", r.Method, r.URL.RequestURI(), r.Host)
		r.Header.Write(&b)
		b.Write(body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, b.String())
		rec.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	roots = x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	return srv, port, roots, rec
}

// secretEnv is a proxy with one secret, API_KEY, for hosts.
type secretEnv struct {
	env
	ca *CA
}

func startSecretProxy(t testing.TB, allow, hosts []string, names map[string][]netip.Addr, roots *x509.CertPool) secretEnv {
	t.Helper()
	rules, err := ParseRules(allow)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	dns := &fakeDNS{names: names}
	p := New(Config{Allow: rules, Resolver: dns, Log: log, CA: ca, Roots: roots,
		Secrets: []Secret{{Name: "API_KEY", Placeholder: testPlaceholder, Value: testSecret, Hosts: hosts}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	u, _ := url.Parse("http://" + l.Addr().String())
	return secretEnv{env: env{proxyURL: u, dns: dns, log: log}, ca: ca}
}

// trusting is a client of the proxy that trusts the session's CA.
func (e secretEnv) trusting() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.Certificate())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func TestSecretPutIntoHeaders(t *testing.T) {
	_, port, roots, rec := tlsBackend(t, "api.test")
	e := startSecretProxy(t, []string{"api.test:" + port}, []string{"api.test"},
		map[string][]netip.Addr{"api.test": addrs("127.0.0.1")}, roots)
	c := e.trusting()
	for i := range 3 { // one kept-alive connection
		req, _ := http.NewRequest("POST", "https://api.test:"+port+"/v1/messages?n="+strconv.Itoa(i), strings.NewReader("prompt "+testPlaceholder))
		req.Header.Set("X-Api-Key", testPlaceholder)
		req.Header.Set("Authorization", "Bearer "+testPlaceholder)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	got := rec.all()
	for _, want := range []string{"X-Api-Key: " + testSecret + "\r\n", "Authorization: Bearer " + testSecret + "\r\n",
		"host=api.test:" + port, "prompt " + testPlaceholder} {
		if !strings.Contains(got, want) {
			t.Errorf("the server did not see %q; it saw:\n%s", want, got)
		}
	}
	if strings.Count(got, testSecret) != 6 {
		t.Errorf("the real value is not exactly where the placeholder was in the headers:\n%s", got)
	}
	log := e.log.waitEntries(t, 3)
	e.log.mu.Lock()
	raw := e.log.b.String()
	e.log.mu.Unlock()
	if strings.Contains(raw, testSecret) {
		t.Errorf("the log holds the real value:\n%s", raw)
	}
	for i, l := range log {
		if l.Method != "POST" || l.Scheme != "https" || l.Path != "/v1/messages?n="+strconv.Itoa(i) || l.Status != 200 ||
			!l.Allowed || len(l.Secrets) != 1 || l.Secrets[0] != "API_KEY" || l.Rule != "api.test:"+port {
			t.Errorf("log entry %d: %+v", i, l)
		}
	}
}

// TestSecretRefusedElsewhere sends the placeholder everywhere it may not
// go: each request is refused, logged as such, and the server sees no
// placeholder and no real value.
func TestSecretRefusedElsewhere(t *testing.T) {
	_, port, roots, rec := tlsBackend(t, "api.test")
	plainRec := &seen{}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL.RequestURI())
		r.Header.Write(&b)
		b.Write(body)
		plainRec.mu.Lock()
		plainRec.reqs = append(plainRec.reqs, b.String())
		plainRec.mu.Unlock()
	}))
	defer plain.Close()
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	e := startSecretProxy(t, []string{"api.test:" + port, "other.test:" + port, "other.test:" + plainPort, "api.test:" + plainPort}, []string{"api.test"},
		map[string][]netip.Addr{"api.test": addrs("127.0.0.1"), "other.test": addrs("127.0.0.1")}, roots)
	c := e.trusting()
	other := "http://other.test:" + plainPort
	cases := []struct {
		name   string
		req    func() *http.Request
		reason string
	}{
		{"header to another host", func() *http.Request {
			r, _ := http.NewRequest("GET", other+"/", nil)
			r.Header.Set("Authorization", "Bearer "+testPlaceholder)
			return r
		}, "headers"},
		{"header name to another host", func() *http.Request {
			r, _ := http.NewRequest("GET", other+"/", nil)
			r.Header.Set("X-"+testPlaceholder, "1")
			return r
		}, "headers"},
		{"URL to another host", func() *http.Request {
			r, _ := http.NewRequest("GET", other+"/?k="+testPlaceholder, nil)
			return r
		}, "URL"},
		{"body to another host", func() *http.Request {
			r, _ := http.NewRequest("POST", other+"/", io.MultiReader(strings.NewReader(strings.Repeat("x", 100<<10)), strings.NewReader(testPlaceholder), strings.NewReader("tail")))
			return r
		}, "body"},
		{"URL to its own host", func() *http.Request {
			r, _ := http.NewRequest("GET", "https://api.test:"+port+"/?key="+testPlaceholder, nil)
			return r
		}, "URL"},
		{"path to its own host", func() *http.Request {
			r, _ := http.NewRequest("GET", "https://api.test:"+port+"/"+testPlaceholder, nil)
			return r
		}, "URL"},
	}
	for i, tc := range cases {
		resp, err := c.Do(tc.req())
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: status %d, want 403", tc.name, resp.StatusCode)
			}
		}
		l := e.log.waitEntries(t, i+1)[i]
		if l.Allowed || !strings.Contains(l.Reason, "placeholder of API_KEY in its "+tc.reason) {
			t.Errorf("%s: logged %+v", tc.name, l)
		}
	}
	// Plain HTTP to the secret's own host, off this machine: the value would
	// cross the network unencrypted.
	req, _ := http.NewRequest("GET", "http://api.test:"+plainPort+"/", nil)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("plain HTTP to the secret's host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if l := e.log.waitEntries(t, len(cases)+1)[len(cases)]; l.Allowed || !strings.Contains(l.Reason, "unencrypted") {
		t.Errorf("plain HTTP to the secret's host: logged %+v", l)
	}
	// The CONNECT's own headers.
	conn, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT other.test:%s HTTP/1.1\r\nHost: other.test:%s\r\nProxy-Authorization: Basic %s\r\n\r\n", port, port, testPlaceholder)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT carrying the placeholder: %v %v", resp, err)
	}
	if got := rec.all() + plainRec.all(); strings.Contains(got, testPlaceholder) || strings.Contains(got, testSecret) {
		t.Errorf("a server received the placeholder or the value:\n%s", got)
	}
}

// TestTerminationFailsClosed: a client that does not trust the session's
// CA, or that names another server in its hello or its Host header, gets
// nothing through, and the server sees nothing.
func TestTerminationFailsClosed(t *testing.T) {
	_, port, roots, rec := tlsBackend(t, "api.test")
	e := startSecretProxy(t, []string{"api.test:" + port, "other.test:" + port}, []string{"api.test"},
		map[string][]netip.Addr{"api.test": addrs("127.0.0.1"), "other.test": addrs("127.0.0.1")}, roots)

	// Not trusting the CA: the host's roots only.
	untrusting := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.proxyURL)}}
	req, _ := http.NewRequest("GET", "https://api.test:"+port+"/", nil)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	if resp, err := untrusting.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a client that does not trust the CA got through: %d", resp.StatusCode)
	}
	l := e.log.waitEntries(t, 1)[0]
	if l.Allowed || l.Method != "CONNECT" || !strings.Contains(l.Reason, "TLS with the session's CA failed") {
		t.Errorf("logged %+v", l)
	}

	pool := x509.NewCertPool()
	pool.AddCert(e.ca.Certificate())
	// Another server named in the client hello than the CONNECT's target.
	conn := connect(t, e.proxyURL.Host, "api.test:"+port)
	tc := tls.Client(conn, &tls.Config{ServerName: "other.test", RootCAs: pool})
	if err := tc.Handshake(); err == nil {
		t.Errorf("a hello naming other.test inside CONNECT api.test was served")
	}
	conn.Close()
	l = e.log.waitEntries(t, 2)[1]
	if l.Allowed || !strings.Contains(l.Reason, `the TLS server name "other.test" differs`) {
		t.Errorf("logged %+v", l)
	}

	// Another Host header inside, on a kept-alive connection after a good request.
	conn = connect(t, e.proxyURL.Host, "api.test:"+port)
	defer conn.Close()
	tc = tls.Client(conn, &tls.Config{ServerName: "api.test", RootCAs: pool})
	br := bufio.NewReader(tc)
	for _, host := range []string{"api.test:" + port, "other.test:" + port} {
		fmt.Fprintf(tc, "GET /x HTTP/1.1\r\nHost: %s\r\nX-Api-Key: %s\r\n\r\n", host, testPlaceholder)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want := 200
		if strings.HasPrefix(host, "other") {
			want = http.StatusMisdirectedRequest
		}
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d", host, resp.StatusCode, want)
		}
	}
	if got := rec.all(); strings.Count(got, "GET /x") != 1 || strings.Contains(got, "other.test") {
		t.Errorf("the server saw:\n%s", got)
	}
}

// connect opens a CONNECT tunnel through the proxy at addr.
func connect(t *testing.T, addr, target string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	return conn
}

// TestTerminationKeepsAllowListRules: behind termination, a wildcard name
// that resolves to a local address (DNS rebinding) is still refused, and
// an IP literal that is not listed is refused before any TLS.
func TestTerminationKeepsAllowListRules(t *testing.T) {
	_, port, roots, rec := tlsBackend(t, "api.wild.test")
	e := startSecretProxy(t, []string{"*.wild.test:" + port}, []string{"*.wild.test", "127.0.0.1"},
		map[string][]netip.Addr{"api.wild.test": addrs("127.0.0.1")}, roots)
	c := e.trusting()
	req, _ := http.NewRequest("GET", "https://api.wild.test:"+port+"/", nil)
	req.Header.Set("X-Api-Key", testPlaceholder)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a wildcard name resolving to 127.0.0.1 behind termination: status %d", resp.StatusCode)
	}
	l := e.log.waitEntries(t, 1)[0]
	if l.Allowed || !strings.Contains(l.Reason, "local or private address") {
		t.Errorf("logged %+v", l)
	}
	req, _ = http.NewRequest("GET", "https://127.0.0.1:"+port+"/", nil)
	req.Header.Set("X-Api-Key", testPlaceholder)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("an unlisted IP literal: status %d", resp.StatusCode)
	}
	if l := e.log.waitEntries(t, 2)[1]; l.Allowed || l.Reason != "not in the allow-list" {
		t.Errorf("logged %+v", l)
	}
	if got := rec.all(); got != "" {
		t.Errorf("the server saw:\n%s", got)
	}
}

// TestGuardReader holds back a placeholder however the body is cut.
func TestGuardReader(t *testing.T) {
	pat := []byte(testPlaceholder)
	for _, body := range []string{"", "short", testPlaceholder[:20], "a" + testPlaceholder + "b", strings.Repeat("y", 70000) + testPlaceholder} {
		for _, half := range []bool{false, true} {
			var r io.Reader = strings.NewReader(body)
			if half {
				r = iotest.OneByteReader(r)
			}
			g := &guardReader{r: io.NopCloser(r), pats: [][]byte{bytes.ToLower(pat)}, names: []string{"API_KEY"}}
			got, err := io.ReadAll(g)
			if bytes.Contains([]byte(body), pat) {
				if err == nil || bytes.Contains(got, pat) {
					t.Errorf("body %.20q (one byte at a time: %v): passed %d bytes, err %v", body, half, len(got), err)
				}
			} else if err != nil || string(got) != body {
				t.Errorf("body %.20q (one byte at a time: %v): got %d bytes, err %v", body, half, len(got), err)
			}
		}
	}
}

// TestSecretForms enumerates the forms the proxy recognises a placeholder in (as it is, and
// base64-encoded in each alphabet at each of the three places it can start in base64's groups
// of three bytes, encodedForms) and sends each where the placeholder may and may not go: a Basic
// credential to the secret's host gets the value, encoded again; any other encoded form there is
// refused, since the value cannot be put into it; to another host, in a header, the URL or the
// body, every form is refused. The servers never see the value where it may not go, and each
// form of the code's list is met by the cases.
func TestSecretForms(t *testing.T) {
	_, port, roots, rec := tlsBackend(t, "api.test")
	plainRec := &seen{}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		plainRec.mu.Lock()
		plainRec.reqs = append(plainRec.reqs, r.URL.RequestURI()+"\n"+fmt.Sprint(r.Header)+"\n"+string(body))
		plainRec.mu.Unlock()
	}))
	defer plain.Close()
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	e := startSecretProxy(t, []string{"api.test:" + port, "other.test:" + plainPort}, []string{"api.test"},
		map[string][]netip.Addr{"api.test": addrs("127.0.0.1"), "other.test": addrs("127.0.0.1")}, roots)
	c := e.trusting()
	own, other := "https://api.test:"+port, "http://other.test:"+plainPort

	// Every encoding of the placeholder the cases send, and the forms of the code's list each meets.
	var encoded []string
	for _, enc := range encodings {
		for before := range 3 {
			encoded = append(encoded, enc.EncodeToString([]byte(strings.Repeat("u", before)+testPlaceholder+":pw")))
		}
	}
	for _, f := range encodedForms(testPlaceholder) {
		if !slices.ContainsFunc(encoded, func(s string) bool { return strings.Contains(s, f) }) {
			t.Errorf("no case sends the form %q", f)
		}
	}

	type result struct {
		status int
		reason string
	}
	do := func(r *http.Request) result {
		t.Helper()
		n := len(e.log.entries(t))
		resp, err := c.Do(r)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		l := e.log.waitEntries(t, n+1)[n]
		return result{l.Status, l.Reason}
	}
	req := func(method, u, body string, header ...string) *http.Request {
		r, _ := http.NewRequest(method, u, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}

	// Basic credentials to the secret's host: the value goes in.
	for _, cred := range []string{"user:" + testPlaceholder, testPlaceholder + ":", "a" + testPlaceholder + "b"} {
		for _, scheme := range []string{"Basic", "basic"} {
			v := scheme + " " + base64.StdEncoding.EncodeToString([]byte(cred))
			if got := do(req("GET", own+"/", "", "Authorization", v)); got.status != 200 {
				t.Errorf("%s %q to its host: %+v", scheme, cred, got)
			}
			want := "Authorization: " + scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(cred, testPlaceholder, testSecret)))
			if !strings.Contains(rec.all(), want+"\r\n") {
				t.Errorf("%s %q: the server did not get %q:\n%s", scheme, cred, want, rec.all())
			}
		}
	}
	// Every encoded form elsewhere.
	for i, enc := range encoded {
		for _, tc := range []struct {
			name, reason string
			r            *http.Request
		}{
			{"a header to its host", "base64-encoded other than as a Basic credential", req("GET", own+"/", "", "X-Token", enc)},
			{"a Basic credential to another host", "headers", req("GET", other+"/", "", "Authorization", "Basic "+enc)},
			{"a header to another host", "headers", req("GET", other+"/", "", "X-Token", enc)},
			{"the URL to another host", "URL", req("GET", other+"/?t="+url.QueryEscape(enc), "")},
			{"the URL to its host", "URL", req("GET", own+"/?t="+url.QueryEscape(enc), "")},
			{"the body to another host", "body", req("POST", other+"/", strings.Repeat("x", 40<<10)+enc+"tail")},
		} {
			if got := do(tc.r); got.status != http.StatusForbidden || !strings.Contains(got.reason, "placeholder of API_KEY in its") ||
				!strings.Contains(got.reason, tc.reason) {
				t.Errorf("form %d (%s) in %s: %+v", i, enc, tc.name, got)
			}
		}
	}
	if got := plainRec.all(); strings.Contains(got, testSecret) || slices.ContainsFunc(encodedForms(testPlaceholder), func(f string) bool {
		return strings.Contains(got, f)
	}) {
		t.Errorf("another host received the placeholder or the value:\n%s", got)
	}
	if got := rec.all(); strings.Contains(got, "X-Token") {
		t.Errorf("the secret's host received an encoded placeholder the value was not put into:\n%s", got)
	}
}
