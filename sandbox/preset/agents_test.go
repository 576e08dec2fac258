package preset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/agenttest"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/session"
)

func TestMain(m *testing.M) {
	if sandbox.IsReexec() {
		sandbox.ReexecMain()
	}
	os.Exit(m.Run())
}

// agentPrefix is where the pinned agent CLIs are installed (agenttest).
func agentPrefix(t *testing.T) string { return agenttest.Prefix(t) }

// agentJail is one test's host side: a home with the agent's host config, a
// project under git, a session store.
type agentJail struct {
	base, home, project, state string
	store                      *session.Store
}

func newAgentJail(t *testing.T) *agentJail {
	t.Helper()
	base := t.TempDir()
	a := &agentJail{base: base, home: filepath.Join(base, "home"), project: filepath.Join(base, "project"),
		state: filepath.Join(base, "state")}
	for _, d := range []string{a.home, a.project, a.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(a.project, "README.md"), []byte("a project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := session.Open(a.state)
	if err != nil {
		t.Fatal(err)
	}
	a.store = st
	return a
}

// policy is a jail over the project with the preset of argv[0] applied;
// extra are host variables as if set in the user's shell.
func (a *agentJail) policy(t *testing.T, s *session.Session, prefix string, argv []string, extra ...string) (sandbox.Policy, []string, *Grant) {
	t.Helper()
	pr, err := Select("", argv[0])
	if err != nil || pr == nil {
		t.Fatalf("no preset for %s: %v", argv[0], err)
	}
	host := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + a.home, "LANG=C.UTF-8", "TERM=dumb"}, extra...)
	g, err := pr.Prepare(Options{Home: a.home, StateRoot: a.state, Project: a.project, HostEnv: host})
	if err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{
		Project: a.project, Home: a.home, Env: sandbox.BuildEnv(host, nil),
		Upper:    filepath.Join(a.base, "scratch", "upper"),
		ReadOnly: []string{prefix}, Timeout: 3 * time.Minute,
	}
	if s != nil {
		p.Upper, p.RuntimeDir, p.NetLog = s.UpperDir(), s.RuntimeDir(), s.NetLog()
	}
	if err := g.ApplyTo(&p, host); err != nil {
		t.Fatal(err)
	}
	return p, g.Argv(argv), g
}

func runJail(t *testing.T, p sandbox.Policy, argv []string) (sandbox.Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := sandbox.Run(context.Background(), p, argv, sandbox.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run %q: %v\n%s", argv, err, out.String())
	}
	return res, out.String()
}

