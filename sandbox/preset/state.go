package preset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// Options say whose agent state a preset prepares.
type Options struct {
	// Home is the invoker's home: host config is read there, and the jail's
	// $HOME has the same path.
	Home string
	// StateRoot is shadow's state directory ($XDG_STATE_HOME/shadow); the
	// preset's per-project state goes under StateRoot/agents.
	StateRoot string
	// Project is the project's real path; each project has its own state.
	Project string
	// HostEnv is the host environment (os.Environ form), for the base URLs.
	HostEnv []string
}

// Bind is one per-project state path bound read-write into the jail (Src
// under the per-project state directory, Dst under $HOME): writes go to Src
// directly, are not staged and never reach the host's own config.
type Bind = sandbox.StateBind

// Grant is everything a preset gives one run, resolved for a project.
type Grant struct {
	Preset string
	// PassEnv are host variable names to pass in (when set).
	PassEnv []string
	// Secrets are the preset's secrets set on the host, with their values.
	Secrets []proxy.Secret
	// Env are NAME=value pairs set in the jail.
	Env []string
	// Domains are allow-list entries: the preset's and its base URLs' hosts.
	Domains []string
	// Args are inserted after the command name; see Argv.
	Args []string
	// Binds are the agent's state places.
	Binds []Bind
	// Caches are the caches the agent fills for itself, read through from
	// the host's copy, written to the per-project state.
	Caches []sandbox.AgentCache
	// StateDir is the per-project state directory.
	StateDir string
	// Seeded lists the host paths copied into the state by this call (only
	// the first use of a project seeds).
	Seeded []string
}

// seededMarker records that a state directory was seeded; it is written
// last, so an interrupted seed starts over.
const seededMarker = ".shadow-seeded"

// StateDir is the per-project state directory of preset p:
// StateRoot/agents/NAME/BASENAME-HASH, the hash of the project's path.
func (p *Preset) StateDir(stateRoot, project string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(project)))
	base := filepath.Base(filepath.Clean(project))
	if base == "/" || base == "." {
		base = "root"
	}
	return filepath.Join(stateRoot, "agents", p.Name, base+"-"+hex.EncodeToString(sum[:8]))
}

