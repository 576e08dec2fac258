package preset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestEmbeddedPresets(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		cmd, key, domain, state string
		env                     []string
	}{
		"aider":    {"aider", "OPENAI_API_KEY", "api.openai.com", "~/.aider", []string{"AIDER_AUTO_COMMITS=false", "AIDER_CHECK_UPDATE=false", "AIDER_ANALYTICS_DISABLE=true"}},
		"claude":   {"claude", "ANTHROPIC_API_KEY", "api.anthropic.com", "~/.claude", []string{"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"}},
		"codex":    {"codex", "OPENAI_API_KEY", "api.openai.com", "~/.codex", nil},
		"gemini":   {"gemini", "GEMINI_API_KEY", "generativelanguage.googleapis.com", "~/.gemini", []string{"GEMINI_SANDBOX=false"}},
		"opencode": {"opencode", "OPENAI_API_KEY", "api.openai.com", "~/.config/opencode", []string{"OPENCODE_DISABLE_AUTOUPDATE=true"}},
	}
	if len(all) != len(want) {
		t.Fatalf("%d presets, want %d: %v", len(all), len(want), Names())
	}
	for _, p := range all {
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected preset %s", p.Name)
			continue
		}
		if !slices.Contains(p.Commands, w.cmd) || !slices.Contains(p.SecretNames(), w.key) || !slices.Contains(p.Domains, w.domain) {
			t.Errorf("%s: commands %v secrets %v domains %v", p.Name, p.Commands, p.SecretNames(), p.Domains)
		}
		// Every key is a secret for its API's host, none passed in as it is.
		for _, s := range p.Secrets {
			if s.Name == w.key && !slices.Contains(s.Hosts, w.domain) {
				t.Errorf("%s: secret %s goes to %v, not %s", p.Name, s.Name, s.Hosts, w.domain)
			}
		}
		for _, v := range p.PassEnv {
			if strings.HasSuffix(v, "_KEY") || strings.HasSuffix(v, "_TOKEN") {
				t.Errorf("%s: passes %s in as it is", p.Name, v)
			}
		}
		if p.stateFor(w.state+"/x") == nil {
			t.Errorf("%s: no state at %s: %+v", p.Name, w.state, p.State)
		}
		for _, kv := range w.env {
			k, v, _ := strings.Cut(kv, "=")
			if p.Env[k] != v {
				t.Errorf("%s: env %s=%q, want %q", p.Name, k, p.Env[k], v)
			}
		}
	}
	// Codex must run without its own sandbox.
	codex, _ := Lookup("codex")
	if !slices.Contains(codex.Args, `sandbox_mode="danger-full-access"`) {
		t.Errorf("codex args %v do not turn its sandbox off", codex.Args)
	}
}

func TestSelect(t *testing.T) {
	for _, c := range []struct{ name, argv0, want string }{
		{"", "claude", "claude"},
		{"", "/home/u/.local/bin/claude", "claude"},
		{"", "/usr/lib/node_modules/.bin/codex", "codex"},
		{"", "gemini", "gemini"},
		{"", "opencode", "opencode"},
		{"", "aider", "aider"},
		{"", "bash", ""},
		{"", "", ""},
		{"", "/", ""},
		{"codex", "bash", "codex"},
		{"none", "claude", ""},
	} {
		p, err := Select(c.name, c.argv0)
		if err != nil {
			t.Errorf("Select(%q, %q): %v", c.name, c.argv0, err)
			continue
		}
		got := ""
		if p != nil {
			got = p.Name
		}
		if got != c.want {
			t.Errorf("Select(%q, %q) = %q, want %q", c.name, c.argv0, got, c.want)
		}
	}
	if _, err := Select("nosuch", "claude"); err == nil || !strings.Contains(err.Error(), "claude, codex") {
		t.Errorf("unknown preset: %v", err)
	}
}

const minimal = `
name = "tool"
commands = ["tool"]
pass_env = ["TOOL_KEY", "TOOL_URL"]
base_url_env = ["TOOL_URL"]
domains = ["api.tool.test"]
[[state]]
path = "~/.tool"
`

