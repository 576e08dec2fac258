package preset

import (
	"fmt"
	"sort"
	"strings"
)

// Explain says exactly what preset p grants a run, for `shadow run --preset
// NAME --explain`: the host variables, the domains, the environment, the
// arguments, and the state and config it keeps. A nil preset grants nothing.
func Explain(p *Preset) string {
	var b strings.Builder
	if p == nil {
		b.WriteString("no preset: the command gets only what the flags give it\n")
		return b.String()
	}
	fmt.Fprintf(&b, "preset %s: %s\n", p.Name, p.Description)
	fmt.Fprintf(&b, "  chosen for commands named: %s\n", strings.Join(p.Commands, ", "))
	b.WriteString("  host variables passed in when set (besides PATH, HOME, TERM, LANG and the like, and --env):\n")
	list(&b, p.PassEnv)
	if len(p.Secrets) > 0 {
		b.WriteString("  API keys given as secrets when set on the host (the agent holds a placeholder, the proxy puts\n")
		b.WriteString("  the key into the requests to these hosts only):\n")
		for _, s := range p.Secrets {
			fmt.Fprintf(&b, "    %s to %s", s.Name, strings.Join(s.Hosts, ", "))
			if len(s.BaseURLEnv) > 0 {
				fmt.Fprintf(&b, " (and $%s's host)", strings.Join(s.BaseURLEnv, "'s, $"))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("  domains reached through shadow's allow-list proxy (each one is a way out for data):\n")
	list(&b, p.Domains)
	if len(p.BaseURLEnv) > 0 {
		fmt.Fprintf(&b, "  plus the host:port of %s when set on the host\n", "$"+strings.Join(p.BaseURLEnv, ", $"))
	}
	if len(p.Env) > 0 {
		b.WriteString("  environment set in the jail (~ is the jail's $HOME):\n")
		keys := make([]string, 0, len(p.Env))
		for k := range p.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "    %s=%s\n", k, p.Env[k])
		}
	}
	if len(p.Args) > 0 {
		fmt.Fprintf(&b, "  arguments added after the command: %s\n", strings.Join(quoteAll(p.Args), " "))
	}
	b.WriteString("  state kept per project under $XDG_STATE_HOME/shadow/agents/" + p.Name + "/<project>/,\n")
	b.WriteString("  bound read-write (not staged, never copied back to the host):\n")
	for _, s := range p.State {
		kind := "directory"
		if s.File {
			kind = "file, when seeded"
		}
		fmt.Fprintf(&b, "    %s (%s)\n", s.Path, kind)
	}
	if len(p.Config) > 0 {
		b.WriteString("  host config copied into that state once, on first use in a project:\n")
		for _, c := range p.Config {
			if c.To != "" && c.To != c.From {
				fmt.Fprintf(&b, "    %s -> %s\n", c.From, c.To)
			} else {
				fmt.Fprintf(&b, "    %s\n", c.From)
			}
		}
	}
	if len(p.Cache) > 0 {
		b.WriteString("  caches the agent fills for itself, read through from the host's copy when there is one\n")
		b.WriteString("  (shared by every project; writes stay in the project's state):\n")
		list(&b, p.Cache)
	}
	if len(p.Files) > 0 {
		b.WriteString("  files written into that state before every run:\n")
		for _, f := range p.Files {
			fmt.Fprintf(&b, "    %s: %s\n", f.Path, strings.Join(strings.Fields(f.Content), " "))
		}
	}
	return b.String()
}

func list(b *strings.Builder, items []string) {
	if len(items) == 0 {
		b.WriteString("    (none)\n")
		return
	}
	for _, it := range items {
		fmt.Fprintf(b, "    %s\n", it)
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return out
}
