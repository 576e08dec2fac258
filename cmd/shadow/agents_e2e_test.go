package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/agenttest"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// The real agent CLIs (pinned, from npm) edit a file through their own edit
// tool under shadow, against a scripted model server on the host's loopback.
// The jail reaches the server through --allow-domain localhost:PORT: the
// jail's localhost:PORT is relayed to the host's, checked and logged, and
// every other request an agent makes is refused and logged too, so the
// network log shows whether anything left for a domain off the list.

// agentCase is one agent: its host config pointing at the model server, its
// one-shot command line, and the tool calls that make it edit notes.txt.
type agentCase struct {
	name string
	// calls are the scripted model's tool calls, for the project at path.
	calls func(project string) []agenttest.Call
	// setup writes the agent's host config into home and returns the
	// host variables the agent needs (its preset passes them in).
	setup func(t *testing.T, home string, m *agenttest.ModelServer) []string
	// oneShot is the agent's one-shot command line, given its binary.
	oneShot func(bin, prompt string) []string
	// pass are host variables the test passes in with --env.
	pass []string
	// refused are the hosts off the allow-list the agent reaches for (and
	// is refused) in a run, as it does outside the jail.
	refused []string
	// never are hosts of the preset's list the run must not need.
	never []string
}

const (
	notesBefore = "old line\n"
	editPrompt  = "replace old by new in notes.txt"
)

func notesAfter(agent string) string { return "new line by " + agent + "\n" }

