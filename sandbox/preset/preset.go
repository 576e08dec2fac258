// Package preset holds the agent presets of SPEC §8: for each coding agent
// shadow knows (aider, claude, codex, gemini, opencode), the host variables
// it may receive, the domains it needs, the environment that makes it behave
// in a jail, and where it keeps its state. A preset's state lives in a
// per-project directory kept by shadow, seeded once from the host's config
// and never written back.
package preset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/shadow-sandbox/shadow/assets"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// Preset is one agent preset, as read from assets/agents/NAME.toml.
type Preset struct {
	// Name is how --preset names it.
	Name string `toml:"name"`
	// Description is one line for humans.
	Description string `toml:"description"`
	// Commands are the command basenames that choose this preset.
	Commands []string `toml:"commands"`
	// PassEnv are the host variables passed in when set (API keys, base URLs).
	PassEnv []string `toml:"pass_env"`
	// Secrets are the API keys the agent gets as secrets: a placeholder in
	// the jail, the real value put into requests to their hosts only.
	Secrets []Secret `toml:"secret"`
	// BaseURLEnv are variables among PassEnv holding a URL: its host:port
	// joins the allow-list when the variable is set on the host.
	BaseURLEnv []string `toml:"base_url_env"`
	// Domains are allow-list entries (HOST[:PORT], *.DOMAIN) the agent needs.
	Domains []string `toml:"domains"`
	// Args are inserted right after the command name.
	Args []string `toml:"args"`
	// Env is set in the jail; a leading "~/" in a value is the jail's $HOME.
	Env map[string]string `toml:"env"`
	// State are the places under $HOME where the agent keeps its state.
	State []State `toml:"state"`
	// Config are host files or directories copied into the state once.
	Config []Seed `toml:"config"`
	// Cache are places "~/..." inside a state directory where the agent
	// fills a cache for itself (packages it installs for its own use): they
	// read through the host's copy, shared by every project, when there is
	// one (SPEC §3's cache overlays); writes stay in the per-project state.
	Cache []string `toml:"cache"`
	// Files are written into the state before every run: the agent's own
	// switches that make it behave in the jail and that no variable sets.
	Files []File `toml:"file"`
}

// File is a file shadow writes at Path ("~/...", inside a state directory)
// before every run, replacing what the agent left there; with Merge, Content
// is a JSON object merged into the JSON file there (the agent's own settings,
// seeded from the host's, keep every other key).
type File struct {
	Path    string `toml:"path"`
	Content string `toml:"content"`
	Merge   bool   `toml:"merge"`
}

// State is one place under $HOME, "~/...", where the agent keeps state; it
// is bound read-write from the per-project state directory.
type State struct {
	Path string `toml:"path"`
	// File marks a single file; it is bound only once it exists in the
	// per-project directory (seeded from the host).
	File bool `toml:"file"`
}

// Seed copies host path From ("~/...") into the state at jail path To
// (default: From), once, when the per-project state is created.
type Seed struct {
	From string `toml:"from"`
	To   string `toml:"to"`
}

// Target is where the seed lands in the jail's $HOME.
func (s Seed) Target() string {
	if s.To == "" {
		return s.From
	}
	return s.To
}

// reservedEnv are variables a preset may neither set nor pass: shadow owns
// them (the jail's identity and its proxy).
var reservedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
	"NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy", "NODE_USE_ENV_PROXY", "LD_PRELOAD",
	"LD_LIBRARY_PATH", "NODE_OPTIONS", "SSH_AUTH_SOCK"}

// secretDirs are host places no preset may read, whatever its file says.
var secretDirs = []string{"~/.ssh", "~/.aws", "~/.kube", "~/.gnupg", "~/.docker", "~/.netrc", "~/.git-credentials",
	"~/.config/gh", "~/.npmrc", "~/.pypirc", "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.password-store",
	"~/.local/share/keyrings", "~/.config/gcloud", "~/.azure"}

