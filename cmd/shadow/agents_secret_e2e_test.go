package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/agenttest"
)

// Claude Code and Codex reach a scripted model over HTTPS with their API key as a secret
// (SPEC §14): the key is only in shadow's environment, never passed in with --env; the
// agent gets a placeholder, and the proxy terminates the agent's TLS with the session's CA
// and puts the key into the requests to the model's host. The server, on the host's
// 127.0.0.1 with a CA of its own that shadow's process trusts (SSL_CERT_FILE: the roots
// the proxy verifies the real server against), stands in for the vendor's API. It is
// reached by the host's own name, which resolves to 127.0.0.1: a loopback address or
// localhost in the jail is the jail's own (NO_PROXY), relayed to the host as raw bytes,
// where no secret can be put in.

// secretAgent is one agent's run with its key as a secret.
type secretAgent struct {
	key    string // the real key, in shadow's environment only
	header string // where the agent puts the key: the header and the prefix before it
	prefix string
	calls  func(project string) []agenttest.Call
	// setup writes the agent's config for the model at base and returns
	// shadow's environment and flags for it, and the agent's command line.
	setup func(t *testing.T, home, base, bin, prompt string) (env, flags, argv []string)
}

var secretAgents = map[string]secretAgent{
	"claude": {
		key: "sk-ant-api03-real-host-key-0123456789abcdef", header: "X-Api-Key",
		calls: func(project string) []agenttest.Call {
			f := filepath.Join(project, "notes.txt")
			return []agenttest.Call{
				{Tool: "Bash", Args: map[string]any{"command": "printenv ANTHROPIC_API_KEY", "description": "print the key"}},
				{Tool: "Read", Args: map[string]any{"file_path": f}},
				{Tool: "Edit", Args: map[string]any{"file_path": f, "old_string": "old line",
					"new_string": strings.TrimSuffix(notesAfter("claude"), "\n")}},
			}
		},
		setup: func(t *testing.T, home, base, bin, prompt string) ([]string, []string, []string) {
			writeHostFile(t, filepath.Join(home, ".claude.json"), `{"hasCompletedOnboarding": true}`)
			// The preset's own secret: ANTHROPIC_API_KEY for api.anthropic.com and
			// $ANTHROPIC_BASE_URL's host, which joins the allow-list too.
			env := []string{"ANTHROPIC_BASE_URL=" + base,
				"ANTHROPIC_MODEL=claude-sonnet-4-5", "ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5"}
			// --allowedTools takes every argument after it: the prompt goes first.
			argv := []string{bin, "-p", prompt, "--permission-mode", "acceptEdits", "--allowedTools", "Bash(printenv:*)"}
			return env, nil, argv
		},
	},
	"codex": {
		key: "sk-proj-real-host-key-0123456789abcdef", header: "Authorization", prefix: "Bearer ",
		calls: func(string) []agenttest.Call {
			return []agenttest.Call{
				{Tool: "exec_command", Args: map[string]any{"cmd": "printenv OPENAI_API_KEY"}},
				{Tool: "exec_command", Args: map[string]any{"cmd": "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: notes.txt\n@@\n-old line\n+" +
					strings.TrimSuffix(notesAfter("codex"), "\n") + "\n*** End Patch\nPATCH\n"}},
			}
		},
		setup: func(t *testing.T, home, base, bin, prompt string) ([]string, []string, []string) {
			writeHostFile(t, filepath.Join(home, ".codex", "config.toml"), fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "scripted"
[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, base))
			// A provider of the user's own: its host is named with --secret.
			host := strings.TrimPrefix(base, "https://")
			return nil, []string{"--allow-domain", host, "--secret", "OPENAI_API_KEY=" + host},
				[]string{bin, "exec", "--skip-git-repo-check", prompt}
		},
	},
}

// tlsModel serves m over HTTPS on 127.0.0.1 with a certificate for name from a CA of its
// own, written to caFile; it records each request's headers and body.
type tlsModel struct {
	m      *agenttest.ModelServer
	port   string
	caFile string
	mu     sync.Mutex
	seen   []seenRequest
}

type seenRequest struct {
	path   string
	header http.Header
	body   string
}

func newTLSModel(t *testing.T, name string, m *agenttest.ModelServer) *tlsModel {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scripted model test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsModel{m: m, caFile: filepath.Join(t.TempDir(), "model-ca.pem")}
	if err := os.WriteFile(s.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{path: r.URL.Path, header: r.Header.Clone(), body: string(body)})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, s.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return s
}

func (s *tlsModel) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// loopbackName is a name of this host that resolves to 127.0.0.1 only (its
// hostname, in /etc/hosts), or "".
func loopbackName() string {
	name, err := os.Hostname()
	if err != nil || name == "" || name == "localhost" {
		return ""
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		return ""
	}
	for _, a := range addrs {
		if a != "127.0.0.1" {
			return ""
		}
	}
	return name
}

