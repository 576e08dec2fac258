package sandbox

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// planHost is a host as planJail sees it, made of data: a user dev with a
// project ~/src/app in a git repository, Go and npm caches, and the usual
// system directories.
func planHost() hostFacts {
	return hostFacts{
		Project: "/home/dev/src/app", Dir: "/home/dev/src/app", Home: "/home/dev",
		Upper: "/var/lib/shadow/s1/upper", Checkpoints: "/var/lib/shadow/s1/checkpoints", Binary: "/usr/bin/shadow", UID: 1000, GID: 1000,
		Env:        []string{"PATH=/usr/bin:/bin", "TERM=xterm", "LANG=C.UTF-8"},
		SystemDirs: []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt"},
		UserLimits: map[string]int64{"max_user_namespaces": 16},
		GitDirs:    []string{"/home/dev/src/app/.git"},
		GitConfig:  "[user]\n\tname = Dev\n",
		Scrubbed:   []shownConfig{{Path: "/home/dev/src/app/.git/config", Content: "[core]\n"}},
		Caches:     []string{".cache/go-build", ".npm"},
		Real: map[string]string{
			"/var/lib/shadow/s1/cache/.cache_go-build/upper": "/var/lib/shadow/s1/cache/.cache_go-build/upper",
		},
		Kinds: map[string]fileKind{"/home/dev/src/app/.git": kindDir},
	}
}

func planPolicy() Policy {
	return Policy{Project: "/home/dev/src/app", Upper: "/var/lib/shadow/s1/upper", CacheDir: "/var/lib/shadow/s1/cache",
		Checkpoints: "/var/lib/shadow/s1/checkpoints", NextCheckpoint: 3, MaxUpperBytes: 1 << 30}
}

// TestMountPlan: the jail's plan, from the policy and the host's facts
// alone, for each kind of policy and host: every mount PID 1 makes, in
// order, the command's and PID 1's Landlock rules, and what the network
// side needs. Refresh with go test -run TestMountPlan -update.
func TestMountPlan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		policy func(*Policy)
		host   func(*hostFacts)
	}{
		{"default", nil, nil},
		{"no-cache", func(p *Policy) { p.NoCache = true }, nil},
		{"ro-rw", func(p *Policy) {
			p.ReadOnly = []string{"/home/dev/src", "/srv/data/ref.txt"}
			p.ReadWrite = []string{"/srv/out"}
		}, func(f *hostFacts) {
			f.ReadOnly, f.ReadWrite = []string{"/home/dev/src", "/srv/data/ref.txt"}, []string{"/srv/out"}
			f.Kinds["/home/dev/src"], f.Kinds["/srv/data/ref.txt"] = kindDir, kindFile
		}},
		{"ro-socket", func(p *Policy) { p.ReadOnly = []string{"/run/docker.sock"} }, func(f *hostFacts) {
			f.ReadOnly = []string{"/run/docker.sock"}
			f.Kinds["/run/docker.sock"] = kindSocket
		}},
		{"allow-domain", func(p *Policy) {
			p.AllowDomains = mustParseRules("api.example.com", "localhost:5432")
		}, nil},
		{"allow-domain-with-network", func(p *Policy) {
			p.AllowNetwork = true
			p.AllowDomains = mustParseRules("api.example.com")
		}, nil},
		{"publish", func(p *Policy) { p.Publish = []int{3000, 8080} }, nil},
		{"git-worktree", func(p *Policy) { p.GitWritable = true }, func(f *hostFacts) {
			f.GitDirs = []string{"/home/dev/src/main/.git/worktrees/app", "/home/dev/src/main/.git"}
			f.Kinds = map[string]fileKind{"/home/dev/src/main/.git": kindDir, "/home/dev/src/main/.git/worktrees/app": kindDir}
		}},
		{"git-writable", func(p *Policy) { p.GitWritable = true }, nil},
		{"install-tree", nil, func(f *hostFacts) {
			f.InstallTrees = []string{"/home/dev/.nvm/versions/node/v22.1.0", "/home/dev/.local/bin"}
			f.Kinds["/home/dev/.nvm/versions/node/v22.1.0"], f.Kinds["/home/dev/.local/bin"] = kindDir, kindDir
		}},
		{"resolv-conf-under-run", nil, func(f *hostFacts) {
			f.ResolvConf = "/run/systemd/resolve/stub-resolv.conf"
		}},
		{"agent-state", func(p *Policy) {
			p.StateBinds = []StateBind{{Src: "/var/lib/shadow/agents/claude", Dst: "/home/dev/.claude"}}
			p.AgentCaches = []AgentCache{{Dst: "/home/dev/.cache/claude-cli", Layer: "/var/lib/shadow/agents/claude-cache"}}
		}, func(f *hostFacts) {
			f.Real["/var/lib/shadow/agents/claude"] = "/var/lib/shadow/agents/claude"
			f.Kinds["/home/dev/.cache/claude-cli"] = kindDir
		}},
		{"root", nil, func(f *hostFacts) {
			f.UID, f.GID, f.Home = 0, 0, "/root"
			f.Project, f.Dir, f.GitDirs = "/srv/app", "/srv/app/cmd", []string{"/srv/app/.git"}
			f.Kinds = map[string]fileKind{"/srv/app/.git": kindDir}
			f.Caches, f.GitConfig, f.Scrubbed = nil, "", nil
		}},
		{"no-home", nil, func(f *hostFacts) {
			f.Home, f.Caches, f.GitConfig = "", nil, ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, f := planPolicy(), planHost()
			f.Kinds, f.Real = maps.Clone(f.Kinds), maps.Clone(f.Real)
			if c.policy != nil {
				c.policy(&p)
			}
			if c.host != nil {
				c.host(&f)
			}
			golden.RequireEqual(t, planText(p, []string{"claude", "--resume"}, f))
		})
	}
}