// TestAgentsStartInJail: each npm-distributed agent CLI starts in the jail
// under its preset and prints its version.
func TestAgentsStartInJail(t *testing.T) {
	prefix := agentPrefix(t)
	for _, name := range []string{"claude", "codex", "gemini", "opencode"} {
		t.Run(name, func(t *testing.T) {
			a := newAgentJail(t)
			bin := filepath.Join(prefix, "node_modules", ".bin", name)
			p, argv, g := a.policy(t, nil, prefix, []string{bin, "--version"})
			if g.Preset != name {
				t.Fatalf("preset %s chosen for %s", g.Preset, bin)
			}
			res, out := runJail(t, p, argv)
			if res.ExitCode != 0 {
				t.Fatalf("%q exited %d:\n%s", argv, res.ExitCode, out)
			}
			if !strings.ContainsAny(out, "0123456789") {
				t.Errorf("%s --version printed no version: %q", name, out)
			}
			t.Logf("%s: %s", name, strings.TrimSpace(lastLine(out)))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// modelServer is a scripted OpenAI Responses API server: asked for a turn,
// it calls the agent's shell tool with script; once the tool's output comes
// back it answers "done". It records every request body.
type modelServer struct {
	script string
	mu     sync.Mutex
	bodies []map[string]any
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, req)
	m.mu.Unlock()
	input, _ := req["input"].([]any)
	// Answer the latest user turn: a tool output after it means the tool ran.
	toolRan := false
	for _, it := range input {
		item, _ := it.(map[string]any)
		switch item["type"] {
		case "message":
			if item["role"] == "user" {
				toolRan = false
			}
		case "function_call_output":
			toolRan = true
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	id := fmt.Sprintf("resp_%d", len(m.bodies))
	event("response.created", map[string]any{"response": map[string]any{"id": id}})
	if !toolRan {
		name, args := shellCall(req, m.script)
		event("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": name, "arguments": args, "status": "completed"}})
	} else {
		event("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "role": "assistant", "id": "msg_" + id, "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}}})
	}
	event("response.completed", map[string]any{"response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

// shellCall picks the shell tool the agent offers and its arguments.
func shellCall(req map[string]any, script string) (string, string) {
	tools, _ := req["tools"].([]any)
	names := map[string]bool{}
	for _, t := range tools {
		if tm, ok := t.(map[string]any); ok {
			if n, ok := tm["name"].(string); ok {
				names[n] = true
			}
		}
	}
	var args any
	name := "exec_command"
	switch {
	case names["exec_command"]:
		args = map[string]any{"cmd": script}
	case names["shell_command"]:
		name, args = "shell_command", map[string]any{"command": script}
	default:
		name, args = "shell", map[string]any{"command": []string{"bash", "-lc", script}}
	}
	b, _ := json.Marshal(args)
	return name, string(b)
}

// userTexts are the user messages of a recorded request.
func userTexts(req map[string]any) []string {
	var out []string
	input, _ := req["input"].([]any)
	for _, it := range input {
		item, _ := it.(map[string]any)
		if item["type"] != "message" || item["role"] != "user" {
			continue
		}
		content, _ := item["content"].([]any)
		for _, c := range content {
			if cm, ok := c.(map[string]any); ok {
				if s, ok := cm["text"].(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// TestCodexEditsThroughAllowList: Codex CLI, pointed by its host config at a
// scripted model server on the host's loopback that it reaches only through
// the allow-list proxy, edits a file in the jail; the edit is staged in the
// session, not in the project, until applied; a second run resumes the
// conversation from the agent's per-project state.
func TestCodexEditsThroughAllowList(t *testing.T) {
	prefix := agentPrefix(t)
	a := newAgentJail(t)
	model := &modelServer{script: "echo edited-by-codex > hello.txt"}
	srv := httptest.NewServer(model)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	// The user's Codex config on the host, seeded into the preset's state.
	hostConfig := fmt.Sprintf(`model = "scripted-model"
model_provider = "scripted"
[model_providers.scripted]
name = "scripted"
base_url = "http://localhost:%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, port)
	if err := os.MkdirAll(filepath.Join(a.home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.home, ".codex", "config.toml"), []byte(hostConfig), 0o600); err != nil {
		t.Fatal(err)
	}

	lk, err := a.store.LockProject(a.project, session.LockOptions{Command: "run"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	s, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(prefix, "node_modules", ".bin", "codex")
	run := func(s *session.Session, args ...string) (sandbox.Result, string, *Grant) {
		argv := append([]string{codex, "exec", "--skip-git-repo-check"}, args...)
		// OPENAI_BASE_URL puts the model server on the allow-list, as a
		// user would for a local server: a name listed exactly may go
		// where it resolves, here the host's loopback.
		p, argv, g := a.policy(t, s, prefix, argv, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=http://localhost:"+port+"/v1")
		want, _ := proxy.ParseRule("localhost:" + port)
		if !slices.Contains(p.AllowDomains, want) {
			t.Fatalf("allow-list %v lacks the base URL's host", p.AllowDomains)
		}
		// The preset's own domains stay off: the test reaches no real service.
		p.AllowDomains = []proxy.Rule{want}
		if err := s.BeginRun(argv); err != nil {
			t.Fatal(err)
		}
		res, out := runJail(t, p, argv)
		if err := s.EndRun(res.ExitCode); err != nil {
			t.Fatal(err)
		}
		return res, out, g
	}

	res, out, g := run(s, "create hello.txt")
	if res.ExitCode != 0 {
		t.Fatalf("codex exited %d:\n%s", res.ExitCode, out)
	}
	if _, err := os.Stat(filepath.Join(a.project, "hello.txt")); err == nil {
		t.Fatalf("the agent wrote the host project directly")
	}
	cs, err := s.Changes()
	if err != nil {
		t.Fatal(err)
	}
	c, ok := cs.Find("hello.txt")
	if !ok {
		t.Fatalf("hello.txt not staged; codex said:\n%s", out)
	}
	if _, err := s.Apply(session.ApplyOptions{All: true, Paths: []string{c.Path}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(a.project, "hello.txt")); string(b) != "edited-by-codex\n" {
		t.Fatalf("applied hello.txt = %q", b)
	}
	// The model was reached only through the proxy's relay of the allowed
	// loopback port (one entry per connection), and logged.
	var allowed, total int
	for _, e := range readLog(t, s.NetLog()) {
		total++
		if e.Allowed && e.Status == http.StatusOK {
			allowed++
			if e.Host != "localhost" {
				t.Errorf("request to %s answered", e.Host)
			}
		}
	}
	model.mu.Lock()
	turns := len(model.bodies)
	model.mu.Unlock()
	if turns < 2 || allowed == 0 {
		t.Errorf("%d model requests, %d allowed log entries of %d", turns, allowed, total)
	}

	// The agent's state stays in the per-project state directory: the
	// session's rollout file is there, and the next run resumes it.
	rollouts, _ := filepath.Glob(filepath.Join(g.StateDir, "home", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(rollouts) == 0 {
		t.Fatalf("no codex session in the state directory %s", g.StateDir)
	}
	if _, err := os.Stat(filepath.Join(a.home, ".codex", "sessions")); err == nil {
		t.Errorf("codex state was written to the host's ~/.codex")
	}
	model.mu.Lock()
	model.bodies = nil
	model.script = "echo again >> hello.txt"
	model.mu.Unlock()
	// Applying every change closed the session: the next run is a new
	// session, and the agent's state carries over all the same.
	s2, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	res, out, _ = run(s2, "resume", "--last", "append again")
	if res.ExitCode != 0 {
		t.Fatalf("codex exec resume exited %d:\n%s", res.ExitCode, out)
	}
	cs2, err := s2.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cs2.Find("hello.txt"); !ok || c.Status != session.Modified {
		t.Errorf("second run: hello.txt not staged as modified: %+v", c)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.bodies) == 0 {
		t.Fatalf("the resumed run did not reach the model:\n%s", out)
	}
	texts := strings.Join(userTexts(model.bodies[0]), "\n")
	if !strings.Contains(texts, "create hello.txt") || !strings.Contains(texts, "append again") {
		t.Errorf("the resumed conversation lacks the first run's turn; user messages:\n%s", texts)
	}
}

func readLog(t *testing.T, path string) []proxy.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("network log: %v", err)
	}
	var out []proxy.Entry
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var e proxy.Entry
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("network log line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// TestAiderPresetInJail: aider is installed with pip, not npm, so a stand-in
// script named aider shows what its preset gives it in the jail: the
// variables it names and no others, the environment that turns auto-commits
// and update checks off, its ~/.aider state and the seeded ~/.aider.conf.yml,
// which survive into the next run.
func TestAiderPresetInJail(t *testing.T) {
	a := newAgentJail(t)
	bin := filepath.Join(a.base, "bin")
	script := `#!/bin/sh
echo "key=${OPENAI_API_KEY:-unset} aws=${AWS_SECRET_ACCESS_KEY:-unset}"
echo "commits=$AIDER_AUTO_COMMITS update=$AIDER_CHECK_UPDATE analytics=$AIDER_ANALYTICS_DISABLE"
echo "conf=$(cat ~/.aider.conf.yml)"
echo "before=$(cat ~/.aider/history 2>/dev/null || echo none)"
echo "run" >> ~/.aider/history
`
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "aider"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.home, ".aider.conf.yml"), []byte("model: local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func() string {
		p, argv, g := a.policy(t, nil, bin, []string{filepath.Join(bin, "aider")},
			"OPENAI_API_KEY=sk-aider", "AWS_SECRET_ACCESS_KEY=never")
		if g.Preset != "aider" {
			t.Fatalf("preset %s", g.Preset)
		}
		res, out := runJail(t, p, argv)
		if res.ExitCode != 0 {
			t.Fatalf("exit %d:\n%s", res.ExitCode, out)
		}
		return out
	}
	out := run()
	for _, want := range []string{"key=shadow-secret-OPENAI_API_KEY-", " aws=unset", "commits=false update=false analytics=true", "conf=model: local", "before=none"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run lacks %q:\n%s", want, out)
		}
	}
	if out := run(); !strings.Contains(out, "before=run") {
		t.Errorf("second run did not find the first run's state:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(a.home, ".aider")); err == nil {
		t.Errorf("aider state was written to the host home")
	}
}

// TestGeminiInNewProject: Gemini CLI's one-shot mode runs in a project it
// has never seen (the preset makes it trusted: it exits 55 otherwise) and
// sends no usage statistics (they went to a domain off the allow-list, where
// the CLI retried them for seconds). The model server answers 400 at once:
// what is checked happens before and around the model call.
func TestGeminiInNewProject(t *testing.T) {
	prefix := agentPrefix(t)
	a := newAgentJail(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":400,"message":"scripted refusal","status":"INVALID_ARGUMENT"}}`)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The user's own settings: an API key login.
	if err := os.MkdirAll(filepath.Join(a.home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.home, ".gemini", "settings.json"),
		[]byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	lk, err := a.store.LockProject(a.project, session.LockOptions{Command: "run"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	s, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	gemini := filepath.Join(prefix, "node_modules", ".bin", "gemini")
	p, argv, g := a.policy(t, s, prefix, []string{gemini, "-p", "hello"},
		"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=http://localhost:"+port)
	// Only the model server: what else the CLI reaches for is refused, and logged.
	p.AllowDomains, _ = proxy.ParseRules([]string{"localhost:" + port})
	res, out := runJail(t, p, argv)
	if res.ExitCode == 55 || strings.Contains(out, "trusted directory") {
		t.Fatalf("gemini refused the new project (exit %d):\n%s", res.ExitCode, out)
	}
	if !strings.Contains(out, "scripted refusal") && !strings.Contains(out, "400") {
		t.Errorf("gemini did not reach the model server (exit %d):\n%s", res.ExitCode, out)
	}
	for _, e := range readLog(t, s.NetLog()) {
		if e.Host != "localhost" {
			t.Errorf("request to %s:%d (allowed %v) left the jail", e.Host, e.Port, e.Allowed)
		}
	}
	// The user's own settings are kept beside the preset's.
	b, _ := os.ReadFile(filepath.Join(g.StateDir, "home", ".gemini", "settings.json"))
	if !strings.Contains(string(b), "gemini-api-key") || !strings.Contains(string(b), `"usageStatisticsEnabled": false`) {
		t.Errorf("state settings.json:\n%s", b)
	}
}