// Parse reads and checks one preset file; name is used in errors.
func Parse(name string, data []byte) (*Preset, error) {
	var p Preset
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&p)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("preset %s: unknown keys %s", name, strings.Join(keys, ", "))
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("preset %s: %w", name, err)
	}
	return &p, nil
}

func (p *Preset) check() error {
	if !validName(p.Name) {
		return fmt.Errorf("name %q: use lower-case letters, digits and dashes", p.Name)
	}
	if len(p.Commands) == 0 {
		return errors.New("no commands")
	}
	for _, c := range p.Commands {
		if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "/\x00") {
			return fmt.Errorf("command %q: give a basename", c)
		}
	}
	for _, v := range p.PassEnv {
		if err := checkEnvName("pass_env", v); err != nil {
			return err
		}
	}
	for _, v := range p.BaseURLEnv {
		if !slices.Contains(p.PassEnv, v) {
			return fmt.Errorf("base_url_env %s: not in pass_env", v)
		}
	}
	if err := p.checkSecrets(); err != nil {
		return err
	}
	for _, d := range p.Domains {
		if _, err := proxy.ParseRule(d); err != nil {
			return fmt.Errorf("domains: %w", err)
		}
	}
	for _, a := range p.Args {
		if strings.ContainsRune(a, 0) {
			return errors.New("args: NUL byte")
		}
	}
	for k, v := range p.Env {
		if err := checkEnvName("env", k); err != nil {
			return err
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %s: NUL byte", k)
		}
	}
	if len(p.State) == 0 {
		return errors.New("no state: every preset names where its agent keeps state")
	}
	for i, s := range p.State {
		if err := checkHomePath("state", s.Path); err != nil {
			return err
		}
		for _, o := range p.State[:i] {
			if within(s.Path, o.Path) || within(o.Path, s.Path) {
				return fmt.Errorf("state %s and %s overlap", o.Path, s.Path)
			}
		}
	}
	for _, c := range p.Config {
		if err := checkHomePath("config from", c.From); err != nil {
			return err
		}
		if err := checkHomePath("config to", c.Target()); err != nil {
			return err
		}
		if p.stateFor(c.Target()) == nil {
			return fmt.Errorf("config %s: lands at %s, outside every state path", c.From, c.Target())
		}
	}
	for _, c := range p.Cache {
		if err := checkHomePath("cache", c); err != nil {
			return err
		}
		if st := p.stateFor(c); st == nil || st.File {
			return fmt.Errorf("cache %s: outside every state directory", c)
		}
	}
	for _, f := range p.Files {
		if err := checkHomePath("file", f.Path); err != nil {
			return err
		}
		if st := p.stateFor(f.Path); st == nil || st.File {
			return fmt.Errorf("file %s: outside every state directory", f.Path)
		}
		if strings.ContainsRune(f.Content, 0) {
			return fmt.Errorf("file %s: NUL byte", f.Path)
		}
		var obj map[string]any
		if f.Merge && json.Unmarshal([]byte(f.Content), &obj) != nil {
			return fmt.Errorf("file %s: merge needs a JSON object", f.Path)
		}
	}
	return nil
}

// stateFor returns the state entry holding jail path t ("~/..."), or nil.
func (p *Preset) stateFor(t string) *State {
	for i, s := range p.State {
		if s.File && t == s.Path || !s.File && within(t, s.Path) && t != s.Path {
			return &p.State[i]
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return s[0] != '-'
}

func checkEnvName(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s: empty variable name", field)
	}
	for i, c := range v {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%s %q: not a variable name", field, v)
		}
	}
	if slices.Contains(reservedEnv, v) {
		return fmt.Errorf("%s %s: shadow sets this variable itself", field, v)
	}
	return nil
}