// TestMountPlanIsData: the same policy and facts make the same plan, and the
// plan names no path of the machine the test runs on.
func TestMountPlanIsData(t *testing.T) {
	t.Parallel()
	p, f := planPolicy(), planHost()
	a, b := planText(p, []string{"sh"}, f), planText(p, []string{"sh"}, f)
	if a != b {
		t.Fatalf("two plans of the same policy differ:\n%s\n%s", a, b)
	}
}

func mustParseRules(specs ...string) []proxy.Rule {
	rules, err := proxy.ParseRules(specs)
	if err != nil {
		panic(err)
	}
	return rules
}

// planText is the plan of p for argv on host f, as the golden files hold it.
func planText(p Policy, argv []string, f hostFacts) string {
	s, err := planJail(p, argv, "/tmp/shadow-root-1", f)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	// What Run adds before it sends the spec: the runtime directory, and the
	// masks of the system trees.
	s.RuntimeDir = "/var/lib/shadow/s1/run"
	s.Masked = []string{"/etc/shadow", "/usr/lib/secret"}
	var b strings.Builder
	fmt.Fprintf(&b, "uid %d gid %d home %q project %s start %s\n", s.HostUID, s.HostGID, s.Home, s.Project, s.Dir)
	fmt.Fprintf(&b, "proxy %v loopback relays %v publish %v\n", s.Proxy, s.LoopbackRelays, s.Publish)
	fmt.Fprintf(&b, "checkpoints %+v layer size %d\n", s.Checkpoints, s.LayerSize)
	fmt.Fprintf(&b, "env %q\n", s.Exec.Env)
	b.WriteString("\nsteps:\n")
	stage := ""
	for _, st := range mountPlan(s) {
		if st.Stage != stage {
			stage = st.Stage
			fmt.Fprintf(&b, "  %s:\n", stage)
		}
		fmt.Fprintf(&b, "    %s\n", strings.ReplaceAll(st.String(), "\n\t", "\n      "))
	}
	for _, r := range []struct {
		name  string
		paths []string
	}{
		{"command read-exec", s.Exec.Rules.ReadExec}, {"command read-only", s.Exec.Rules.ReadOnly},
		{"command read-write", s.Exec.Rules.ReadWrite}, {"command devices", s.Exec.Rules.Devices},
		{"PID 1 read-exec", s.InitRules.ReadExec}, {"PID 1 read-only", s.InitRules.ReadOnly},
		{"PID 1 read-write", s.InitRules.ReadWrite}, {"PID 1 devices", s.InitRules.Devices},
	} {
		fmt.Fprintf(&b, "\nlandlock %s:\n", r.name)
		for _, x := range r.paths {
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	return b.String()
}
