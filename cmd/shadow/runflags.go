package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/runner"
)

// runFlags are the flags shared by run, shell and tui (SPEC §1). Each has a config key of the
// same name; a flag given on the command line wins over both config files.
type runFlags struct {
	project       string
	newSession    bool
	session       string
	wait          bool
	allowNetwork  bool
	allowDomain   []string
	publish       []int
	timeout       time.Duration
	env           []string
	secret        []string
	ro, rw        []string
	noCache       bool
	preset        string
	trust         string
	gitWritable   bool
	maxUpperBytes string
	cpBudget      string
	explain       bool
	fs            *pflag.FlagSet
}

func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.fs = fl
	fl.StringVar(&f.project, "project", "", "project directory (default: the git top level of the working directory, else the working directory)")
	fl.BoolVar(&f.newSession, "new", false, "start a new session instead of continuing the open one")
	fl.StringVar(&f.session, "session", "", "continue the project's open session named NAME, or open one (several can be open at once); a session ID continues that session")
	fl.BoolVar(&f.wait, "wait", false, "wait for another shadow writing to the project instead of failing")
	fl.BoolVar(&f.allowNetwork, "allow-network", false, "give the jail internet access (through pasta or slirp4netns when installed)")
	fl.StringArrayVar(&f.allowDomain, "allow-domain", nil, "allow HOST[:PORT] through the jail's proxy (repeatable; *.example.com wildcards)")
	fl.Var((*portsValue)(&f.publish), "publish", "forward the host's 127.0.0.1:PORT to the jail's lo:PORT (repeatable)")
	fl.DurationVar(&f.timeout, "timeout", 0, "stop the command after this long (exit 124)")
	fl.StringArrayVar(&f.env, "env", nil, "pass the host variable NAME into the jail (repeatable)")
	fl.StringArrayVar(&f.secret, "secret", nil, "give the jail NAME as a placeholder, which shadow's proxy replaces with the real value in the headers of requests to HOST,... only (default: the preset's hosts for NAME; repeatable)")
	fl.StringArrayVar(&f.ro, "ro", nil, "bind a host PATH read-only into the jail (repeatable)")
	fl.StringArrayVar(&f.rw, "rw", nil, "bind a host PATH read-write into the jail: writes there are NOT staged (repeatable)")
	fl.BoolVar(&f.noCache, "no-cache", false, "hide the host's package caches (~/.npm, ~/go/pkg/mod, ...)")
	fl.StringVar(&f.preset, "preset", "", "agent preset (default: chosen from the command's name)")
	fl.StringVar(&f.trust, "trust", "", "run the preflight audit under this profile first (repo, dependency, untrusted) and refuse to start when it blocks")
	fl.BoolVar(&f.gitWritable, "git-writable", false, "stage writes to .git like the rest instead of making it read-only")
	fl.StringVar(&f.maxUpperBytes, "max-upper-bytes", "", "size of the run's layer (e.g. 2G; default: half of the memory): the kernel enforces it, writes past it fail with ENOSPC and the run goes on")
	fl.StringVar(&f.cpBudget, "checkpoint-budget", "", "disk the session's checkpoints may use (e.g. 8G; default: 4 times --max-upper-bytes): past it, quiet checkpoints stop and shadow says so")
	fl.BoolVar(&f.explain, "explain", false, "print exactly what the preset grants (variables, domains, state directories) and exit")
}

// runSetup is everything a jailed command needs, resolved from flags and config.
type runSetup struct {
	project string
	// root is the state directory; store, the session store in it, is opened (created) only
	// once the run is allowed to start (sessions).
	root   string
	store  *session.Store
	cfg    session.LoadedConfig
	policy sandbox.Policy
	trust  string
	preset string
	// granted are the variables a preset passes on purpose; the in-jail audit reports them as
	// granted rather than leaked.
	granted []string
	// pass are the variables --env passes in.
	pass []string
}

