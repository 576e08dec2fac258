package preset

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

func TestForRun(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	host := []string{"PATH=/bin", "HOME=" + home, "ANTHROPIC_API_KEY=sk-ant", "OPENAI_API_KEY=sk-oai", "AWS_SECRET_ACCESS_KEY=no",
		"CLAUDE_CONFIG_DIR=/elsewhere", "ANTHROPIC_BASE_URL=https://gw.example.test:8443/anthropic"}
	o := Options{Home: home, StateRoot: filepath.Join(base, "state"), Project: filepath.Join(base, "proj"), HostEnv: host}
	user, _ := proxy.ParseRule("example.org")
	p := sandbox.Policy{Env: sandbox.BuildEnv(host, []string{"CLAUDE_CONFIG_DIR"}), AllowDomains: []proxy.Rule{user}}
	argv, g, err := ForRun("", []string{"/opt/bin/claude", "-p", "hi"}, &p, o)
	if err != nil || g == nil || g.Preset != "claude" {
		t.Fatalf("ForRun: %v %+v", err, g)
	}
	if !slices.Equal(argv, []string{"/opt/bin/claude", "-p", "hi"}) {
		t.Errorf("argv %v", argv)
	}
	env := map[string]int{}
	val := map[string]string{}
	for _, kv := range p.Env {
		for i := range kv {
			if kv[i] == '=' {
				env[kv[:i]]++
				val[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	if env["ANTHROPIC_API_KEY"] != 0 || env["OPENAI_API_KEY"] != 0 || env["AWS_SECRET_ACCESS_KEY"] != 0 {
		t.Errorf("passed variables wrong: %v", p.Env)
	}
	// The key is a secret for the API and the base URL's host; the other
	// preset's is not.
	if len(p.Secrets) != 1 || p.Secrets[0].Name != "ANTHROPIC_API_KEY" || p.Secrets[0].Value != "sk-ant" ||
		!slices.Equal(p.Secrets[0].Hosts, []string{"api.anthropic.com", "gw.example.test:8443"}) {
		t.Errorf("secrets %+v", p.Secrets)
	}
	// The preset's own value wins over a passed one, once.
	if val["CLAUDE_CONFIG_DIR"] != filepath.Join(home, ".claude") || env["CLAUDE_CONFIG_DIR"] != 1 || val["DISABLE_AUTOUPDATER"] != "1" {
		t.Errorf("preset env: %v", p.Env)
	}
	var allowed []string
	for _, r := range p.AllowDomains {
		allowed = append(allowed, r.String())
	}
	for _, d := range []string{"example.org", "api.anthropic.com", "gw.example.test:8443"} {
		if !slices.Contains(allowed, d) {
			t.Errorf("allow-list %v lacks %s", p.AllowDomains, d)
		}
	}
	if len(p.StateBinds) != 1 || p.StateBinds[0].Dst != filepath.Join(home, ".claude") {
		t.Errorf("state binds %+v", p.StateBinds)
	}

	// The placeholder is kept for the project: an agent that remembers its
	// approved key finds the same one in the next run.
	again := sandbox.Policy{Env: sandbox.BuildEnv(host, nil)}
	if _, _, err := ForRun("", []string{"claude"}, &again, o); err != nil || len(again.Secrets) != 1 ||
		again.Secrets[0].Placeholder != p.Secrets[0].Placeholder || !strings.HasPrefix(p.Secrets[0].Placeholder, "shadow-secret-ANTHROPIC_API_KEY-") {
		t.Errorf("placeholders %+v then %+v, %v", p.Secrets, again.Secrets, err)
	}
	// --env ANTHROPIC_API_KEY passes the value in as asked: no secret.
	p = sandbox.Policy{Env: sandbox.BuildEnv(host, []string{"ANTHROPIC_API_KEY"})}
	if _, _, err := ForRun("", []string{"claude"}, &p, o); err != nil || len(p.Secrets) != 0 {
		t.Errorf("with --env ANTHROPIC_API_KEY: secrets %+v, %v", p.Secrets, err)
	}

	// Codex gets its arguments; "none" and unknown commands get nothing.
	p = sandbox.Policy{}
	argv, _, err = ForRun("", []string{"codex", "exec", "x"}, &p, o)
	if err != nil || !slices.Equal(argv, []string{"codex", "-c", `sandbox_mode="danger-full-access"`, "-c", "check_for_update_on_startup=false", "exec", "x"}) {
		t.Errorf("codex argv %v, %v", argv, err)
	}
	for _, c := range []struct{ name, cmd string }{{"none", "codex"}, {"", "bash"}} {
		p = sandbox.Policy{}
		argv, g, err = ForRun(c.name, []string{c.cmd}, &p, o)
		if err != nil || g != nil || p.Env != nil || len(p.AllowDomains) != 0 || !slices.Equal(argv, []string{c.cmd}) {
			t.Errorf("ForRun(%q, %s) changed the policy: %+v %+v %v", c.name, c.cmd, p, g, err)
		}
	}
	if _, _, err := ForRun("nosuch", []string{"codex"}, &p, o); err == nil {
		t.Errorf("unknown preset accepted")
	}
}