func TestParseRejects(t *testing.T) {
	for _, c := range []struct{ name, extra, want string }{
		{"ok", "", ""},
		{"unknown key", "colour = 1\n", "unknown keys"},
		{"bad domain", "domains = [\"https://x.test/\"]\n", "not a URL"},
		{"reserved env", "[env]\nHTTPS_PROXY = \"x\"\n", "shadow sets"},
		{"bad env name", "[env]\n\"A-B\" = \"x\"\n", "not a variable name"},
		{"state outside home", "[[state]]\npath = \"/etc\"\n", "under ~/"},
		{"state dotdot", "[[state]]\npath = \"~/../x\"\n", "clean path"},
		{"state ssh", "[[state]]\npath = \"~/.ssh\"\n", "never shows"},
		{"state overlap", "[[state]]\npath = \"~/.tool/sub\"\n", "overlap"},
		{"config from secrets", "[[config]]\nfrom = \"~/.aws/credentials\"\nto = \"~/.tool/c\"\n", "never shows"},
		{"config outside state", "[[config]]\nfrom = \"~/.toolrc\"\n", "outside every state"},
		{"config on state root", "[[config]]\nfrom = \"~/.tool\"\n", "outside every state"},
		{"file outside state", "[[file]]\npath = \"~/.other/x\"\ncontent = \"x\"\n", "outside every state"},
		{"file merge not json", "[[file]]\npath = \"~/.tool/x.json\"\nmerge = true\ncontent = \"[1]\"\n", "JSON object"},
	} {
		data := minimal + c.extra
		if c.name == "unknown key" || c.name == "bad domain" {
			data = c.extra + minimal
			if c.name == "bad domain" {
				data = strings.Replace(minimal, `domains = ["api.tool.test"]`, strings.TrimSpace(c.extra), 1)
			}
		}
		_, err := Parse(c.name, []byte(data))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	for _, bad := range []string{
		"name = \"Tool\"\n" + strings.Replace(minimal, "name = \"tool\"\n", "", 1),
		strings.Replace(minimal, `commands = ["tool"]`, `commands = []`, 1),
		strings.Replace(minimal, `commands = ["tool"]`, `commands = ["bin/tool"]`, 1),
		strings.Replace(minimal, "[[state]]\npath = \"~/.tool\"\n", "", 1),
		strings.Replace(minimal, `base_url_env = ["TOOL_URL"]`, `base_url_env = ["OTHER"]`, 1),
	} {
		if _, err := Parse("bad", []byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

// TestPrepare: the state is created and seeded from the host config on
// first use only, never written back, and separate per project.
func TestPrepare(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".tool.json"), `{"user":1}`)
	write(filepath.Join(home, ".tool", "settings.json"), "settings")
	write(filepath.Join(home, ".tool", "agents", "a.md"), "agent a")
	write(filepath.Join(home, ".secret"), "no")
	if err := os.Symlink(filepath.Join(home, ".secret"), filepath.Join(home, ".tool", "agents", "link")); err != nil {
		t.Fatal(err)
	}
	p, err := Parse("tool", []byte("args = [\"--no-sandbox\"]\n"+minimal+`
[env]
TOOL_HOME = "~/.tool"
TOOL_QUIET = "1"
[[state]]
path = "~/.toolrc"
file = true
[[state]]
path = "~/.toolcache"
file = true
[[config]]
from = "~/.tool.json"
to = "~/.tool/tool.json"
[[config]]
from = "~/.tool/settings.json"
[[config]]
from = "~/.tool/agents"
[[config]]
from = "~/.tool/missing.json"
[[config]]
from = "~/.tool.json"
to = "~/.toolrc"
`))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Home: home, StateRoot: filepath.Join(base, "state"), Project: "/src/proj",
		HostEnv: []string{"TOOL_URL=http://model.test:8080/v1", "OTHER=1"}}
	g, err := p.Prepare(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := p.StateDir(opts.StateRoot, opts.Project)
	if g.StateDir != dir || !strings.HasPrefix(dir, filepath.Join(opts.StateRoot, "agents", "tool", "proj-")) {
		t.Fatalf("state dir %s", g.StateDir)
	}
	if !slices.Equal(g.Env, []string{"TOOL_HOME=" + filepath.Join(home, ".tool"), "TOOL_QUIET=1"}) {
		t.Errorf("env %v", g.Env)
	}
	if !slices.Equal(g.Domains, []string{"api.tool.test", "model.test:8080"}) {
		t.Errorf("domains %v", g.Domains)
	}
	if !slices.Equal(g.PassEnv, []string{"TOOL_KEY", "TOOL_URL"}) {
		t.Errorf("pass %v", g.PassEnv)
	}
	if got := g.Argv([]string{"tool", "run", "x"}); !slices.Equal(got, []string{"tool", "--no-sandbox", "run", "x"}) {
		t.Errorf("argv %v", got)
	}
	// ~/.toolcache was never seeded: not bound.
	wantBinds := []Bind{
		{Src: filepath.Join(dir, "home", ".tool"), Dst: filepath.Join(home, ".tool")},
		{Src: filepath.Join(dir, "home", ".toolrc"), Dst: filepath.Join(home, ".toolrc")},
	}
	if !slices.Equal(g.Binds, wantBinds) {
		t.Errorf("binds %+v\nwant %+v", g.Binds, wantBinds)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(dir, "home", rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for rel, want := range map[string]string{
		".tool/tool.json": `{"user":1}`, ".tool/settings.json": "settings", ".tool/agents/a.md": "agent a", ".toolrc": `{"user":1}`,
	} {
		if got := read(rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "home", ".tool", "agents", "link")); err == nil {
		t.Errorf("a symlink inside a seeded directory was copied")
	}
	if len(g.Seeded) != 4 {
		t.Errorf("seeded %v", g.Seeded)
	}

	// The agent writes its state; the host changes its config. The next
	// run keeps the agent's state and does not seed again.
	write(filepath.Join(dir, "home", ".tool", "history"), "conversation 1")
	write(filepath.Join(dir, "home", ".tool", "settings.json"), "changed in the jail")
	write(filepath.Join(home, ".tool", "settings.json"), "host changed")
	g2, err := p.Prepare(opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(g2.Seeded) != 0 || read(".tool/history") != "conversation 1" || read(".tool/settings.json") != "changed in the jail" {
		t.Errorf("second prepare: seeded %v, history %q, settings %q", g2.Seeded, read(".tool/history"), read(".tool/settings.json"))
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".tool", "settings.json")); string(b) != "host changed" {
		t.Errorf("host config written: %q", b)
	}
	// Another project: its own state.
	other := opts
	other.Project = "/src/other"
	g3, err := p.Prepare(other)
	if err != nil {
		t.Fatal(err)
	}
	if g3.StateDir == dir || len(g3.Seeded) != 4 {
		t.Errorf("other project: dir %s seeded %v", g3.StateDir, g3.Seeded)
	}
	// A config that links into ~/.ssh is not copied: the seed fails.
	write(filepath.Join(home, ".ssh", "id_ed25519"), "private key")
	sneaky := t.TempDir()
	linked := Options{Home: home, StateRoot: sneaky, Project: "/src/linked"}
	if err := os.Remove(filepath.Join(home, ".tool", "settings.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, ".tool", "settings.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Prepare(linked); err == nil || !strings.Contains(err.Error(), "never shows") {
		t.Errorf("seed through a link into ~/.ssh: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(p.StateDir(sneaky, "/src/linked"), "home", ".tool", "settings.json")); err == nil {
		t.Errorf("the key was copied: %q", b)
	}

	// A base URL that is not a URL is an error, not a silent widening.
	bad := opts
	bad.HostEnv = []string{"TOOL_URL=model.test:8080"}
	if _, err := p.Prepare(bad); err == nil {
		t.Errorf("bad base URL accepted")
	}
}

func TestExplain(t *testing.T) {
	p, err := Lookup("claude")
	if err != nil {
		t.Fatal(err)
	}
	out := Explain(p)
	for _, s := range []string{"preset claude", "    ANTHROPIC_API_KEY to api.anthropic.com (and $ANTHROPIC_BASE_URL's host)\n", "DISABLE_AUTOUPDATER=1",
		"~/.claude (directory)", "~/.claude.json -> ~/.claude/.claude.json", "$ANTHROPIC_BASE_URL"} {
		if !strings.Contains(out, s) {
			t.Errorf("Explain lacks %q:\n%s", s, out)
		}
	}
	codex, _ := Lookup("codex")
	if out := Explain(codex); !strings.Contains(out, `'sandbox_mode="danger-full-access"'`) {
		t.Errorf("codex explain:\n%s", out)
	}
	if !strings.Contains(Explain(nil), "no preset") {
		t.Errorf("nil explain")
	}
	// Every passed variable and every domain of every preset is listed.
	all, _ := All()
	for _, p := range all {
		out := Explain(p)
		for _, s := range append(append([]string{}, p.PassEnv...), p.Domains...) {
			if !strings.Contains(out, "    "+s+"\n") {
				t.Errorf("%s: Explain does not list %s", p.Name, s)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	all, _ := All()
	for _, p := range all {
		b, _ := os.ReadFile(filepath.Join("..", "..", "assets", "agents", p.Name+".toml"))
		f.Add(b)
	}
	f.Add([]byte(minimal))
	f.Add([]byte("name = \"x\"\n[[state]]\npath = \"~/../../etc\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		// Whatever parses satisfies the invariants Prepare relies on.
		for _, s := range p.State {
			if err := checkHomePath("state", s.Path); err != nil {
				t.Fatalf("accepted state %q: %v", s.Path, err)
			}
		}
		for _, c := range p.Config {
			if p.stateFor(c.Target()) == nil {
				t.Fatalf("accepted config %+v outside the state", c)
			}
		}
		for k := range p.Env {
			if checkEnvName("env", k) != nil {
				t.Fatalf("accepted env %q", k)
			}
		}
		_ = Explain(p)
	})
}

// TestPrepareFilesAndCaches: a merged file keeps the agent's own keys and
// wins on its own, before every run; a plain one is replaced; a cache is a
// mount point in the state with its layer beside it, read through from the
// host's path.
func TestPrepareFilesAndCaches(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(home, ".tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".tool", "settings.json"), []byte(`{"auth": "key", "privacy": {"stats": true, "other": 1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Parse("tool", []byte(`cache = ["~/.tool/packages"]
`+minimal+`[[config]]
from = "~/.tool/settings.json"
[[file]]
path = "~/.tool/settings.json"
merge = true
content = '{"privacy": {"stats": false}}'
[[file]]
path = "~/.tool/switch"
content = "off\n"
`))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Home: home, StateRoot: filepath.Join(base, "state"), Project: filepath.Join(base, "project")}
	for run := range 2 {
		g, err := p.Prepare(o)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		b, _ := os.ReadFile(filepath.Join(g.StateDir, "home", ".tool", "settings.json"))
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("run %d: settings %q: %v", run, b, err)
		}
		want := map[string]any{"auth": "key", "privacy": map[string]any{"stats": false, "other": float64(1)}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("run %d: merged settings %v, want %v", run, got, want)
		}
		if b, _ := os.ReadFile(filepath.Join(g.StateDir, "home", ".tool", "switch")); string(b) != "off\n" {
			t.Errorf("run %d: switch = %q", run, b)
		}
		if fi, err := os.Stat(filepath.Join(g.StateDir, "home", ".tool", "packages")); err != nil || !fi.IsDir() {
			t.Errorf("run %d: no mount point for the cache: %v", run, err)
		}
		if len(g.Caches) != 1 || g.Caches[0].Dst != filepath.Join(home, ".tool", "packages") ||
			!strings.HasPrefix(g.Caches[0].Layer, g.StateDir+"/") {
			t.Errorf("run %d: caches %+v", run, g.Caches)
		}
		// The agent turns its statistics back on and leaves a symlink.
		os.WriteFile(filepath.Join(g.StateDir, "home", ".tool", "settings.json"), []byte(`{"auth": "key", "privacy": {"stats": true, "other": 1}}`), 0o600)
		os.Remove(filepath.Join(g.StateDir, "home", ".tool", "switch"))
		os.Symlink(filepath.Join(home, "elsewhere"), filepath.Join(g.StateDir, "home", ".tool", "switch"))
	}
	if _, err := os.Stat(filepath.Join(home, "elsewhere")); err == nil {
		t.Errorf("a file was written through the agent's symlink")
	}
}