var agentCases = map[string]agentCase{
	"codex": {
		name: "codex",
		// Codex offers its patch tool to models it knows; to others it
		// offers exec_command, through which it takes apply_patch as its
		// own edit (applied by codex, not by a program).
		calls: func(string) []agenttest.Call {
			return []agenttest.Call{{Tool: "exec_command", Args: map[string]any{"cmd": "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: notes.txt\n@@\n-old line\n+" +
				strings.TrimSuffix(notesAfter("codex"), "\n") + "\n*** End Patch\nPATCH\n"}}}
		},
		setup: func(t *testing.T, home string, m *agenttest.ModelServer) []string {
			writeHostFile(t, filepath.Join(home, ".codex", "config.toml"), fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "scripted"
# tmux types a prompt at once: without this, codex takes it for a paste
# and the Enter after it for a newline in it.
disable_paste_burst = true
[model_providers.scripted]
name = "scripted"
base_url = "http://localhost:%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, m.Port))
			return []string{"OPENAI_API_KEY=sk-test"}
		},
		oneShot: func(bin, prompt string) []string {
			return []string{bin, "exec", "--skip-git-repo-check", prompt}
		},
		// Its plugin marketplace (GitHub) and its experiment flags.
		refused: []string{"github.com", "api.github.com", "raw.githubusercontent.com", "ab.chatgpt.com"},
	},
}

func init() {
	// Claude Code edits a file it has read in the session: Read, then Edit.
	agentCases["claude"] = agentCase{
		name: "claude",
		calls: func(project string) []agenttest.Call {
			f := filepath.Join(project, "notes.txt")
			return []agenttest.Call{
				{Tool: "Read", Args: map[string]any{"file_path": f}},
				{Tool: "Edit", Args: map[string]any{"file_path": f, "old_string": "old line",
					"new_string": strings.TrimSuffix(notesAfter("claude"), "\n")}},
			}
		},
		setup: func(t *testing.T, home string, m *agenttest.ModelServer) []string {
			// A user who has used Claude Code before, with this API key:
			// onboarding done (it checks the network to the real API),
			// the key approved (Claude Code keeps its last 20 characters).
			const key = "sk-ant-api03-scripted-test-key-0123456789"
			writeHostFile(t, filepath.Join(home, ".claude.json"), fmt.Sprintf(
				`{"hasCompletedOnboarding": true, "customApiKeyResponses": {"approved": [%q], "rejected": []}}`, key[len(key)-20:]))
			return []string{"ANTHROPIC_API_KEY=" + key, "ANTHROPIC_BASE_URL=http://localhost:" + m.Port,
				"ANTHROPIC_MODEL=claude-sonnet-4-5", "ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5"}
		},
		oneShot: func(bin, prompt string) []string {
			return []string{bin, "-p", "--permission-mode", "acceptEdits", prompt}
		},
		// Interactively: its release notes and its plugin marketplace.
		refused: []string{"downloads.claude.ai", "github.com"},
	}
	// Gemini CLI's edit tool is replace.
	agentCases["gemini"] = agentCase{
		name: "gemini",
		calls: func(project string) []agenttest.Call {
			return []agenttest.Call{{Tool: "replace", Args: map[string]any{"file_path": filepath.Join(project, "notes.txt"),
				"instruction": "replace old by new", "old_string": "old line",
				"new_string": strings.TrimSuffix(notesAfter("gemini"), "\n")}}}
		},
		setup: func(t *testing.T, home string, m *agenttest.ModelServer) []string {
			writeHostFile(t, filepath.Join(home, ".gemini", "settings.json"),
				`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-pro"}}`)
			return []string{"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=http://localhost:" + m.Port}
		},
		oneShot: func(bin, prompt string) []string {
			return []string{bin, "--approval-mode", "auto_edit", "-p", prompt}
		},
		// Its update check, which the preset turns off.
		never: []string{"registry.npmjs.org"},
	}
	// opencode reads, then edits; its provider is an OpenAI-compatible one
	// (Chat Completions).
	agentCases["opencode"] = agentCase{
		name: "opencode",
		calls: func(project string) []agenttest.Call {
			f := filepath.Join(project, "notes.txt")
			return []agenttest.Call{
				{Tool: "read", Args: map[string]any{"filePath": f}},
				{Tool: "edit", Args: map[string]any{"filePath": f, "oldString": "old line",
					"newString": strings.TrimSuffix(notesAfter("opencode"), "\n")}},
			}
		},
		setup: func(t *testing.T, home string, m *agenttest.ModelServer) []string {
			writeHostFile(t, filepath.Join(home, ".config", "opencode", "opencode.json"), fmt.Sprintf(`{
  "$schema": "https://opencode.ai/config.json",
  "model": "scripted/scripted-model",
  "small_model": "scripted/scripted-model",
  "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "scripted",
    "options": {"baseURL": "http://localhost:%s/v1", "apiKey": "sk-test"},
    "models": {"scripted-model": {"name": "scripted-model", "tool_call": true}}}}
}
`, m.Port))
			// The plugin package opencode installs in its config directory
			// on first start, as a host that ran opencode once has it: read
			// through by the preset, it is not downloaded (the network log
			// would show the package registry).
			plugin := agenttest.OpencodePlugin(t)
			for _, f := range []string{"package.json", "package-lock.json", "node_modules"} {
				if out, err := exec.Command("cp", "-a", filepath.Join(plugin, f), filepath.Join(home, ".config", "opencode", f)).CombinedOutput(); err != nil {
					t.Fatalf("copy the plugin package: %v: %s", err, out)
				}
			}
			// The model list comes from models.dev, which the test does
			// not reach; the configured provider is enough.
			return []string{"OPENCODE_DISABLE_MODELS_FETCH=1"}
		},
		pass:  []string{"OPENCODE_DISABLE_MODELS_FETCH"},
		never: []string{"registry.npmjs.org"},
		oneShot: func(bin, prompt string) []string {
			return []string{bin, "run", prompt}
		},
	}
}

func writeHostFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// agentRig is one agent test's host: a home with the agent's config, a
// project holding notes.txt, shadow's state, the model server.
type agentRig struct {
	c       *cli
	ac      agentCase
	bin     string
	prefix  string
	home    string
	project string
	model   *agenttest.ModelServer
	env     []string // for tmux: what the user's shell would have
}

func newAgentRig(t *testing.T, name string) *agentRig {
	t.Helper()
	prefix := agenttest.Prefix(t)
	ac := agentCases[name]
	r := &agentRig{c: newCLI(t), ac: ac, prefix: prefix, bin: filepath.Join(prefix, "node_modules", ".bin", name)}
	r.home = filepath.Join(t.TempDir(), "home")
	r.project = fixture(t, map[string]string{"notes.txt": notesBefore})
	r.model = agenttest.NewModelServer(t, "DONE-"+name+"-FINAL", ac.calls(r.project)...)
	extra := ac.setup(t, r.home, r.model)
	r.env = []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color", "HOME=" + r.home, "LANG=C.UTF-8",
		"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, e := range r.c.env {
		if strings.HasPrefix(e, "XDG_") {
			r.env = append(r.env, e)
		}
	}
	r.env = append(r.env, extra...)
	r.c.env = append(append(r.c.env, "HOME="+r.home), extra...)
	return r
}