// Prepare creates the preset's per-project state (seeding it from the host
// config on first use) and returns what the run gets.
func (p *Preset) Prepare(o Options) (*Grant, error) {
	if o.Home == "" || !filepath.IsAbs(o.Home) || filepath.Clean(o.Home) == "/" {
		return nil, fmt.Errorf("preset %s: home %q is not an absolute directory", p.Name, o.Home)
	}
	if o.StateRoot == "" || o.Project == "" {
		return nil, fmt.Errorf("preset %s: state root and project are required", p.Name)
	}
	home := filepath.Clean(o.Home)
	dir := p.StateDir(o.StateRoot, o.Project)
	g := &Grant{Preset: p.Name, PassEnv: slices.Clone(p.PassEnv), Args: slices.Clone(p.Args), StateDir: dir}

	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g.Env = append(g.Env, k+"="+expandHome(p.Env[k], home))
	}

	g.Domains = slices.Clone(p.Domains)
	for _, name := range p.BaseURLEnv {
		v := lookup(o.HostEnv, name)
		if v == "" {
			continue
		}
		hp, err := urlHostPort(v)
		if err != nil {
			return nil, fmt.Errorf("preset %s: $%s: %w", p.Name, name, err)
		}
		if !slices.Contains(g.Domains, hp) {
			g.Domains = append(g.Domains, hp)
		}
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("preset %s: create state %s: %w", p.Name, dir, err)
	}
	secrets, err := p.grantSecrets(o.HostEnv, dir)
	if err != nil {
		return nil, err
	}
	g.Secrets = secrets
	for _, s := range p.State {
		if s.File {
			continue
		}
		if err := os.MkdirAll(stateHost(dir, s.Path), 0o700); err != nil {
			return nil, fmt.Errorf("preset %s: create state %s: %w", p.Name, stateHost(dir, s.Path), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, seededMarker)); errors.Is(err, fs.ErrNotExist) {
		for _, c := range p.Config {
			src := filepath.Join(home, strings.TrimPrefix(c.From, "~/"))
			if err := notSecret(src, home); err != nil {
				return nil, fmt.Errorf("preset %s: seed %s: %w", p.Name, c.From, err)
			}
			copied, err := seed(src, stateHost(dir, c.Target()))
			if err != nil {
				return nil, fmt.Errorf("preset %s: seed %s: %w", p.Name, c.From, err)
			}
			if copied {
				g.Seeded = append(g.Seeded, src)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, seededMarker), []byte("seeded from "+home+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("preset %s: mark state seeded: %w", p.Name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("preset %s: state %s: %w", p.Name, dir, err)
	}

	for _, f := range p.Files {
		if err := writeStateFile(stateHost(dir, f.Path), f); err != nil {
			return nil, fmt.Errorf("preset %s: write %s: %w", p.Name, f.Path, err)
		}
	}
	for _, c := range p.Cache {
		// The mount point in the state; the overlay's layers beside it.
		if err := os.MkdirAll(stateHost(dir, c), 0o700); err != nil {
			return nil, fmt.Errorf("preset %s: create cache %s: %w", p.Name, c, err)
		}
		g.Caches = append(g.Caches, sandbox.AgentCache{
			Dst:   filepath.Join(home, strings.TrimPrefix(c, "~/")),
			Layer: filepath.Join(dir, "cache", strings.ReplaceAll(strings.TrimPrefix(c, "~/"), "/", "_")),
		})
	}
	for _, s := range p.State {
		src := stateHost(dir, s.Path)
		if s.File {
			fi, err := os.Lstat(src)
			if err != nil || !fi.Mode().IsRegular() {
				continue // nothing seeded: nothing to show
			}
		}
		g.Binds = append(g.Binds, Bind{Src: src, Dst: filepath.Join(home, strings.TrimPrefix(s.Path, "~/"))})
	}
	return g, nil
}

// Argv returns argv with the preset's arguments after the command name.
func (g *Grant) Argv(argv []string) []string {
	if g == nil || len(g.Args) == 0 || len(argv) == 0 {
		return argv
	}
	out := append([]string{argv[0]}, g.Args...)
	return append(out, argv[1:]...)
}

// stateHost is where jail path "~/x" of the state lives on the host.
func stateHost(dir, p string) string {
	return filepath.Join(dir, "home", strings.TrimPrefix(p, "~/"))
}

func expandHome(v, home string) string {
	if v == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return v
}

func lookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// notSecret refuses a config path that is, or links into, one of the places
// shadow never shows an agent (~/.ssh, ~/.aws, ...): a symlinked config must
// not carry a credential into the state.
func notSecret(src, home string) error {
	real, err := filepath.EvalSymlinks(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		realHome = home
	}
	for _, s := range secretDirs {
		for _, h := range []string{home, realHome} {
			d := filepath.Join(h, strings.TrimPrefix(s, "~/"))
			if within(real, d) {
				return fmt.Errorf("%s leads to %s, which shadow never shows an agent", src, real)
			}
		}
	}
	return nil
}

// urlHostPort turns a base URL into an allow-list entry HOST:PORT.
func urlHostPort(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is not an http(s) URL", v)
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// seed copies src (a file, or a directory tree of regular files) to dst. A
// missing src is not an error. The top-level src may be a symlink (dotfile
// managers); inside a directory, symlinks and special files are skipped, so
// nothing outside the named config is copied.
func seed(src, dst string) (bool, error) {
	fi, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return false, err
	}
	switch {
	case fi.Mode().IsRegular():
		return true, copyFile(src, dst, fi.Mode().Perm())
	case fi.IsDir():
		root, err := filepath.EvalSymlinks(src)
		if err != nil {
			return false, err
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			target := filepath.Join(dst, rel)
			switch {
			case d.IsDir():
				return os.MkdirAll(target, 0o700)
			case d.Type().IsRegular():
				info, err := d.Info()
				if err != nil {
					return err
				}
				return copyFile(p, target, info.Mode().Perm())
			}
			return nil
		})
		return err == nil, err
	}
	return false, nil
}

// copyFile copies a regular file, keeping the owner's permission bits only.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL, perm&0o700|0o600)
	if errors.Is(err, fs.ErrExist) {
		// Already there (a seed listed twice, or a file inside a seeded
		// directory): the first copy wins.
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

// writeStateFile writes f at dst, or merges its JSON object into the JSON
// object at dst. The file is replaced, not written through: the agent may
// have left a symlink there. A file that is not a JSON object (JSON with
// comments) is kept beside it as dst.bak and replaced by f's object.
func writeStateFile(dst string, f File) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	content := []byte(f.Content)
	if f.Merge {
		var add map[string]any
		if err := json.Unmarshal(content, &add); err != nil {
			return err
		}
		have := map[string]any{}
		if b, err := os.ReadFile(dst); err == nil && len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &have); err != nil {
				have = map[string]any{}
				if err := os.WriteFile(dst+".bak", b, 0o600); err != nil {
					return err
				}
			}
		}
		b, err := json.MarshalIndent(mergeJSON(have, add), "", "  ")
		if err != nil {
			return err
		}
		content = append(b, '\n')
	}
	tmp := dst + ".shadow-tmp"
	os.Remove(tmp)
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// mergeJSON sets every key of add in have, merging objects key by key.
func mergeJSON(have, add map[string]any) map[string]any {
	for k, v := range add {
		if sub, ok := v.(map[string]any); ok {
			if old, ok := have[k].(map[string]any); ok {
				have[k] = mergeJSON(old, sub)
				continue
			}
		}
		have[k] = v
	}
	return have
}

// MoveState gives every preset's per-project state of the project at from to the project now at
// to (the same project, moved or renamed), so that the agents' logins and conversations come
// along. A preset that already has state for to keeps it. It returns the names of the presets
// whose state moved.
func MoveState(stateRoot, from, to string) ([]string, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	var moved []string
	for _, p := range all {
		src, dst := p.StateDir(stateRoot, from), p.StateDir(stateRoot, to)
		if _, err := os.Lstat(src); err != nil {
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Rename(src, dst); err != nil {
			return moved, fmt.Errorf("move the %s agent's state: %w", p.Name, err)
		}
		moved = append(moved, p.Name)
	}
	return moved, nil
}
