package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// ProjectConfigName is the per-project configuration file. It is a protected path: an agent that
// writes it never gets it applied silently.
const ProjectConfigName = ".shadow.toml"

// Config is the policy a run starts from: every flag of `shadow run` has a key here. Pointer and
// nil-slice fields mean "not set", so layers can be merged without confusing unset with false.
type Config struct {
	AllowNetwork  *bool     `toml:"allow-network"`
	AllowDomain   []string  `toml:"allow-domain"`
	Publish       []int     `toml:"publish"`
	Timeout       *Duration `toml:"timeout"`
	Env           []string  `toml:"env"`
	RO            []string  `toml:"ro"`
	RW            []string  `toml:"rw"`
	NoCache       *bool     `toml:"no-cache"`
	Preset        *string   `toml:"preset"`
	Trust         *string   `toml:"trust"`
	GitWritable   *bool     `toml:"git-writable"`
	MaxUpperBytes *int64    `toml:"max-upper-bytes"`
	// Protected adds paths (gitignore-style patterns) to the protected list of SPEC §4.
	Protected []string `toml:"protected"`
	// Keys rebinds review and app keys: action name -> list of keys.
	Keys map[string][]string `toml:"keys"`
	// PrefixKey is the app's command prefix (default ctrl+]).
	PrefixKey *string `toml:"prefix-key"`
}

// Duration is a time.Duration that reads from TOML as a string such as "10m".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", b)
	}
	d.Duration = v
	return nil
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
// silently weakens or ignores a setting.
func ParseConfig(name string, data []byte) (Config, error) {
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		keys := make([]string, len(un))
		for i, k := range un {
			keys[i] = k.String()
		}
		return Config{}, fmt.Errorf("%s: unknown key %s", name, strings.Join(keys, ", "))
	}
	if c.Trust != nil && trustRank(*c.Trust) < 0 {
		return Config{}, fmt.Errorf("%s: trust must be one of %s, not %q", name, strings.Join(TrustLevels, ", "), *c.Trust)
	}
	return c, nil
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
		var kept []string
		for _, d := range project.AllowDomain {
			if slices.Contains(user.AllowDomain, d) {
				kept = append(kept, d)
			} else {
				drop("allow-domain", fmt.Sprintf("%s is not in your own allow-list", d))
			}
		}
		out.AllowDomain = kept
		if kept == nil {
			out.AllowDomain = []string{}
		}
	}
	for key, v := range map[string][]string{"rw": project.RW, "ro": project.RO, "env": project.Env} {
		if len(v) > 0 {
			drop(key, "it would bring host paths or variables into the jail")
		}
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
	out.Protected = append(slices.Clone(user.Protected), project.Protected...)
	if project.Keys != nil {
		out.Keys = mergeKeys(user.Keys, project.Keys)
	}
	if project.PrefixKey != nil {
		out.PrefixKey = project.PrefixKey
	}
	sort.Strings(warn)
	return out, warn
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
	out.Protected = append(slices.Clone(user.Protected), project.Protected...)
	if project.Keys != nil {
		out.Keys = mergeKeys(user.Keys, project.Keys)
	}
	if project.PrefixKey != nil {
		out.PrefixKey = project.PrefixKey
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

func contentHash(data []byte) string { return "sha256:" + sha256Hex(data) }

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