// shadowArgs are the flags every agent run gets: the CLIs' install tree,
// and the model server as the only allowed destination.
func (r *agentRig) shadowArgs() []string {
	args := []string{"--ro", r.prefix, "--allow-domain", "localhost:" + r.model.Port}
	for _, v := range r.ac.pass {
		args = append(args, "--env", v)
	}
	return args
}

// checkEdit applies the session and checks the host file.
func (r *agentRig) checkApplied(t *testing.T) {
	t.Helper()
	if got := readFile(t, filepath.Join(r.project, "notes.txt")); got != notesAfter(r.ac.name) {
		t.Fatalf("host notes.txt = %q, want %q", got, notesAfter(r.ac.name))
	}
}

// checkNetLog: the model server was reached through the proxy; every
// request that went out was for a host on the run's allow-list (the preset's
// domains and the model server), and every refused one is a host the agent
// is known to reach for outside the jail too (r.ac.refused): anything else
// fails the test, so a preset that lets an agent stall on a refused domain
// (as Gemini's statistics did) shows here.
func (r *agentRig) checkNetLog(t *testing.T) {
	t.Helper()
	pr, err := preset.Lookup(r.ac.name)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"localhost:" + r.model.Port: true}
	for _, d := range pr.Domains {
		listed[d+":443"], listed[d+":80"] = true, true
	}
	logs, _ := filepath.Glob(filepath.Join(r.c.state, "shadow", "sessions", "*", "net.log"))
	model := 0
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := proxy.ReadLog(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			hp := fmt.Sprintf("%s:%d", e.Host, e.Port)
			switch {
			case e.Allowed && hp == "localhost:"+r.model.Port:
				model++
			case slices.Contains(r.ac.never, e.Host):
				t.Errorf("%s reached for %s, which it needs only when its packages are not read through", r.ac.name, hp)
			case e.Allowed && !listed[hp]:
				t.Errorf("a request for %s left the jail, which is not on the allow-list", hp)
			case e.Allowed:
				t.Logf("%s reached for %s (on its preset's list)", r.ac.name, hp)
			case !slices.Contains(r.ac.refused, e.Host):
				t.Errorf("%s reached for %s, refused: not a host it is known to try", r.ac.name, hp)
			}
		}
	}
	if model == 0 {
		t.Errorf("no request in the network log: the model server was not reached through the proxy")
	}
}

// checkModel: the agent made the scripted calls and got the final answer.
func (r *agentRig) checkModel(t *testing.T) {
	t.Helper()
	if !r.model.Called() {
		t.Errorf("the agent did not make the scripted calls; requests: %+v", r.model.Requests())
	}
}

// lastLineIntact: the screen shows the agent's final answer on a line of
// its own, not written over, and shadow's summary after it.
func lastLineIntact(t *testing.T, screen, final string) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, final) {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("the agent's last line %q is not on the screen:\n%s", final, screen)
	}
	if got := strings.TrimSpace(lines[at]); !strings.HasSuffix(got, final) || strings.Contains(got, "session ") {
		t.Errorf("the agent's last line was written over: %q", got)
	}
	if !strings.Contains(strings.Join(lines[at+1:], "\n"), "session ") {
		t.Errorf("shadow's summary does not follow the agent's last line:\n%s", screen)
	}
}