func (f *runFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// resolve merges flags over the config files and builds the jail's policy (without the session's
// directories, which the caller fills in once it holds the project lock).
func (f *runFlags) resolve() (*runSetup, error) {
	project, err := session.ResolveProject(f.project)
	if err != nil {
		return nil, err
	}
	// A project the jail refuses is refused before anything is created for the run.
	if err := sandbox.CheckProject(project, cleanHome()); err != nil {
		return nil, withCode(exitNoJail, &sandbox.JailError{Step: "project", Err: err})
	}
	root, err := session.DefaultRoot()
	if err != nil {
		return nil, err
	}
	if err := checkStateDir(root, project); err != nil {
		return nil, err
	}
	userPath, err := session.UserConfigPath()
	if err != nil {
		return nil, err
	}
	cfg, err := session.LoadConfig(userPath, project, root)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		sayErr(os.Stderr, "shadow: warning:", w)
	}
	c := cfg.Config
	p := sandbox.Policy{Project: project, MaskCache: maskCacheDir()}
	// The command starts where shadow was started, when that is in the project.
	p.Dir, _ = os.Getwd()
	p.AllowNetwork = pick(f.changed("allow-network"), f.allowNetwork, c.AllowNetwork)
	p.NoCache = pick(f.changed("no-cache"), f.noCache, c.NoCache)
	p.GitWritable = pick(f.changed("git-writable"), f.gitWritable, c.GitWritable)
	p.Publish = pickSlice(f.changed("publish"), f.publish, c.Publish)
	if f.changed("timeout") {
		if f.timeout <= 0 {
			return nil, usageError{msg: fmt.Sprintf("--timeout %s: give a duration longer than 0, such as 30s or 2h (leave it out for no limit)", f.fs.Lookup("timeout").Value)}
		}
		p.Timeout = f.timeout
	} else if c.Timeout != nil {
		if c.Timeout.Duration <= 0 {
			return nil, usageError{msg: fmt.Sprintf("config key timeout = %q: give a duration longer than 0, such as \"30m\" (leave the key out for no limit)", c.Timeout.Duration)}
		}
		p.Timeout = c.Timeout.Duration
	}
	if f.changed("max-upper-bytes") {
		n, err := session.ParseSize(f.maxUpperBytes)
		if err != nil {
			return nil, usageError{msg: "--max-upper-bytes: " + err.Error()}
		}
		p.MaxUpperBytes = n
	} else if c.MaxUpperBytes != nil {
		p.MaxUpperBytes = int64(*c.MaxUpperBytes)
	}
	if f.changed("checkpoint-budget") {
		n, err := session.ParseSize(f.cpBudget)
		if err != nil {
			return nil, usageError{msg: "--checkpoint-budget: " + err.Error()}
		}
		p.CheckpointBudget = n
	} else if c.CheckpointBudget != nil {
		p.CheckpointBudget = int64(*c.CheckpointBudget)
	}
	p.AllowDomains, err = proxy.ParseRules(pickSlice(f.changed("allow-domain"), f.allowDomain, c.AllowDomain))
	if err != nil {
		return nil, usageError{msg: "--allow-domain: " + err.Error()}
	}
	pass := pickSlice(f.changed("env"), f.env, c.Env)
	p.Env = sandbox.BuildEnv(os.Environ(), pass)
	if p.Secrets, err = parseSecrets(pickSlice(f.changed("secret"), f.secret, c.Secret), pass, os.LookupEnv); err != nil {
		return nil, err
	}
	p.ReadOnly, err = expandPaths(pickSlice(f.changed("ro"), f.ro, c.RO))
	if err != nil {
		return nil, err
	}
	p.ReadWrite, err = expandPaths(pickSlice(f.changed("rw"), f.rw, c.RW))
	if err != nil {
		return nil, err
	}
	trust := f.trust
	if !f.changed("trust") && c.Trust != nil {
		trust = *c.Trust
	}
	if trust != "" && !slices.Contains(session.TrustLevels, trust) {
		return nil, usageError{msg: fmt.Sprintf("--trust %q: use one of %s", trust, strings.Join(session.TrustLevels, ", "))}
	}
	presetName := f.preset
	if !f.changed("preset") && c.Preset != nil {
		presetName = *c.Preset
	}
	return &runSetup{project: project, root: root, cfg: cfg, policy: p, trust: trust, preset: presetName, pass: pass}, nil
}

// applyPreset chooses the agent preset (--preset, else the command's name), prepares its
// per-project state directory and adds what it grants to the policy. It returns the argv to
// run, with the preset's own arguments.
func (s *runSetup) applyPreset(argv []string) ([]string, error) {
	home := s.policy.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if len(argv) > 0 {
		pr, _ := preset.Select(s.preset, argv[0]) // ForRun reports a bad --preset
		if err := fillSecretHosts(s.policy.Secrets, pr); err != nil {
			return nil, err
		}
		warnPassedSecrets(os.Stderr, s.pass, pr)
	}
	out, grant, err := preset.ForRun(s.preset, argv, &s.policy, preset.Options{Home: home,
		StateRoot: s.root, Project: s.project, HostEnv: os.Environ()})
	if err != nil {
		return nil, err
	}
	if grant != nil {
		s.granted = grant.PassEnv
	}
	return out, nil
}

// madeDirs are directories a step of a run is about to make, which remove takes away again: the
// new one and the parents it will create, up to a directory that already exists.
type madeDirs []string