// checkHomePath accepts "~/a/b": clean, below $HOME, not a secret place.
func checkHomePath(field, p string) error {
	rest, ok := strings.CutPrefix(p, "~/")
	if !ok || rest == "" {
		return fmt.Errorf("%s %q: give a path under ~/", field, p)
	}
	if path.Clean(rest) != rest || rest == "." || rest == ".." || strings.HasPrefix(rest, "../") || strings.ContainsRune(rest, 0) {
		return fmt.Errorf("%s %q: not a clean path under ~/", field, p)
	}
	for _, s := range secretDirs {
		if within(p, s) || within(s, p) {
			return fmt.Errorf("%s %s: shadow never shows %s to an agent", field, p, s)
		}
	}
	return nil
}

// within reports whether p is dir or below it ("~/..." paths).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// All returns the embedded presets, sorted by name.
func All() ([]*Preset, error) {
	return embedded(nil)
}

// embedded returns the embedded presets whose file keep (nil: any) keeps, sorted by name.
func embedded(keep func(file []byte) bool) ([]*Preset, error) {
	entries, err := fs.ReadDir(assets.Agents, "agents")
	if err != nil {
		return nil, fmt.Errorf("read embedded presets: %w", err)
	}
	var out []*Preset
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		b, err := fs.ReadFile(assets.Agents, "agents/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded preset %s: %w", e.Name(), err)
		}
		if keep != nil && !keep(b) {
			continue
		}
		p, err := Parse(e.Name(), b)
		if err != nil {
			return nil, err
		}
		if p.Name+".toml" != e.Name() {
			return nil, fmt.Errorf("preset %s: name %q does not match the file name", e.Name(), p.Name)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Names lists the embedded presets' names.
func Names() []string {
	all, _ := All()
	return names(all)
}

func names(all []*Preset) []string {
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.Name
	}
	return out
}

// Lookup returns the embedded preset called name.
func Lookup(name string) (*Preset, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no preset %q (known: %s, or none)", name, strings.Join(names(all), ", "))
}

// None is the --preset value that turns presets off.
const None = "none"

// Select chooses the preset of a run: the one named (None: no preset), else
// the one whose commands include the basename of argv0. It returns nil and
// no error when nothing matches.
func Select(name, argv0 string) (*Preset, error) {
	switch name {
	case None:
		return nil, nil
	case "":
	default:
		return Lookup(name)
	}
	base := path.Base(argv0)
	if argv0 == "" || base == "/" || base == "." {
		return nil, nil
	}
	// Only a preset whose file may list the command is parsed (parsing them all was the
	// largest cost of a run's flags, for a command of none).
	all, err := embedded(func(b []byte) bool { return mayList(b, base) })
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if slices.Contains(p.Commands, base) {
			return p, nil
		}
	}
	return nil, nil
}

// mayList reports whether the preset file b may list command in its commands. It is false only
// when b has no multi-line string, and one line alone starts with the key commands: a line
// `commands = [...]` before any table, whose array, on that line and without escapes, does not
// hold command quoted. Any other form is parsed to be told.
func mayList(b []byte, command string) bool {
	if bytes.Contains(b, []byte(`"""`)) || bytes.Contains(b, []byte("'''")) {
		return true
	}
	var found []byte
	table := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimLeft(line, " \t")
		key := bytes.TrimLeft(line, `"'`)
		switch {
		case bytes.HasPrefix(key, []byte("commands")):
			if found != nil || table || len(key) != len(line) {
				return true // twice, in a table, or quoted
			}
			found = line[len("commands"):]
		case bytes.HasPrefix(line, []byte("[")):
			table = true
		}
	}
	if found == nil {
		return true
	}
	rest, ok := bytes.CutPrefix(bytes.TrimLeft(found, " \t"), []byte("="))
	array := bytes.TrimSpace(rest)
	if !ok || !bytes.HasPrefix(array, []byte("[")) || !bytes.HasSuffix(array, []byte("]")) || bytes.IndexByte(array, '\\') >= 0 {
		return true
	}
	return bytes.Contains(array, []byte(`"`+command+`"`)) || bytes.Contains(array, []byte("'"+command+"'"))
}