// testOneShot runs the agent's one-shot mode under `shadow run` in tmux,
// then applies the session.
func testOneShot(t *testing.T, name string) {
	r := newAgentRig(t, name)
	argv := append([]string{r.c.bin, "run"}, r.shadowArgs()...)
	argv = append(append(argv, "--"), r.ac.oneShot(r.bin, editPrompt)...)
	script := ""
	for _, a := range argv {
		script += shellQuote(a) + " "
	}
	scr := newTmux(t, r.project, r.env, "sh", "-c", script+"; echo SHADOW-EXIT=$?")
	screen := waitScreen(t, scr, 3*time.Minute, "SHADOW-EXIT=")
	if !strings.Contains(screen, "SHADOW-EXIT=0") {
		t.Fatalf("shadow run exited non-zero:\n%s\nmodel requests: %+v", screen, r.model.Requests())
	}
	r.checkModel(t)
	lastLineIntact(t, screen, r.model.Final)
	if got := readFile(t, filepath.Join(r.project, "notes.txt")); got != notesBefore {
		t.Fatalf("the agent wrote the host project during the run: %q", got)
	}
	r.c.must(r.project, "apply", "--all", "--yes")
	r.checkApplied(t)
	r.checkNetLog(t)
}

// waitScreen polls the tmux screen until it shows want, for up to d.
func waitScreen(t *testing.T, s *tmuxScreen, d time.Duration, want string) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		scr := s.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q; it shows:\n%s", want, scr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestAgentOneShotCodex(t *testing.T)    { testOneShot(t, "codex") }
func TestAgentOneShotClaude(t *testing.T)   { testOneShot(t, "claude") }
func TestAgentOneShotGemini(t *testing.T)   { testOneShot(t, "gemini") }
func TestAgentOneShotOpencode(t *testing.T) { testOneShot(t, "opencode") }

// interactive is how a person drives an agent in its own screen: the
// prompts it shows first and the keys that answer them, the marker of its
// ready screen, and how it is quit.
type interactive struct {
	answers [][2]string // screen text, keys (tmux send-keys) that answer it
	ready   string      // on the screen once it takes a prompt
	quit    []string    // keys that end it its normal way
	// approve are the questions the agent asks while it works, and the
	// keys a person answers them with (allowing the edit).
	approve [][2]string
	// directArgs are what the agent run directly needs besides: codex's
	// own sandbox cannot be set up in this test's environment.
	directArgs []string
}

var interactives = map[string]interactive{
	"codex": {
		// A new project is one codex has not trusted yet, in the jail as
		// outside (its per-project state keeps the answer).
		answers:    [][2]string{{"Trust this folder?", "Enter"}, {"Press enter to continue", "Enter"}},
		ready:      "Ask Codex to do anything",
		quit:       []string{"/quit", "Enter"},
		directArgs: []string{"-c", `sandbox_mode="danger-full-access"`},
	},
	"claude": {
		answers: [][2]string{{"Do you want to use this API key?", "Up Enter"}, {"Yes, I trust this folder", "Enter"},
			{"Choose the text style", "Enter"}, {"Press Enter to continue", "Enter"}},
		ready:   "? for shortcuts",
		quit:    []string{"/exit", "Enter"},
		approve: [][2]string{{"Do you want to make this edit", "Enter"}},
	},
}

