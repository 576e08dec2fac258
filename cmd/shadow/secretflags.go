package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// parseSecrets reads --secret NAME[=HOST,...] (and the config key secret): the value is NAME's
// in shadow's own environment; hosts left out come from the run's preset (fillSecretHosts).
// A variable also passed with --env is refused: the jail would hold either the value or the
// placeholder, not both.
func parseSecrets(specs, pass []string, environ func(string) (string, bool)) ([]proxy.Secret, error) {
	var out []proxy.Secret
	for _, spec := range specs {
		name, hosts, _ := strings.Cut(spec, "=")
		name = strings.TrimSpace(name)
		if !validEnvName(name) {
			return nil, usageError{msg: fmt.Sprintf("--secret %q: give NAME[=HOST,...], NAME a variable of your environment", spec)}
		}
		if slices.Contains(pass, name) {
			return nil, usageError{msg: fmt.Sprintf("--secret %s and --env %s: choose one (--env shows the agent the value, --secret a placeholder)", name, name)}
		}
		if slices.ContainsFunc(out, func(s proxy.Secret) bool { return s.Name == name }) {
			return nil, usageError{msg: fmt.Sprintf("--secret %s: given twice", name)}
		}
		v, ok := environ(name)
		if !ok || v == "" {
			return nil, usageError{msg: fmt.Sprintf("--secret %s: %s is not set in your environment", name, name)}
		}
		s := proxy.Secret{Name: name, Value: v}
		if hosts != "" {
			for _, h := range strings.Split(hosts, ",") {
				if err := proxy.CheckSecretHost(h); err != nil {
					return nil, usageError{msg: fmt.Sprintf("--secret %s: %v", name, err)}
				}
				s.Hosts = append(s.Hosts, strings.TrimSpace(h))
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// fillSecretHosts gives each secret without hosts the hosts its preset names for it; one that no
// preset names is refused.
func fillSecretHosts(secrets []proxy.Secret, pr *preset.Preset) error {
	for i := range secrets {
		if len(secrets[i].Hosts) > 0 {
			continue
		}
		if pr != nil {
			for _, s := range pr.Secrets {
				if s.Name == secrets[i].Name {
					secrets[i].Hosts = slices.Clone(s.Hosts)
				}
			}
		}
		if len(secrets[i].Hosts) == 0 {
			return usageError{msg: fmt.Sprintf("--secret %s: no preset names its hosts: give them, as --secret %s=HOST[,HOST...]", secrets[i].Name, secrets[i].Name)}
		}
	}
	return nil
}

// warnPassedSecrets warns of each --env variable that the run's preset would give as a secret:
// passed in, its real value is the agent's to read, copy or send.
func warnPassedSecrets(w io.Writer, pass []string, pr *preset.Preset) {
	if pr == nil {
		return
	}
	for _, name := range pr.SecretNames() {
		if slices.Contains(pass, name) {
			sayErr(w, "shadow: warning:", fmt.Sprintf("--env %s passes the real value of %s into the jail, where the agent, and anything it runs, can read it; "+
				"leave --env %s out and preset %s gives it as a secret (the agent holds a placeholder, shadow's proxy puts the key into requests to %s only)",
				name, name, name, pr.Name, strings.Join(secretHosts(pr, name), ", ")))
		}
	}
}

func secretHosts(pr *preset.Preset, name string) []string {
	for _, s := range pr.Secrets {
		if s.Name == name {
			return s.Hosts
		}
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
