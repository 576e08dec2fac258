package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/agenttest"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

const jailSecret = "sk-ant-real-secret-0f9e8d7c6b5a"

func init() {
	// "secret-tunnel": try to get past the proxy's TLS termination for
	// $TARGET (host:port): a hello naming another server, a Host header
	// naming another host, and a client that trusts only the host's roots
	// and not the session's CA. One line each.
	probes["secret-tunnel"] = func() []string {
		target := os.Getenv("TARGET")
		host, _, _ := net.SplitHostPort(target)
		pu, err := url.Parse(os.Getenv("HTTPS_PROXY"))
		if err != nil {
			return []string{"bad HTTPS_PROXY"}
		}
		bundle, _ := os.ReadFile(os.Getenv("SSL_CERT_FILE"))
		trusting := x509.NewCertPool()
		trusting.AppendCertsFromPEM(bundle)
		tunnel := func() (net.Conn, error) {
			c, err := net.Dial("tcp", pu.Host)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				c.Close()
				return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
			}
			return c, nil
		}
		var out []string
		// Another server name in the hello.
		if c, err := tunnel(); err == nil {
			tc := tls.Client(c, &tls.Config{ServerName: "other.test", RootCAs: trusting})
			out = append(out, "sni "+errName(tc.Handshake()))
			c.Close()
		} else {
			out = append(out, "sni "+err.Error())
		}
		// Another Host inside.
		if c, err := tunnel(); err == nil {
			tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: trusting})
			fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: other.test\r\nX-Api-Key: %s\r\n\r\n", os.Getenv("API_KEY"))
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil {
				out = append(out, "host "+errName(err))
			} else {
				out = append(out, fmt.Sprintf("host %d", resp.StatusCode))
			}
			c.Close()
		} else {
			out = append(out, "host "+err.Error())
		}
		// Not trusting the session's CA: an empty pool stands for a client
		// with a trust store of its own.
		if c, err := tunnel(); err == nil {
			tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: x509.NewCertPool()})
			out = append(out, "untrusting "+errName(tc.Handshake()))
			c.Close()
		} else {
			out = append(out, "untrusting "+err.Error())
		}
		return out
	}
}

// recorder is a stand-in for a real API: what it receives, as text.
type recorder struct {
	mu   sync.Mutex
	reqs []string
	// roots trust the server's certificate.
	roots *x509.CertPool
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", req.Method, req.URL.RequestURI())
		req.Header.Write(&b)
		body, _ := io.ReadAll(req.Body)
		b.Write(body)
		r.mu.Lock()
		r.reqs = append(r.reqs, b.String())
		r.mu.Unlock()
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.reqs, "\n---\n")
}