// testTUI drives `shadow tui -- AGENT` in tmux as a person: start the agent
// from the preflight, type the prompt, let the agent edit, quit it its own
// way, review, apply; the host file changed. It logs the time from the
// agent's start to its first screen, and the same for the agent run
// directly in tmux.
func testTUI(t *testing.T, name string) {
	r := newAgentRig(t, name)
	it := interactives[name]
	argv := append([]string{r.c.bin, "tui"}, r.shadowArgs()...)
	argv = append(argv, "--", r.bin)
	script := ""
	for _, a := range argv {
		script += shellQuote(a) + " "
	}
	scr := newTmux(t, r.project, r.env, "sh", "-c", script+"; echo SHADOW-EXIT=$?")
	tuiStart := time.Now()
	waitScreen(t, scr, time.Minute, "allowed")
	scr.keys("Enter", "")
	agentStart := time.Now()
	first := r.driveAgent(t, scr, it, time.Now())
	t.Logf("%s in shadow tui: first screen %s after the agent started, %s after shadow tui started",
		name, first.Sub(agentStart).Round(time.Millisecond), first.Sub(tuiStart).Round(time.Millisecond))
	waitScreen(t, scr, time.Minute, "exited with status")
	scr.keys("Enter", "file 1/", "a", "1✓", "w", "y apply", "y", "apply done", "q", "SHADOW-EXIT=")
	if out := scr.screen(); !strings.Contains(out, "SHADOW-EXIT=0") {
		t.Errorf("shadow tui did not exit 0:\n%s", out)
	}
	r.checkApplied(t)
	r.checkModel(t)
	r.checkNetLog(t)

	// The same agent run directly, for its time to the first screen.
	exec.Command("tmux", "-L", scr.socket, "kill-server").Run()
	direct := newAgentRig(t, name)
	dscr := newTmux(t, direct.project, direct.env, append([]string{direct.bin}, it.directArgs...)...)
	start := time.Now()
	dfirst := direct.driveAgent(t, dscr, it, start)
	t.Logf("%s run directly: first screen %s after it started", name, dfirst.Sub(start).Round(time.Millisecond))
}

// driveAgent answers the agent's first prompts, types the edit request,
// waits for the model's final answer and quits the agent. It returns when
// the agent first showed a screen of its own (a prompt it asks first, or
// its ready screen).
func (r *agentRig) driveAgent(t *testing.T, scr *tmuxScreen, it interactive, since time.Time) time.Time {
	t.Helper()
	first := r.awaitReady(t, scr, it)
	r.prompt(t, scr, it, editPrompt)
	r.quitAgent(scr, it)
	return first
}

