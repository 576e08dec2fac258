// Package config reads the configuration a run starts from: the user's file and the project's
// (which counts only once the user trusts it, and may only narrow), with a key for every flag of
// `shadow run`, checked with errors that name the file, the line and the key.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// ProjectConfigName is the per-project configuration file. It is a protected path: an agent that
// writes it never gets it applied silently.
const ProjectConfigName = ".shadow.toml"

// Config is the policy a run starts from: every flag of `shadow run` has a key here, which takes
// what the flag takes (a size such as "2G", a duration such as "45m", one value or a list of them
// where the flag is repeatable). Pointer and nil-slice fields mean "not set", so layers can be
// merged without confusing unset with false.
type Config struct {
	AllowNetwork  *bool     `toml:"allow-network"`
	AllowDomain   List      `toml:"allow-domain"`
	Publish       Ports     `toml:"publish"`
	Timeout       *Duration `toml:"timeout"`
	Env           List      `toml:"env"`
	Secret        List      `toml:"secret"` // NAME[=HOST,...]: the jail holds a placeholder (SPEC §14)
	RO            List      `toml:"ro"`
	RW            List      `toml:"rw"`
	NoCache       *bool     `toml:"no-cache"`
	Preset        *string   `toml:"preset"`
	Trust         *string   `toml:"trust"`
	GitWritable   *bool     `toml:"git-writable"`
	MaxUpperBytes *Size     `toml:"max-upper-bytes"`
	// CheckpointBudget is the disk the session's checkpoints may use (default: 4 times
	// max-upper-bytes); past it quiet checkpoints stop.
	CheckpointBudget *Size `toml:"checkpoint-budget"`
	// Protected adds paths (gitignore-style patterns) to the protected list of SPEC §4; a pattern
	// starting with ! takes paths off the list and out of the dot-file rule.
	Protected List `toml:"protected"`
	// Unprotected takes paths (gitignore-style patterns) off the protected list and out of the
	// dot-file rule, as a ! pattern of Protected does. Only the user's config can: a project's
	// .shadow.toml narrows only. LoadConfig folds it into Protected.
	Unprotected List `toml:"unprotected"`
	// Keys rebinds review and app keys: action name -> list of keys.
	Keys map[string][]string `toml:"keys"`
	// PrefixKey is the app's command prefix (default ctrl+]).
	PrefixKey *string `toml:"prefix-key"`
}

// Duration is a time.Duration that reads from TOML as the --timeout flag takes it: a string such
// as "10m" or "2h30m".
type Duration struct{ time.Duration }

// UnmarshalTOML reads a duration string.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a duration such as \"45m\" or \"2h30m\", not %s", tomlKind(v))
	}
	return d.UnmarshalText([]byte(s))
}

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration: use a number with a unit, such as 45m or 2h30m", b)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", b)
	}
	d.Duration = v
	return nil
}

// Size is a byte count that reads from TOML as the --max-upper-bytes flag takes it: a number of
// bytes, or a string with a K, M, G or T suffix such as "2G".
type Size int64

// UnmarshalTOML reads a number of bytes or a size string (ParseSize).
func (s *Size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("%d is negative", x)
		}
		*s = Size(x)
		return nil
	case string:
		n, err := ParseSize(x)
		if err != nil {
			return err
		}
		*s = Size(n)
		return nil
	}
	return fmt.Errorf("want a size such as \"2G\" or a number of bytes, not %s", tomlKind(v))
}

// ParseSize reads a byte count with an optional K, M, G or T suffix (powers of 1024; "2G",
// "2GB" and "2GiB" alike), as --max-upper-bytes and the max-upper-bytes key take it.
func ParseSize(s string) (int64, error) {
	bad := fmt.Errorf("%q is not a size: use a number of bytes, or one with K, M, G or T, such as 500M or 2G", s)
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if t != "" {
		if i := strings.IndexByte("KMGT", t[len(t)-1]); i >= 0 {
			shift = 10 * (i + 1)
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, bad
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << shift, nil
}

// List is a list of strings that reads from TOML as a list, or as one string for a list of one,
// as a repeatable flag is given once or more.
type List []string

// UnmarshalTOML reads a string or a list of strings.
func (l *List) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*l = List{x}
		return nil
	case []any:
		out := make(List, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want a list of strings, but it holds %s", tomlKind(e))
			}
			out = append(out, s)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("want a string or a list of strings, not %s", tomlKind(v))
}

// Ports is a list of TCP ports that reads from TOML as --publish takes them: a number, a string
// such as "8080" or "8080,3000", or a list of those.
type Ports []int

// UnmarshalTOML reads a port, a comma-separated string of ports, or a list of them.
func (p *Ports) UnmarshalTOML(v any) error {
	var out Ports
	var add func(v any) error
	add = func(v any) error {
		switch x := v.(type) {
		case int64:
			if x < 1 || x > 65535 {
				return fmt.Errorf("%d is not a TCP port (1 to 65535)", x)
			}
			out = append(out, int(x))
		case string:
			ports, err := ParsePorts(x)
			if err != nil {
				return err
			}
			out = append(out, ports...)
		case []any:
			for _, e := range x {
				if _, nested := e.([]any); nested {
					return errors.New("want a list of ports, but it holds a list")
				}
				if err := add(e); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("want a port or a list of ports, not %s", tomlKind(v))
		}
		return nil
	}
	if err := add(v); err != nil {
		return err
	}
	if out == nil {
		out = Ports{}
	}
	*p = out
	return nil
}

// ParsePorts reads one TCP port or several separated by commas ("8080", "8080,3000"), as
// --publish takes them.
func ParsePorts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q is not a TCP port (1 to 65535)", strings.TrimSpace(f))
		}
		out = append(out, n)
	}
	return out, nil
}