// secretServer is a TLS server on 127.0.0.1 with its own CA (httptest's,
// valid for example.com), standing in for an API host: it answers "ok",
// and serves a git repository over smart HTTP under /git/. The proxy of
// the test's jails trusts its CA, not the host's roots.
func secretServer(t *testing.T) (port string, rec *recorder) {
	t.Helper()
	rec = &recorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	if git, err := exec.LookPath("git"); err == nil {
		root := t.TempDir()
		repo := filepath.Join(root, "repo.git")
		work := filepath.Join(root, "work")
		for _, args := range [][]string{
			{"init", "-q", "--bare", repo},
			{"init", "-q", work},
			{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"},
			{"-C", work, "push", "-q", repo, "HEAD:refs/heads/main"},
		} {
			if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		mux.Handle("/git/", &cgi.Handler{Path: git, Args: []string{"http-backend"}, Root: "/git",
			Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + root}})
	}
	srv := httptest.NewUnstartedServer(rec.wrap(mux))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	rec.roots = pool
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return port, rec
}

// secretPolicy is the test jail's policy with secret API_KEY for
// example.com (the stand-in on 127.0.0.1), and api.test allowed too.
func secretPolicy(t *testing.T, j *testJail, port, plainPort string, roots *x509.CertPool) setup {
	p := j.policy()
	p.AllowDomains = mustRules(t, "example.com:"+port, "api.test:"+port, "api.test:"+plainPort)
	p.NetLog = filepath.Join(j.base, "state", "net.log")
	p.Secrets = []proxy.Secret{{Name: "API_KEY", Value: jailSecret, Hosts: []string{"example.com"}}}
	p.Resolver, p.Roots = testDNS{"example.com": loopback(), "api.test": loopback()}, roots
	return p
}

// node24Env names, in the environment of TestUnprivileged's re-run, the
// Node 24 binary its root half installed and linked where the unprivileged
// user may run it: that user's npm has neither root's cache nor its
// configuration.
const node24Env = "SHADOW_TEST_NODE24"

func init() {
	unprivFixtures = append(unprivFixtures, func(t *testing.T, _, _ int) []string {
		var node string
		t.Run("node-24", func(t *testing.T) { node = agenttest.Node(t) })
		if node == "" {
			return nil
		}
		d, err := os.MkdirTemp("", "shadow-node-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(d, "node")
		if os.Link(node, link) != nil {
			if err := copyFile(node, link, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return []string{node24Env + "=" + link}
	})
}

var placeholderForm = regexp.MustCompile(`^shadow-secret-API_KEY-[0-9a-f]{16}$`)

// TestAllowDomainSecretClients: curl, Node, Python's urllib and git in the
// jail, given only the placeholder, reach the stand-in for the API host
// through the proxy's TLS termination; the server sees the real value
// exactly where each client put the placeholder, and the network log has
// each request with its path and the placeholder only. Node's built-in
// fetch is tried with Node 24 from npm (the first Node whose fetch uses
// the proxy variables, with NODE_USE_ENV_PROXY as the jail sets it),
// shown in the jail read-only.
func TestAllowDomainSecretClients(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	port, rec := secretServer(t)
	p := secretPolicy(t, j, port, port, rec.roots)
	script := `u=https://example.com:$PORT
echo "placeholder=$API_KEY"
echo "curl=$(curl -sS -H "X-Api-Key: $API_KEY" -H "X-Client: curl" $u/curl 2>&1)"
if command -v python3 >/dev/null; then
  echo "python=$(python3 -c 'import os, urllib.request as u
r = u.Request(os.environ["U"] + "/python", headers={"X-Api-Key": os.environ["API_KEY"], "X-Client": "python"})
print(u.urlopen(r).read().decode())' 2>&1)"
fi
if command -v node >/dev/null; then
  echo "node=$(node -e '
const http = require("http"), https = require("https"), tls = require("tls");
const proxy = new URL(process.env.HTTPS_PROXY), target = "example.com:" + process.env.PORT;
http.request({host: proxy.hostname, port: proxy.port, method: "CONNECT", path: target}).on("connect", (res, socket) => {
  const s = tls.connect({socket, servername: "example.com"}, () => s.write("GET /node HTTP/1.1\r\nHost: " + target +
    "\r\nX-Api-Key: " + process.env.API_KEY + "\r\nX-Client: node\r\nConnection: close\r\n\r\n"));
  let b = ""; s.on("data", d => b += d); s.on("end", () => console.log(b.split("\r\n\r\n")[1])); s.on("error", e => console.log(e.message));
}).on("error", e => console.log(e.message)).end();' 2>&1)"
fi
if command -v git >/dev/null; then
  echo "git=$(git -c http.extraHeader="Authorization: Bearer $API_KEY" ls-remote $u/git/repo.git 2>&1 | tr '\t' ' ')"
fi
env | grep -E '^(SSL_CERT_FILE|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_SSL_CAINFO)='
`
	p.Env = append(append([]string{}, p.Env...), "PORT="+port, "U=https://example.com:"+port)
	_, out, errOut := j.run(t, p, "/bin/sh", "-c", script)
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			lines[k] = v
		}
	}
	if !placeholderForm.MatchString(lines["placeholder"]) {
		t.Fatalf("the jail's API_KEY is %q, want a placeholder\n%s%s", lines["placeholder"], out, errOut)
	}
	for _, v := range caBundleEnv {
		if lines[v] == "" {
			t.Errorf("%s is not set in the jail", v)
		}
	}
	got := rec.all()
	for _, c := range []string{"curl", "python", "node", "git"} {
		if _, tried := lines[c]; !tried {
			t.Logf("%s is not installed: not tried", c)
			continue
		}
		want := "ok"
		if c == "git" {
			want = "refs/heads/main"
		}
		if !strings.Contains(lines[c], want) {
			t.Errorf("%s in the jail got %q, want %q", c, lines[c], want)
		}
		header := "X-Api-Key: " + jailSecret + "\r\n"
		if c == "git" {
			header = "Authorization: Bearer " + jailSecret + "\r\n"
		}
		found := false
		for _, r := range strings.Split(got, "\n---\n") {
			if (strings.Contains(r, "X-Client: "+c+"\r\n") || c == "git" && strings.Contains(r, "/git/")) && strings.Contains(r, header) {
				found = true
			}
		}
		if !found {
			t.Errorf("the server never saw %s's request with the real value in place of the placeholder; it saw:\n%s", c, got)
		}
	}
	if strings.Contains(got, lines["placeholder"]) {
		t.Errorf("the server saw the placeholder:\n%s", got)
	}
	raw, _ := os.ReadFile(p.NetLog)
	if strings.Contains(string(raw), jailSecret) {
		t.Errorf("the network log holds the real value:\n%s", raw)
	}
	paths := map[string]bool{}
	for _, e := range readNetLog(t, p.NetLog) {
		if e.Scheme == "https" && e.Allowed && len(e.Secrets) == 1 {
			paths[e.Path] = true
		}
	}
	for c, want := range map[string]string{"curl": "/curl", "python": "/python", "node": "/node",
		"git": "/git/repo.git/info/refs?service=git-upload-pack"} {
		if _, tried := lines[c]; tried && !paths[want] {
			t.Errorf("the network log has no terminated request for %s with its secret: %v", want, paths)
		}
	}

	t.Run("node-fetch", func(t *testing.T) {
		node := os.Getenv(node24Env)
		if node == "" {
			node = agenttest.Node(t)
		}
		q := p
		q.ReadOnly = append(slices.Clone(p.ReadOnly), filepath.Dir(node))
		q.Env = append(slices.Clone(p.Env), "NODE="+node)
		_, out, errOut := j.run(t, q, "/bin/sh", "-c", `"$NODE" -e 'fetch(process.env.U + "/node-fetch", {headers: {"X-Api-Key": process.env.API_KEY, "X-Client": "node-fetch"}})
  .then(r => r.text()).then(b => console.log("node-fetch=" + b), e => console.log("node-fetch=" + e.message + ": " + (e.cause && e.cause.message)))' 2>&1`)
		if !strings.Contains(out, "node-fetch=ok") {
			t.Fatalf("Node 24's fetch in the jail printed %q, want node-fetch=ok\n%s", out, errOut)
		}
		got := rec.all()
		found := false
		for _, r := range strings.Split(got, "\n---\n") {
			if strings.HasPrefix(r, "GET /node-fetch\n") && strings.Contains(r, "X-Client: node-fetch\r\n") &&
				strings.Contains(r, "X-Api-Key: "+jailSecret+"\r\n") {
				found = true
			}
		}
		if !found {
			t.Errorf("the server never saw Node's fetch with the real value in place of the placeholder; it saw:\n%s", got)
		}
		if strings.Contains(got, lines["placeholder"]) {
			t.Errorf("the server saw the placeholder:\n%s", got)
		}
		logged := false
		for _, e := range readNetLog(t, p.NetLog) {
			logged = logged || e.Scheme == "https" && e.Allowed && len(e.Secrets) == 1 && e.Path == "/node-fetch"
		}
		if !logged {
			t.Errorf("the network log has no terminated request for /node-fetch with its secret")
		}
	})
}

// TestEscapeSecret tries to get the real value of a secret, or the
// session's CA key, from inside the jail: the environment, every
// process's environ and command line under /proc, every file under /run,
// /etc/ssl, /tmp and $HOME, and a file written into the project (which is
// staged); then to send the placeholder to an allowed host it is not for
// (in a header, the URL and the body), and to get past the TLS
// termination (another server name, another Host, a client not trusting
// the CA). None of it works, and every refusal is logged.
func TestEscapeSecret(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	j := newTestJail(t)
	port, rec := secretServer(t)
	plainRec := &recorder{}
	plain := httptest.NewServer(plainRec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") })))
	defer plain.Close()
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	p := secretPolicy(t, j, port, plainPort, rec.roots)
	script := `env; echo "$API_KEY" > "$PROJECT/leak.txt"; env > "$PROJECT/env.txt"
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" 2>/dev/null; echo; done
find /run /etc/ssl /tmp "$HOME" -type f ! -path "$PROBEDIR/*" 2>/dev/null | while read -r f; do cat "$f" 2>/dev/null; done
echo "certs=$(grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE")"
o=http://api.test:$PLAINPORT
echo "header=$(` + curl + ` -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $API_KEY" $o/h)"
echo "url=$(` + curl + ` -s -o /dev/null -w '%{http_code}' "$o/u?key=$API_KEY")"
echo "body=$(` + curl + ` -s -o /dev/null -w '%{http_code}' --data "k=$API_KEY" $o/b)"
echo "tls-header=$(` + curl + ` -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $API_KEY" https://api.test:$PORT/ 2>&1)"
SHADOW_TRY=secret-tunnel TARGET=example.com:$PORT ` + j.probe + `
`
	p.Env = append(append([]string{}, p.Env...), "PORT="+port, "PLAINPORT="+plainPort, "PROJECT="+j.project, "PROBEDIR="+j.probeDir)
	_, out, errOut := j.run(t, p, "/bin/sh", "-c", script)
	for _, bad := range []string{jailSecret, "PRIVATE KEY"} {
		if strings.Contains(out+errOut, bad) {
			t.Errorf("the jail read %q", bad)
		}
	}
	if strings.Contains(out, "API_KEY="+jailSecret) || !strings.Contains(out, "API_KEY=shadow-secret-API_KEY-") {
		t.Errorf("the jail's environment does not hold the placeholder:\n%s", out)
	}
	sys, _ := os.ReadFile(caBundlePaths[0])
	if want := fmt.Sprintf("certs=%d", strings.Count(string(sys), "BEGIN CERTIFICATE")+1); !strings.Contains(out, want+"\n") {
		t.Errorf("the jail's bundle is not the system's with one CA added: want %s in\n%s", want, out)
	}
	for _, want := range []string{"header=403", "url=403", "body=403", "RESULT sni ", "RESULT host 421", "RESULT untrusting "} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the jail's output:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "RESULT sni ") || strings.HasPrefix(l, "RESULT untrusting ") {
			if strings.HasSuffix(l, " ok") {
				t.Errorf("%s: the handshake went through", l)
			}
		}
	}
	// api.test:PORT is allowed but has no secret: a plain tunnel, whose TLS
	// the jail does not trust (httptest's CA is not in it).
	if !strings.Contains(out, "tls-header=000") {
		t.Errorf("a tunnel to a host without a secret: want curl to fail verification:\n%s", out)
	}
	// What the jail wrote is staged: neither the value nor the CA key is in it.
	filepath.Walk(j.upper, func(path string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), jailSecret) || strings.Contains(string(b), "PRIVATE KEY") {
				t.Errorf("the staged %s holds the real value or a key", path)
			}
		}
		return nil
	})
	if got := plainRec.all(); strings.Contains(got, "shadow-secret-") {
		t.Errorf("the host the secret is not for received the placeholder:\n%s", got)
	}
	if got := rec.all(); strings.Contains(got, "other.test") || strings.Contains(got, "shadow-secret-") {
		t.Errorf("the API host saw a request it should not have:\n%s", got)
	}
	raw, _ := os.ReadFile(p.NetLog)
	if strings.Contains(string(raw), jailSecret) {
		t.Errorf("the network log holds the real value")
	}
	refused := map[string]bool{}
	for _, e := range readNetLog(t, p.NetLog) {
		if !e.Allowed {
			refused[e.Path+" "+e.Reason] = true
		}
	}
	for _, want := range []string{"/h the request carries the placeholder of API_KEY in its headers",
		"/b the request carries the placeholder of API_KEY in its body", "the request carries the placeholder of API_KEY in its URL",
		"the TLS server name \"other.test\" differs", "Host header \"other.test\" differs", "TLS with the session's CA failed"} {
		found := false
		for r := range refused {
			found = found || strings.Contains(r, want)
		}
		if !found {
			t.Errorf("no refusal logged with %q: %v", want, refused)
		}
	}
}