func testAgentSecret(t *testing.T, name string) {
	sa := secretAgents[name]
	host := loopbackName()
	if host == "" {
		t.Skip("this host's name does not resolve to 127.0.0.1 only: the model server stands in for the vendor's host under it")
	}
	prefix := agenttest.Prefix(t)
	bin := filepath.Join(prefix, "node_modules", ".bin", name)
	c := newCLI(t)
	home := filepath.Join(t.TempDir(), "home")
	project := fixture(t, map[string]string{"notes.txt": notesBefore})
	m := &agenttest.ModelServer{Calls: sa.calls(project), Final: "DONE-" + name + "-FINAL"}
	srv := newTLSModel(t, host, m)
	base := "https://" + host + ":" + srv.port
	env, flags, argv := sa.setup(t, home, base, bin, editPrompt)
	// The key is in shadow's environment only; shadow's process trusts the
	// server's CA, as it trusts the real vendor's through the system's roots.
	c.env = append(append(c.env, "HOME="+home, "SSL_CERT_FILE="+srv.caFile, secretName(name)+"="+sa.key), env...)

	args := append(append([]string{"run", "--ro", prefix}, flags...), "--")
	out, errOut, code := c.run(project, append(args, argv...)...)
	t.Logf("shadow run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	seen := srv.requests()
	for _, r := range seen {
		t.Logf("the server received %s %s: %s", r.path, sa.header, r.header.Get(sa.header))
	}
	if code != 0 {
		t.Fatalf("shadow run exited %d; the model requests: %+v", code, m.Requests())
	}
	if strings.Contains(out+errOut, sa.key) {
		t.Errorf("the real key is in the run's output")
	}

	// The server got the real key, exactly, in the agent's auth header of every
	// request, and the placeholder nowhere.
	placeholder := regexp.MustCompile(`shadow-secret-` + secretName(name) + `-[0-9a-f]{16}`)
	model := 0
	var jailKey string
	for _, r := range seen {
		if got := r.header.Get(sa.header); got != sa.prefix+sa.key {
			t.Errorf("the server got %s: %q on %s, want %q", sa.header, got, r.path, sa.prefix+sa.key)
		}
		for k, vs := range r.header {
			for _, v := range vs {
				if placeholder.MatchString(v) {
					t.Errorf("the server got the placeholder in %s: %s", k, v)
				}
			}
		}
		if strings.HasSuffix(r.path, "/messages") || strings.HasSuffix(r.path, "/responses") {
			model++
		}
		// The output of the agent's printenv, sent back to the model in a body
		// (which the proxy does not touch): the jail's value of the key.
		if p := placeholder.FindString(r.body); p != "" {
			jailKey = p
		}
		if strings.Contains(r.body, sa.key) {
			t.Errorf("a request's body holds the real key: the agent saw it")
		}
	}
	if model == 0 {
		t.Fatalf("the server got no model request")
	}
	if jailKey == "" {
		t.Errorf("the agent's command never reported the jail's key as a placeholder")
	}
	t.Logf("the agent's printenv in the jail printed %s", jailKey)
	if !m.Called() {
		t.Errorf("the agent did not make the scripted calls; requests: %+v", m.Requests())
	}

	// The edit is staged, not on the host.
	if got := readFile(t, filepath.Join(project, "notes.txt")); got != notesBefore {
		t.Fatalf("the agent wrote the host project during the run: %q", got)
	}
	if diff := c.must(project, "diff"); !strings.Contains(diff, "+"+strings.TrimSuffix(notesAfter(name), "\n")) {
		t.Errorf("the staged diff lacks the agent's edit:\n%s", diff)
	}

	// Nothing the agent or shadow wrote holds the key: the staged tree, the
	// agent's state, the network log.
	for _, dir := range []string{c.state, home} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(sa.key)) {
					t.Errorf("%s holds the real key", path)
				}
			}
			return nil
		})
	}

	// shadow net lists the requests: terminated HTTPS to the host, the secret put
	// in by name, the real key nowhere.
	js := c.must(project, "net", "--json")
	if strings.Contains(js, sa.key) {
		t.Errorf("shadow net --json shows the real key")
	}
	entry := regexp.MustCompile(`(?s)\{[^{}]*"scheme": "https",[^{}]*"host": "` + regexp.QuoteMeta(host) + `",[^{}]*"port": ` + srv.port +
		`,[^{}]*"path": "/v1/(messages|responses)[^"]*",[^{}]*"secrets": \[\s*"` + secretName(name) + `"\s*\]`)
	if len(entry.FindAllString(js, -1)) < model {
		t.Errorf("shadow net --json lists fewer than the server's %d model requests as terminated with %s put in:\n%s", model, secretName(name), js)
	}
	listing := c.must(project, "net")
	t.Logf("shadow net:\n%s", listing)
	if !strings.Contains(listing, host+":"+srv.port) || strings.Contains(listing, sa.key) {
		t.Errorf("shadow net does not list the requests to %s:%s:\n%s", host, srv.port, listing)
	}
}

// secretName is the agent's key's variable.
func secretName(agent string) string {
	if agent == "codex" {
		return "OPENAI_API_KEY"
	}
	return "ANTHROPIC_API_KEY"
}

func TestAgentSecretClaude(t *testing.T) { testAgentSecret(t, "claude") }
func TestAgentSecretCodex(t *testing.T)  { testAgentSecret(t, "codex") }
