//go:build !shadowinit

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// The jail is planned in two halves: lookHost reads what the plan needs to
// know of the host (paths resolved, which exist and of what kind, the git
// directories, the files shown scrubbed), then planJail, a pure function of
// the policy and those facts, decides every mount and Landlock rule. PID 1
// turns the plan into its ordered steps (mountPlan) and runs them.

// fileKind is what a host path is, as the plan needs to know.
type fileKind string

const (
	kindMissing fileKind = "missing"
	kindDir     fileKind = "dir"
	kindFile    fileKind = "file" // anything but a directory or a socket
	kindSocket  fileKind = "socket"
)

// hostFacts are what planJail knows of the host: everything it needs, read
// beforehand, so that the plan is a function of data.
type hostFacts struct {
	Project string // real path of Policy.Project
	Dir     string // where the command starts: Project or a directory in it
	Home    string // clean $HOME, or Policy.Home; may be empty
	Upper   string // real path of the staging layer, created
	Binary  string // the jail's PID 1 program (initBinary)
	UID     int    // the invoker, as the host sees it
	GID     int
	// Env is the command's environment before HOME, PWD and PATH are set:
	// Policy.Env, or BuildEnv of the host's.
	Env []string
	// SystemDirs are the host's system directories (systemDirGlobs).
	SystemDirs []string
	// ResolvConf is /etc/resolv.conf's target when it lies under /run.
	ResolvConf string
	// UserLimits are the jail's per-user limits (userlimits.go).
	UserLimits map[string]int64
	// Checkpoints is the real path of Policy.Checkpoints, created; empty
	// for none.
	Checkpoints string
	// GitDirs are the project's git directories (gitDirsOf).
	GitDirs []string
	// GitConfig is the jail's ~/.gitconfig; Scrubbed the files shown
	// scrubbed.
	GitConfig string
	Scrubbed  []shownConfig
	// InstallTrees are the trees under $HOME the command is installed in.
	InstallTrees []string
	// ReadOnly and ReadWrite are Policy.ReadOnly and ReadWrite resolved.
	ReadOnly, ReadWrite []string
	// Caches are the entries of cacheDirs that are directories under Home.
	Caches []string
	// Real maps a host path the plan names to its real path: the sources of
	// Policy.StateBinds, the layers created for caches.
	Real map[string]string
	// Kinds says what each path the plan shows is: git directories,
	// install trees, --ro paths, the host copies of agent caches.
	Kinds map[string]fileKind
	// InitSelf is set when Binary is this executable: PID 1 is
	// /proc/self/exe re-executed.
	InitSelf bool
}

// kind is what the facts say path is: missing when they do not know it.
func (f hostFacts) kind(path string) fileKind {
	if k, ok := f.Kinds[path]; ok {
		return k
	}
	return kindMissing
}

// real is path resolved, or path itself when the facts do not resolve it.
func (f hostFacts) real(path string) string {
	if r, ok := f.Real[path]; ok {
		return r
	}
	return path
}

