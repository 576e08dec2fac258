package preset

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// Secret is an API key a preset's agent needs, which it gets as a secret
// (SPEC §14): the jail holds a placeholder, and the proxy puts the host's
// value into the requests to Hosts only.
type Secret struct {
	// Name is the host variable holding the key.
	Name string `toml:"name"`
	// Hosts are where the key goes: "host" or "host:port".
	Hosts []string `toml:"hosts"`
	// BaseURLEnv are variables of pass_env holding a URL: when set on the
	// host, its host:port is one more host the key goes to.
	BaseURLEnv []string `toml:"base_url_env"`
}

// checkSecrets checks the preset's secrets: a variable shadow does not own,
// named once and not passed in as well, with hosts.
func (p *Preset) checkSecrets() error {
	for i, s := range p.Secrets {
		if err := checkEnvName("secret", s.Name); err != nil {
			return err
		}
		if slices.Contains(p.PassEnv, s.Name) {
			return fmt.Errorf("secret %s: also in pass_env, which would show the agent its value", s.Name)
		}
		if slices.ContainsFunc(p.Secrets[:i], func(o Secret) bool { return o.Name == s.Name }) {
			return fmt.Errorf("secret %s: named twice", s.Name)
		}
		if len(s.Hosts) == 0 {
			return fmt.Errorf("secret %s: no hosts", s.Name)
		}
		for _, h := range s.Hosts {
			if err := proxy.CheckSecretHost(h); err != nil {
				return fmt.Errorf("secret %s: %w", s.Name, err)
			}
		}
		for _, v := range s.BaseURLEnv {
			if !slices.Contains(p.PassEnv, v) {
				return fmt.Errorf("secret %s: base_url_env %s: not in pass_env", s.Name, v)
			}
		}
	}
	return nil
}

// SecretNames are the variables the preset takes as secrets.
func (p *Preset) SecretNames() []string {
	var out []string
	for _, s := range p.Secrets {
		out = append(out, s.Name)
	}
	return out
}

// placeholdersFile, in a preset's per-project state, keeps the placeholders
// of its secrets: the same from run to run, as an agent remembers which key
// its user approved (Claude Code keeps a key's last characters).
const placeholdersFile = ".shadow-placeholders.json"

// grantSecrets returns the preset's secrets that are set in host, with
// their values, hosts (the base URLs' among them) and the placeholders kept
// in the state directory dir.
func (p *Preset) grantSecrets(host []string, dir string) ([]proxy.Secret, error) {
	var out []proxy.Secret
	kept := map[string]string{}
	path := filepath.Join(dir, placeholdersFile)
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &kept)
	}
	changed := false
	defer func() {
		if changed {
			b, _ := json.Marshal(kept)
			os.WriteFile(path, b, 0o600)
		}
	}()
	for _, s := range p.Secrets {
		v := lookup(host, s.Name)
		if v == "" {
			continue
		}
		hosts := slices.Clone(s.Hosts)
		for _, name := range s.BaseURLEnv {
			u := lookup(host, name)
			if u == "" {
				continue
			}
			hp, err := urlHostPort(u)
			if err != nil {
				return nil, fmt.Errorf("preset %s: $%s: %w", p.Name, name, err)
			}
			hosts = append(hosts, hp)
		}
		ph := kept[s.Name]
		if !proxy.IsPlaceholder(s.Name, ph) {
			ph = proxy.NewPlaceholder(s.Name)
			kept[s.Name], changed = ph, true
		}
		out = append(out, proxy.Secret{Name: s.Name, Placeholder: ph, Value: v, Hosts: hosts})
	}
	return out, nil
}

// applySecrets adds g's secrets to p, but for a variable p's environment
// passes in already (--env NAME: the agent sees the value, as asked) or
// that p has a secret for (--secret NAME, which wins).
func (g *Grant) applySecrets(p *sandbox.Policy) {
	for _, s := range g.Secrets {
		if hasVar(p.Env, s.Name) || slices.ContainsFunc(p.Secrets, func(o proxy.Secret) bool { return o.Name == s.Name }) {
			continue
		}
		p.Secrets = append(p.Secrets, s)
	}
}