// tomlKind names the kind of a decoded TOML value for a message: "a string", "a number", ...
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "true or false"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date"
	}
	return fmt.Sprintf("a %T", v)
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// TrustLevels orders the trust profiles from most permissive to strictest.
var TrustLevels = []string{"repo", "dependency", "untrusted"}

func trustRank(p string) int { return slices.Index(TrustLevels, p) }

// UserConfigPath is $XDG_CONFIG_HOME/shadow/config.toml (default ~/.config/shadow/config.toml).
func UserConfigPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the config directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "shadow", "config.toml"), nil
}

// ParseConfig decodes one configuration file's content. Unknown keys are an error, so a typo never
// silently weakens or ignores a setting. An error is one line that names the file, the line and
// the key: "FILE:LINE: KEY: what is wrong".
func ParseConfig(name string, data []byte) (Config, error) {
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return Config{}, configError(name, data, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		k := un[0].String()
		return Config{}, fmt.Errorf("%s:%d: unknown key %q (the keys are the flags of `shadow run --help`, protected, unprotected, keys and prefix-key)",
			name, keyLine(data, un[0]), k)
	}
	if c.Trust != nil && trustRank(*c.Trust) < 0 {
		return Config{}, fmt.Errorf("%s:%d: trust: use one of %s, not %q", name, keyLine(data, toml.Key{"trust"}), strings.Join(TrustLevels, ", "), *c.Trust)
	}
	return c, nil
}