// lookHost reads the host facts for p and argv, creating the directories
// the jail writes into (the staging layer, the checkpoints, the caches'
// layers).
func lookHost(p Policy, argv []string) (hostFacts, error) {
	f := hostFacts{UID: os.Getuid(), GID: os.Getgid(), Real: map[string]string{}, Kinds: map[string]fileKind{}}
	var err error
	if f.Project, err = realDir(p.Project); err != nil {
		return f, &JailError{Step: "project", Err: err}
	}
	f.Home = p.Home
	if f.Home == "" {
		f.Home = os.Getenv("HOME")
	}
	if f.Home != "" {
		f.Home = filepath.Clean(f.Home)
	}
	if err := CheckProject(f.Project, f.Home); err != nil {
		return f, &JailError{Step: "project", Err: err}
	}
	if p.Upper == "" {
		return f, &JailError{Step: "staging layer", Err: errors.New("the staging layer's directory is required")}
	}
	if f.Upper, err = makeDir(p.Upper); err != nil {
		return f, &JailError{Step: "staging layer", Err: err}
	}
	f.Env = p.Env
	if f.Env == nil {
		f.Env = BuildEnv(os.Environ(), nil)
	}
	f.Dir = startDir(p.Dir, f.Project)
	// /proc/self/exe cannot be the bind source: in the jail it still refers
	// to the host's mount of the binary, which a bind from the jail's mount
	// namespace refuses (EINVAL). The path is looked up again there.
	exe, err := os.Executable()
	if err != nil {
		return f, &JailError{Step: "find shadow binary", Err: err}
	}
	f.Binary, f.InitSelf = initBinary(exe)
	f.SystemDirs = systemDirs()
	if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && within(t, "/run") {
		f.ResolvConf = t
	}
	if f.UserLimits, err = jailUserLimits(userLimitsDir); err != nil {
		return f, &JailError{Step: "per-user limits", Err: err}
	}
	if p.Checkpoints != "" {
		if f.Checkpoints, err = makeDir(p.Checkpoints); err != nil {
			return f, &JailError{Step: "checkpoints", Err: err}
		}
	}
	f.GitDirs = gitDirsOf(f.Project)
	git, _ := exec.LookPath("git")
	gitCache := loadScrubCache(p.MaskCache, git)
	f.GitConfig = gitIdentity(f.Home, f.Project, git, gitCache)
	dirsCache := loadDirsCache(p.MaskCache, f.Project)
	dirs, creds := projectDirs(f.Project, dirsCache)
	dirsCache.save()
	f.Scrubbed = append(gitConfigs(f.Project, dirs, git, gitCache), credentialFiles(creds)...)
	gitCache.save()
	if f.Home != "" && p.CacheDir != "" && !p.NoCache {
		for _, c := range cacheDirs {
			if fi, err := os.Stat(filepath.Join(f.Home, c)); err != nil || !fi.IsDir() {
				continue
			}
			if err := f.makeLayer(cacheLayer(p.CacheDir, c)); err != nil {
				return f, &JailError{Step: "cache layer", Err: err}
			}
			f.Caches = append(f.Caches, c)
		}
	}
	f.InstallTrees = installTrees(argv[0], lookupEnv(commandEnv(f), "PATH"), f.Home, f.Project)
	if f.ReadOnly, err = absPaths(p.ReadOnly); err != nil {
		return f, &JailError{Step: "--ro", Err: err}
	}
	if f.ReadWrite, err = absPaths(p.ReadWrite); err != nil {
		return f, &JailError{Step: "--rw", Err: err}
	}
	for _, b := range p.StateBinds {
		if src, err := filepath.EvalSymlinks(b.Src); err == nil {
			f.Real[b.Src] = src
		}
	}
	for _, c := range p.AgentCaches {
		if !filepath.IsAbs(c.Layer) || f.Kinds[c.Dst] != "" {
			continue
		}
		f.Kinds[c.Dst] = lookKind(c.Dst)
		if f.Kinds[c.Dst] == kindDir {
			if err := f.makeLayer(c.Layer); err != nil {
				return f, &JailError{Step: "agent cache", Err: fmt.Errorf("agent cache %s: %w", c.Dst, err)}
			}
		}
	}
	for _, x := range slices.Concat(gitReadOnly(f.GitDirs, f.Project, p.GitWritable), f.InstallTrees, f.ReadOnly) {
		f.Kinds[x] = lookKind(x)
	}
	return f, nil
}

// makeLayer creates the upper and work directories of an overlay's
// writable layer and records their real paths.
func (f *hostFacts) makeLayer(layer string) error {
	for _, d := range []string{filepath.Join(layer, "upper"), filepath.Join(layer, "work")} {
		real, err := makeDir(d)
		if err != nil {
			return err
		}
		f.Real[d] = real
	}
	return nil
}

// lookKind is what path is, following symlinks.
func lookKind(path string) fileKind {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return kindMissing
	case fi.IsDir():
		return kindDir
	case fi.Mode()&fs.ModeSocket != 0:
		return kindSocket
	}
	return kindFile
}

// cacheLayer is the directory of the writable layer of package cache c
// (relative to $HOME) in cacheDir.
func cacheLayer(cacheDir, c string) string {
	return filepath.Join(cacheDir, strings.ReplaceAll(c, "/", "_"))
}