// awaitReady answers the agent's first questions until its ready screen
// stays, and returns when it first showed a screen of its own.
func (r *agentRig) awaitReady(t *testing.T, scr *tmuxScreen, it interactive) time.Time {
	t.Helper()
	var first time.Time
	deadline := time.Now().Add(2 * time.Minute)
	answered := map[string]bool{}
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's screen never got ready (%q):\n%s", it.ready, scr.screen())
		}
		out := scr.screen()
		if strings.Contains(out, it.ready) {
			if first.IsZero() {
				first = time.Now()
			}
			// Ready if it stays so: an agent may draw its prompt and then
			// put a question over it.
			if again := settledScreen(scr); strings.Contains(again, it.ready) && !asks(again, it) {
				return first
			}
			continue
		}
		for _, a := range it.answers {
			if strings.Contains(out, a[0]) && !answered[a[0]] {
				if first.IsZero() {
					first = time.Now()
				}
				answered[a[0]] = true
				t.Logf("answering %q with %s", a[0], a[1])
				answerKeys(scr, strings.Fields(a[1]))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answerKeys sends an answer's keys one at a time, as a person presses them: each must change
// the agent's screen (a selection moves, the question goes) before the next is sent, and one
// that did not (the agent was not reading its keys yet) is pressed again. Sent at once, as one
// tmux send-keys, Claude Code's Up and Enter on its API-key question left it on No once the
// machine was busy (after the other agent tests): the key was refused and every request after
// was "Not logged in", none reaching the model server.
func answerKeys(scr *tmuxScreen, keys []string) {
	for _, k := range keys {
		before := agentScreen(scr.screen())
		for try := 0; try < 3; try++ {
			scr.send(k)
			if screenChanges(scr, before, 5*time.Second) {
				break
			}
		}
	}
}

// screenChanges waits up to d for the agent's screen to differ from before.
func screenChanges(scr *tmuxScreen, before string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if agentScreen(scr.screen()) != before {
			return true
		}
	}
	return false
}

// agentScreen is a screen without its last line, where shadow tui's status bar keeps a clock.
func agentScreen(screen string) string {
	screen = strings.TrimRight(screen, "\n")
	if i := strings.LastIndex(screen, "\n"); i >= 0 {
		return screen[:i]
	}
	return ""
}

// prompt types a prompt as a person does (wait for the screen to settle,
// type, see the words, send), allows the edits the agent asks about, and
// waits for the model's final answer on the screen.
func (r *agentRig) prompt(t *testing.T, scr *tmuxScreen, it interactive, text string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	// As a person: look at the screen a moment once it is still, type, see the words, send. An
	// agent that has drawn its prompt may not take keys yet (Codex read the request's letters as
	// its own commands): the screen settling is not enough on its own, so a floor stays.
	settledScreen(scr)
	time.Sleep(2 * time.Second)
	// A first question the agent put up late, over its prompt, is answered before typing:
	// Codex's folder trust came up after its prompt had settled, and took the letters.
	if s := settledScreen(scr); asks(s, it) {
		t.Logf("a question came up after the agent's prompt:\n%s", s)
		r.awaitReady(t, scr, it)
	}
	scr.sendText(text)
	waitScreen(t, scr, screenDeadline, text)
	settledScreen(scr)
	// An Enter that follows typed text too closely is read as part of a paste (a new line, not
	// a send) by agents that detect pastes by timing: their timer shows nothing to wait for.
	time.Sleep(500 * time.Millisecond)
	scr.send("Enter")
	approved := map[string]time.Time{}
	for !r.model.Called() {
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not finish the edit; requests %+v; screen:\n%s", r.model.Requests(), scr.screen())
		}
		out := scr.screen()
		for _, a := range it.approve {
			if strings.Contains(out, a[0]) && time.Since(approved[a[0]]) > 2*time.Second {
				approved[a[0]] = time.Now()
				scr.send(a[1])
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitScreen(t, scr, screenDeadline, r.model.Final)
}

// quitAgent ends the agent its own way.
func (r *agentRig) quitAgent(scr *tmuxScreen, it interactive) {
	for _, k := range it.quit {
		settledScreen(scr)
		if strings.HasPrefix(k, "/") {
			scr.sendText(k)
		} else {
			scr.send(k)
		}
	}
}

// settledScreen waits until the screen has not changed for a moment (the agent has drawn what it
// was drawing and waits for keys), and returns it. A screen that keeps changing (a spinner, a
// clock) is returned as it is after a bound: typing then is what a person would do.
func settledScreen(s *tmuxScreen) string {
	const quiet, bound = 700 * time.Millisecond, 30 * time.Second
	last, since := s.screen(), time.Now()
	for start := time.Now(); time.Since(start) < bound; time.Sleep(100 * time.Millisecond) {
		cur := s.screen()
		if cur != last {
			last, since = cur, time.Now()
			continue
		}
		if time.Since(since) >= quiet {
			break
		}
	}
	return last
}

// asks reports whether screen shows one of the agent's first questions.
func asks(screen string, it interactive) bool {
	for _, a := range it.answers {
		if strings.Contains(screen, a[0]) {
			return true
		}
	}
	return false
}

func (s *tmuxScreen) send(keys ...string) {
	s.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-L", s.socket, "send-keys"}, keys...)...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys %q: %v: %s", keys, err, out)
	}
}

func (s *tmuxScreen) sendText(text string) {
	s.t.Helper()
	if out, err := exec.Command("tmux", "-L", s.socket, "send-keys", "-l", text).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys -l: %v: %s", err, out)
	}
}

func TestAgentTUICodex(t *testing.T)  { testTUI(t, "codex") }
func TestAgentTUIClaude(t *testing.T) { testTUI(t, "claude") }