// TestAllowDomainSecretNeedsProxy: without the allow-list proxy there is
// nothing to put a secret in: the jail gets neither the value nor a
// placeholder, and a warning says how to pass the value on purpose.
func TestAllowDomainSecretNeedsProxy(t *testing.T) {
	j := newTestJail(t)
	p := j.policy()
	p.Secrets = []proxy.Secret{{Name: "API_KEY", Value: jailSecret, Hosts: []string{"example.com"}}}
	_, out, errOut := j.run(t, p, "/bin/sh", "-c", `echo "key=${API_KEY-unset}"`)
	if out != "key=unset\n" {
		t.Errorf("without the proxy the jail's API_KEY is %q", out)
	}
	if !strings.Contains(errOut, "shadow: warning: API_KEY not set in the jail") || !strings.Contains(errOut, "--env API_KEY") {
		t.Errorf("no warning: %q", errOut)
	}
}

// TestAllowDomainAsk: a request from the jail for a host off the
// allow-list is put to IO.AskNetwork with its host and port; a refusal is
// logged as the answer, and a destination let through still may not
// resolve to the host's loopback.
func TestAllowDomainAsk(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	j := newTestJail(t)
	p := j.policy()
	p.AllowDomains = mustRules(t, "listed.test:1")
	p.NetLog = filepath.Join(j.base, "state", "net.log")
	var mu sync.Mutex
	var asked []string
	var out strings.Builder
	w := IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
		Resolver: testDNS{"deny.test": loopback(), "once.test": loopback()},
		AskNetwork: func(_ context.Context, q proxy.Question) proxy.Answer {
			host, port := q.Host, q.Port
			mu.Lock()
			asked = append(asked, fmt.Sprintf("%s:%d", host, port))
			mu.Unlock()
			if host == "once.test" {
				return proxy.AnswerOnce
			}
			return proxy.AnswerDeny
		}}
	script := `for h in deny.test once.test; do echo "$h=$(` + curl + ` -s -o /dev/null -w '%{http_code}' http://$h:8080/)"; done`
	res, err := Run(context.Background(), p.Policy, []string{"/bin/sh", "-c", script}, w)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v\n%s", err, res, out.String())
	}
	if !strings.Contains(out.String(), "deny.test=403") || !strings.Contains(out.String(), "once.test=403") {
		t.Errorf("jail's output:\n%s", out.String())
	}
	mu.Lock()
	if !slices.Equal(asked, []string{"deny.test:8080", "once.test:8080"}) {
		t.Errorf("asked %v", asked)
	}
	mu.Unlock()
	got := map[string]proxy.Entry{}
	for _, e := range readNetLog(t, p.NetLog) {
		got[e.Host] = e
	}
	if e := got["deny.test"]; e.Allowed || !strings.Contains(e.Reason, "asked: denied") {
		t.Errorf("deny.test logged %+v", e)
	}
	if e := got["once.test"]; e.Rule != "asked: once" || !strings.Contains(e.Reason, "local or private") {
		t.Errorf("once.test logged %+v", e)
	}
}