// commandEnv is the command's environment: HOME, PWD, and PATH when it has
// none, set.
func commandEnv(f hostFacts) []string {
	env := setEnv(f.Env, "HOME", f.Home)
	env = setEnv(env, "PWD", f.Dir)
	if lookupEnv(env, "PATH") == "" {
		env = setEnv(env, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")
	}
	return env
}

// planJail is the jail of p for argv on a host that f describes: its
// mounts, in the order PID 1 makes them, and the Landlock rules of the
// command and of PID 1. root is where PID 1 builds the jail's root. It
// reads nothing of the host: what it does not find in f is missing.
func planJail(p Policy, argv []string, root string, f hostFacts) (*jailSpec, error) {
	project, home := f.Project, f.Home
	s := &jailSpec{
		Root:       root,
		Binary:     f.Binary,
		InitSelf:   f.InitSelf,
		Project:    project,
		Dir:        f.Dir,
		Home:       home,
		HostUID:    f.UID,
		HostGID:    f.GID,
		TmpSize:    orDefault(p.TmpSize, 1<<30),
		HomeSize:   orDefault(p.HomeSize, 512<<20),
		Publish:    p.Publish,
		Proxy:      len(p.AllowDomains) > 0 && !p.AllowNetwork, // full network: nothing to filter
		SystemDirs: f.SystemDirs,
		ResolvConf: f.ResolvConf,
		UserLimits: f.UserLimits,
		LayerSize:  p.MaxUpperBytes,
		GitConfig:  f.GitConfig,
		Scrubbed:   f.Scrubbed,
	}
	if s.Proxy {
		for _, r := range loopbackRelays(p.AllowDomains) {
			s.LoopbackRelays = append(s.LoopbackRelays, r.Listen)
		}
	}
	if f.Checkpoints != "" {
		s.Checkpoints = checkpointSpec{Dir: f.Checkpoints, Next: max(p.NextCheckpoint, 1), Quiet: int64(p.QuietCheckpoint), Budget: p.CheckpointBudget,
			Command: p.Command}
	}
	s.Mounts = append(s.Mounts, mountSpec{Kind: mountRun, What: "project overlay",
		Src: project, Dst: project, Upper: f.Upper, Work: f.Upper + ".run", OnDisk: p.layerOnDisk})
	gitRO := gitReadOnly(f.GitDirs, project, p.GitWritable)
	for _, g := range gitRO {
		m, err := readOnlyMount("git directory", g, f.kind(g))
		if err != nil {
			return nil, &JailError{Step: "git directory", Err: err}
		}
		s.Mounts = append(s.Mounts, m)
	}
	var caches []string
	for _, c := range f.Caches {
		if p.NoCache || p.CacheDir == "" || home == "" {
			break
		}
		path, layer := filepath.Join(home, c), cacheLayer(p.CacheDir, c)
		caches = append(caches, path)
		s.Mounts = append(s.Mounts, mountSpec{Kind: mountOverlay, What: "cache " + c, Src: path, Dst: path,
			Upper: f.real(filepath.Join(layer, "upper")), Work: f.real(filepath.Join(layer, "work"))})
	}
	for _, t := range f.InstallTrees {
		m, err := readOnlyMount("install tree", t, f.kind(t))
		if err != nil {
			return nil, &JailError{Step: "install tree", Err: err}
		}
		s.Mounts = append(s.Mounts, m)
	}
	ro, rw := f.ReadOnly, slices.Clone(f.ReadWrite)
	for _, x := range ro {
		m, err := readOnlyMount("--ro "+x, x, f.kind(x))
		if err != nil {
			return nil, &JailError{Step: "--ro", Err: err}
		}
		s.Mounts = append(s.Mounts, m)
	}
	for _, x := range rw {
		s.Mounts = append(s.Mounts, mountSpec{Kind: mountBind, What: "--rw " + x, Src: x, Dst: x})
	}
	state, err := planStateMounts(p.StateBinds, home, project, f)
	if err != nil {
		return nil, &JailError{Step: "agent state", Err: err}
	}
	s.Mounts = append(s.Mounts, state...)
	for _, m := range state {
		rw = append(rw, m.Dst)
	}
	agentCaches, agentCacheDsts, err := planAgentCaches(p.AgentCaches, home, project, f)
	if err != nil {
		return nil, &JailError{Step: "agent cache", Err: err}
	}
	s.Mounts = append(s.Mounts, agentCaches...)
	rw = append(rw, agentCacheDsts...)
	// A mount hides whatever was mounted under its destination before it, so
	// a shallower destination goes first: `--ro ~/src` must not cover the
	// overlay of the project ~/src/app. Equal depths keep their order.
	slices.SortStableFunc(s.Mounts, func(a, b mountSpec) int { return pathDepth(a.Dst) - pathDepth(b.Dst) })

	// The command's Landlock rules. --ro paths may be executed too: they
	// are read-only mounts, and a toolchain brought in with --ro must run.
	rules := confine.FileRules{
		ReadExec: append(append(append([]string{}, s.SystemDirs...), f.InstallTrees...), ro...),
		ReadOnly: append([]string{"/proc"}, gitRO...),
		ReadWrite: append(append(append([]string{project, "/tmp", "/dev/shm"}, caches...),
			rw...), deviceFiles...),
		Devices: []string{"/dev/tty", "/dev/pts", "/dev/ptmx"},
	}
	if home != "" && home != "/" {
		rules.ReadWrite = append(rules.ReadWrite, home)
	}
	if s.ResolvConf != "" {
		rules.ReadOnly = append(rules.ReadOnly, s.ResolvConf)
	}
	s.Exec = execSpec{Argv: argv, Env: commandEnv(f), Rules: rules}
	// PID 1 stacks its own domain under the command's, so it needs all of
	// the command's rights, plus exec of itself, writing the nested user
	// namespace's uid_map and gid_map under /proc, and the sockets of the
	// runtime dir (Landlock ABIs with unix-socket rules check connect too).
	s.InitRules = confine.FileRules{
		ReadExec:  append(append([]string{}, rules.ReadExec...), jailInitBinary),
		ReadOnly:  rules.ReadOnly,
		ReadWrite: append(append([]string{}, rules.ReadWrite...), "/proc", jailRuntimeDir),
		Devices:   rules.Devices,
	}
	return s, nil
}

// planStateMounts checks agent state binds and turns them into read-write bind
// mounts. A destination must lie below $HOME and outside the project: a bind
// into the project would let writes bypass the staging layer. f resolves
// the sources.
func planStateMounts(binds []StateBind, home, project string, f hostFacts) ([]mountSpec, error) {
	var out []mountSpec
	for _, b := range binds {
		if !filepath.IsAbs(b.Src) || !filepath.IsAbs(b.Dst) || filepath.Clean(b.Dst) != b.Dst {
			return nil, fmt.Errorf("bind %s on %s: give absolute, clean paths", b.Src, b.Dst)
		}
		if home == "" || home == "/" || b.Dst == home || !within(b.Dst, home) {
			return nil, fmt.Errorf("bind %s on %s: the destination must be below $HOME (%s)", b.Src, b.Dst, home)
		}
		if within(b.Dst, project) || within(project, b.Dst) {
			return nil, fmt.Errorf("bind %s on %s: overlaps the project %s, whose writes must be staged", b.Src, b.Dst, project)
		}
		src, ok := f.Real[b.Src]
		if !ok {
			return nil, fmt.Errorf("bind %s on %s: lstat %s: %w", b.Src, b.Dst, b.Src, fs.ErrNotExist)
		}
		out = append(out, mountSpec{Kind: mountBind, What: "agent state " + b.Dst, Src: src, Dst: b.Dst})
	}
	return out, nil
}

// planAgentCaches turns the agent caches whose host copy exists into
// overlay mounts; it returns them and their destinations. f says which host
// copies exist, and where their layers are.
func planAgentCaches(caches []AgentCache, home, project string, f hostFacts) ([]mountSpec, []string, error) {
	var out []mountSpec
	var dsts []string
	for _, c := range caches {
		if !filepath.IsAbs(c.Dst) || filepath.Clean(c.Dst) != c.Dst || !filepath.IsAbs(c.Layer) {
			return nil, nil, fmt.Errorf("agent cache %s: give absolute, clean paths", c.Dst)
		}
		if home == "" || home == "/" || c.Dst == home || !within(c.Dst, home) {
			return nil, nil, fmt.Errorf("agent cache %s: must be below $HOME (%s)", c.Dst, home)
		}
		if within(c.Dst, project) || within(project, c.Dst) {
			return nil, nil, fmt.Errorf("agent cache %s: overlaps the project %s", c.Dst, project)
		}
		if f.kind(c.Dst) != kindDir {
			continue // no host copy to read through
		}
		upper, work := f.real(filepath.Join(c.Layer, "upper")), f.real(filepath.Join(c.Layer, "work"))
		out = append(out, mountSpec{Kind: mountOverlay, What: "agent cache " + c.Dst, Src: c.Dst, Dst: c.Dst, Upper: upper, Work: work})
		dsts = append(dsts, c.Dst)
	}
	return out, dsts, nil
}

// prepare checks p and resolves everything the jail needs on the host, then
// plans the jail.
func prepare(p Policy, argv []string, root string) (*jailSpec, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, &JailError{Step: "command", Err: errors.New("no command given")}
	}
	f, err := lookHost(p, argv)
	if err != nil {
		return nil, err
	}
	return planJail(p, argv, root, f)
}

// readOnlyMount shows host path p, of kind k, read-only at the same path: a
// directory through an overlay (mountShown), a file through a read-only
// bind. A socket is refused: the jail never reaches a host socket.
func readOnlyMount(what, p string, k fileKind) (mountSpec, error) {
	switch k {
	case kindMissing:
		return mountSpec{}, fmt.Errorf("stat %s: %w", p, fs.ErrNotExist)
	case kindDir:
		return mountSpec{Kind: mountShown, What: what, Src: p, Dst: p, ReadOnly: true}, nil
	case kindSocket:
		return mountSpec{}, fmt.Errorf("%s is a socket: shadow never lets the jail reach a host socket", p)
	}
	return mountSpec{Kind: mountBind, What: what, Src: p, Dst: p, ReadOnly: true}, nil
}