// newPresetState lists the preset state directory (and its new parents below the state root)
// that applyPreset is about to create for argv; none when it exists already or no preset applies.
func (s *runSetup) newPresetState(argv []string) madeDirs {
	if len(argv) == 0 {
		return nil
	}
	pr, err := preset.Select(s.preset, argv[0])
	if err != nil || pr == nil {
		return nil
	}
	var made madeDirs
	for d := pr.StateDir(s.root, s.project); d != s.root && strings.HasPrefix(d, s.root+"/"); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		made = append(made, d)
	}
	return made
}

// remove takes the directories away, deepest first: the first whole, the parents only if empty.
func (m madeDirs) remove() {
	for i, d := range m {
		if i == 0 {
			_ = os.RemoveAll(d)
			continue
		}
		_ = os.Remove(d)
	}
}

// insidePolicy is the policy of the in-jail audit: the run's, plus the names of the variables
// the preset passes on purpose.
func (s *runSetup) insidePolicy() sandbox.Policy {
	p := s.policy
	if len(s.granted) > 0 {
		p.Env = append(append([]string{}, p.Env...), audit.GrantedEnvVar+"="+strings.Join(s.granted, ","))
	}
	return p
}

func pick(flagSet bool, flag bool, cfg *bool) bool {
	if flagSet || cfg == nil {
		return flag
	}
	return *cfg
}

func pickSlice[T any](flagSet bool, flag []T, cfg []T) []T {
	if flagSet {
		return flag
	}
	return cfg
}

// expandPaths turns ~ and relative paths into absolute ones and checks they exist.
func expandPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "~" || strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, err
			}
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("extra path %s: %w", abs, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// portsValue is --publish: repeatable, each value one port or several separated by commas, as
// the publish key takes them (session.ParsePorts).
type portsValue []int

func (p *portsValue) String() string {
	s := make([]string, len(*p))
	for i, n := range *p {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (p *portsValue) Set(v string) error {
	ports, err := session.ParsePorts(v)
	if err != nil {
		return err
	}
	*p = append(*p, ports...)
	return nil
}

func (p *portsValue) Type() string { return "PORT" }

// openSession takes the project's writer lock for command and opens the session a run works in:
// a new one with --new, else the open one (created when there is none). The caller releases the
// lock; on error it is already released, and a busy project's error is returned as it is.
// It also says whether the session was created.
func (f *runFlags) openSession(setup *runSetup, command string, stderr io.Writer) (*session.ProjectLock, *session.Session, bool, error) {
	st, err := setup.sessions()
	if err != nil {
		return nil, nil, false, err
	}
	o := runner.OpenOptions{Project: setup.project, Command: command, Wait: f.wait,
		New: f.newSession, Protected: setup.cfg.Protected}
	switch {
	case f.session != "" && st.HasID(f.session):
		if f.newSession {
			return nil, nil, false, usageError{msg: "--new opens a session: give it a name, not the ID of one that exists"}
		}
		o.ID = f.session
	case f.session != "":
		if err := session.CheckName(f.session); err != nil {
			return nil, nil, false, usageError{msg: "--session: " + err.Error()}
		}
		o.Name = f.session
	}
	op, err := runner.Open(st, o)
	if op != nil && op.Recovered != "" {
		sayErr(stderr, "shadow:", op.Recovered)
	}
	if err != nil {
		return nil, nil, false, err
	}
	return op.Lock, op.Session, op.Created, nil
}

// sessions opens the session store, creating the state directory: only once the run is allowed
// to start, so that a refused run leaves nothing behind.
func (s *runSetup) sessions() (*session.Store, error) {
	if s.store == nil {
		st, err := session.Open(s.root)
		if err != nil {
			return nil, err
		}
		s.store = st
	}
	return s.store, nil
}

// cleanHome is the home directory the jail hides ($HOME, cleaned), "" when unset.
func cleanHome() string {
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Clean(h)
	}
	return ""
}

// checkStateDir refuses a project that holds shadow's state directory: the staging layer would
// be inside the project it stages.
func checkStateDir(root, project string) error {
	rel, err := filepath.Rel(project, root)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	return withCode(exitNoJail, &sandbox.JailError{Step: "project", Err: fmt.Errorf(
		"%s holds shadow's state directory %s, where the project's changes are staged: run shadow in the project's own directory, or set XDG_STATE_HOME elsewhere", project, root)})
}

// maskCacheDir is where the list of what others may not read under /usr is kept between runs:
// a cache of the host's, shared by every project and state directory ($XDG_CACHE_HOME/shadow).
// Empty (kept in memory for the process) when there is no cache directory.
func maskCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "shadow")
}
