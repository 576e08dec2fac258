package preset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// ApplyTo adds what g grants to the jail's policy p: the passed variables
// that are set in host (os.Environ form), the preset's environment (which
// wins over a variable of the same name), its domains on the allow-list, and
// its state binds. A nil Grant changes nothing.
func (g *Grant) ApplyTo(p *sandbox.Policy, host []string) error {
	if g == nil {
		return nil
	}
	rules, err := proxy.ParseRules(g.Domains)
	if err != nil {
		return fmt.Errorf("preset %s: %w", g.Preset, err)
	}
	if p.Env == nil {
		p.Env = sandbox.BuildEnv(host, nil)
	}
	for _, kv := range sandbox.BuildEnv(host, g.PassEnv) {
		name, _, _ := strings.Cut(kv, "=")
		if !hasVar(p.Env, name) {
			p.Env = append(p.Env, kv)
		}
	}
	for _, kv := range g.Env {
		name, _, _ := strings.Cut(kv, "=")
		p.Env = slices.DeleteFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		p.Env = append(p.Env, kv)
	}
	for _, r := range rules {
		if !slices.Contains(p.AllowDomains, r) {
			p.AllowDomains = append(p.AllowDomains, r)
		}
	}
	g.applySecrets(p)
	p.StateBinds = append(p.StateBinds, g.Binds...)
	p.AgentCaches = append(p.AgentCaches, g.Caches...)
	return nil
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// ForRun chooses the preset of a run (name, else argv[0]'s basename; see
// Select), prepares its per-project state and applies it to p. It returns
// the argv to run (with the preset's arguments) and the grant, nil when no
// preset applies. p.Env should already hold the run's environment (Nil:
// BuildEnv(o.HostEnv, nil)). When the preset adds arguments, p.Command keeps
// argv as given, for the record of the run's steps.
func ForRun(name string, argv []string, p *sandbox.Policy, o Options) ([]string, *Grant, error) {
	if len(argv) == 0 {
		return argv, nil, nil
	}
	pr, err := Select(name, argv[0])
	if err != nil || pr == nil {
		return argv, nil, err
	}
	g, err := pr.Prepare(o)
	if err != nil {
		return argv, nil, err
	}
	if err := g.ApplyTo(p, o.HostEnv); err != nil {
		return argv, nil, err
	}
	out := g.Argv(argv)
	if len(out) != len(argv) {
		p.Command = slices.Clone(argv)
	}
	return out, g, nil
}