// badType is how the TOML decoder words a value of the wrong type for a plain field.
var badType = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): incompatible types: TOML value has type (\S+); destination has type (\S+)$`)

// configError turns a decoder error into one line: "FILE:LINE: KEY: message".
func configError(name string, data []byte, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" && !strings.Contains(msg, pe.LastKey) {
			msg = pe.LastKey + ": " + msg
		}
		return fmt.Errorf("%s:%d: %s", name, pe.Position.Line, msg)
	}
	if m := badType.FindStringSubmatch(err.Error()); m != nil {
		want := map[string]string{"bool": "true or false", "boolean": "true or false", "string": "a string", "integer": "a number"}[m[4]]
		if want == "" {
			want = "a " + m[4]
		}
		return fmt.Errorf("%s:%s: %s: want %s, not a %s", name, m[1], m[2], want, strings.ToLower(m[3]))
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "toml: "))
}

// keyLine is the line of data where key is set (or its table starts), or 0 when it is not found.
func keyLine(data []byte, key toml.Key) int {
	if len(key) == 0 {
		return 0
	}
	table := ""
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			table = strings.Trim(l, "[] \t")
			if table == key.String() {
				return i + 1
			}
			continue
		}
		k, _, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		full := k
		if table != "" {
			full = table + "." + k
		}
		if full == key.String() || (len(key) > 1 && table == "" && k == key[0]) {
			return i + 1
		}
	}
	return 0
}

// NarrowProject merges a project's config onto the user's so that it can only narrow the policy.
// Every key that would widen it is dropped, and a warning naming the key is returned for each.
// Narrowing keys (more protected paths, fewer domains, a stricter trust profile, a shorter timeout,
// a smaller staging limit, no network, no caches, key bindings) take effect.
func NarrowProject(user, project Config) (Config, []string) {
	out := user
	var warn []string
	drop := func(key, why string) {
		warn = append(warn, fmt.Sprintf("%s: ignored %q: %s (run `shadow trust-config` to allow this file)", ProjectConfigName, key, why))
	}
	if project.AllowNetwork != nil {
		if *project.AllowNetwork && (user.AllowNetwork == nil || !*user.AllowNetwork) {
			drop("allow-network", "it would open the network")
		} else {
			out.AllowNetwork = project.AllowNetwork
		}
	}
	if project.AllowDomain != nil {
		out.AllowDomain = keepOwn(project.AllowDomain, user.AllowDomain, func(d string) {
			drop("allow-domain", fmt.Sprintf("%s is not in your own allow-list", d))
		})
	}
	for key, v := range map[string][]string{"rw": project.RW, "ro": project.RO, "env": project.Env} {
		if len(v) > 0 {
			drop(key, "it would bring host paths or variables into the jail")
		}
	}
	if project.Secret != nil {
		// A secret sends a host variable's value out: only those of the user's own stay.
		out.Secret = keepOwn(project.Secret, user.Secret, func(s string) {
			drop("secret", fmt.Sprintf("%s is not among your own secrets: it would send a host variable's value to the network", s))
		})
	}
	if len(project.Publish) > 0 {
		drop("publish", "it would expose a port on the host")
	}
	if project.Trust != nil {
		cur := "dependency"
		if user.Trust != nil {
			cur = *user.Trust
		}
		if trustRank(*project.Trust) < trustRank(cur) {
			drop("trust", fmt.Sprintf("%s is weaker than %s", *project.Trust, cur))
		} else {
			out.Trust = project.Trust
		}
	}
	if project.Timeout != nil {
		if user.Timeout == nil || project.Timeout.Duration <= user.Timeout.Duration {
			out.Timeout = project.Timeout
		} else {
			drop("timeout", "it is longer than your own")
		}
	}
	if project.MaxUpperBytes != nil {
		if user.MaxUpperBytes == nil || *project.MaxUpperBytes <= *user.MaxUpperBytes {
			out.MaxUpperBytes = project.MaxUpperBytes
		} else {
			drop("max-upper-bytes", "it is larger than your own")
		}
	}
	if project.CheckpointBudget != nil {
		if user.CheckpointBudget == nil || *project.CheckpointBudget <= *user.CheckpointBudget {
			out.CheckpointBudget = project.CheckpointBudget
		} else {
			drop("checkpoint-budget", "it is larger than your own")
		}
	}
	if project.NoCache != nil {
		if *project.NoCache {
			out.NoCache = project.NoCache
		} else if user.NoCache != nil && *user.NoCache {
			drop("no-cache", "it would show the package caches")
		}
	}
	if project.GitWritable != nil {
		if *project.GitWritable && (user.GitWritable == nil || !*user.GitWritable) {
			drop("git-writable", "it would let the agent write .git")
		} else {
			out.GitWritable = project.GitWritable
		}
	}
	if project.Preset != nil {
		// A preset grants variables and domains; choosing one is the user's call.
		drop("preset", "a preset grants credentials and domains")
	}
	out.Protected = withUnprotected(user)
	for _, p := range project.Protected {
		if strings.HasPrefix(strings.TrimSpace(p), "!") {
			drop("protected", fmt.Sprintf("%q would take paths off the protected list", p))
		} else {
			out.Protected = append(out.Protected, p)
		}
	}
	out.Unprotected = nil
	if len(project.Unprotected) > 0 {
		drop("unprotected", "it would take paths off the protected list")
	}
	if project.Keys != nil {
		out.Keys = mergeKeys(user.Keys, project.Keys)
	}
	if project.PrefixKey != nil {
		out.PrefixKey = project.PrefixKey
	}
	sort.Strings(warn)
	return out, warn
}

// keepOwn is the items of the project's list that the user's own list has (never nil: a list set
// to nothing narrows to nothing); each other item is reported to dropped.
func keepOwn(project, user []string, dropped func(item string)) []string {
	kept := []string{}
	for _, v := range project {
		if slices.Contains(user, v) {
			kept = append(kept, v)
		} else {
			dropped(v)
		}
	}
	return kept
}

// Overlay merges a trusted project config onto the user's: every key set in project wins.
func Overlay(user, project Config) Config {
	out := user
	if project.AllowNetwork != nil {
		out.AllowNetwork = project.AllowNetwork
	}
	if project.AllowDomain != nil {
		out.AllowDomain = project.AllowDomain
	}
	if project.Publish != nil {
		out.Publish = project.Publish
	}
	if project.Timeout != nil {
		out.Timeout = project.Timeout
	}
	if project.Env != nil {
		out.Env = project.Env
	}
	if project.Secret != nil {
		out.Secret = project.Secret
	}
	if project.RO != nil {
		out.RO = project.RO
	}
	if project.RW != nil {
		out.RW = project.RW
	}
	if project.NoCache != nil {
		out.NoCache = project.NoCache
	}
	if project.Preset != nil {
		out.Preset = project.Preset
	}
	if project.Trust != nil {
		out.Trust = project.Trust
	}
	if project.GitWritable != nil {
		out.GitWritable = project.GitWritable
	}
	if project.MaxUpperBytes != nil {
		out.MaxUpperBytes = project.MaxUpperBytes
	}
	if project.CheckpointBudget != nil {
		out.CheckpointBudget = project.CheckpointBudget
	}
	out.Protected = append(withUnprotected(user), withUnprotected(project)...)
	out.Unprotected = nil
	if project.Keys != nil {
		out.Keys = mergeKeys(user.Keys, project.Keys)
	}
	if project.PrefixKey != nil {
		out.PrefixKey = project.PrefixKey
	}
	return out
}

// withUnprotected is c's protected patterns with its unprotected ones after them, negated.
func withUnprotected(c Config) []string {
	out := slices.Clone(c.Protected)
	for _, p := range c.Unprotected {
		out = append(out, "!"+strings.TrimPrefix(strings.TrimSpace(p), "!"))
	}
	return out
}

func mergeKeys(a, b map[string][]string) map[string][]string {
	out := make(map[string][]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// LoadedConfig is the effective configuration for one project and where it came from.
type LoadedConfig struct {
	Config
	// Warnings lists project keys that were ignored because they would widen the policy.
	Warnings []string
	// ProjectTrusted reports that the project file's exact content was trusted with trust-config.
	ProjectTrusted bool
}

// LoadConfig reads the user's config and the project's .shadow.toml and merges them: a project
// file narrows only, unless its exact content hash is recorded as trusted under stateRoot.
func LoadConfig(userPath, project, stateRoot string) (LoadedConfig, error) {
	var user Config
	if data, err := os.ReadFile(userPath); err == nil {
		if user, err = ParseConfig(userPath, data); err != nil {
			return LoadedConfig{}, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return LoadedConfig{}, fmt.Errorf("read %s: %w", userPath, err)
	}
	ppath := filepath.Join(project, ProjectConfigName)
	data, err := os.ReadFile(ppath)
	if errors.Is(err, os.ErrNotExist) {
		user.Protected, user.Unprotected = withUnprotected(user), nil
		return LoadedConfig{Config: user}, nil
	}
	if err != nil {
		return LoadedConfig{}, fmt.Errorf("read %s: %w", ppath, err)
	}
	proj, err := ParseConfig(ppath, data)
	if err != nil {
		return LoadedConfig{}, err
	}
	trusted, err := IsConfigTrusted(stateRoot, ppath, data)
	if err != nil {
		return LoadedConfig{}, err
	}
	if trusted {
		return LoadedConfig{Config: Overlay(user, proj), ProjectTrusted: true}, nil
	}
	merged, warn := NarrowProject(user, proj)
	return LoadedConfig{Config: merged, Warnings: warn}, nil
}

func trustFile(stateRoot string) string { return filepath.Join(stateRoot, "trusted-configs.json") }

func contentHash(data []byte) string { return "sha256:" + projectfs.Sha256Hex(data) }

func readTrusted(stateRoot string) (map[string]string, error) {
	m := map[string]string{}
	data, err := os.ReadFile(trustFile(stateRoot))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read trusted configs: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: not valid JSON: %w", trustFile(stateRoot), err)
	}
	return m, nil
}

// IsConfigTrusted reports whether this exact content of the config file at path was trusted.
func IsConfigTrusted(stateRoot, path string, data []byte) (bool, error) {
	m, err := readTrusted(stateRoot)
	if err != nil {
		return false, err
	}
	return m[path] == contentHash(data), nil
}

// TrustConfig records the current content hash of the config file at path as trusted, like
// `direnv allow`: any later edit of the file makes it untrusted again. It returns the hash.
func TrustConfig(stateRoot, path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("nothing to trust: %s does not exist (write the project's settings there first)", path)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := ParseConfig(path, data); err != nil {
		return "", err
	}
	m, err := readTrusted(stateRoot)
	if err != nil {
		return "", err
	}
	h := contentHash(data)
	m[path] = h
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(stateRoot, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", stateRoot, err)
	}
	tmp := trustFile(stateRoot) + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return "", fmt.Errorf("write trusted configs: %w", err)
	}
	if err := os.Rename(tmp, trustFile(stateRoot)); err != nil {
		return "", fmt.Errorf("write trusted configs: %w", err)
	}
	return h, nil
}
