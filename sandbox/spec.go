package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// jailSpec is what the host side sends PID 1 of the jail, as JSON over an
// inherited pipe: every path already resolved on the host.
type jailSpec struct {
	Root        string      // empty host directory the jail's root tmpfs is mounted on
	Binary      string      // this executable, bound at jailInitBinary
	Project     string      // real path of the project
	Dir         string      // where the command starts: Project or a directory in it
	Home        string      // host $HOME, an empty tmpfs in the jail
	HostUID     int         // invoking uid and gid, as the host sees them
	HostGID     int         //
	SystemDirs  []string    // bound read-only
	Masked      []string    // paths under SystemDirs others may not read: hidden (mask.go)
	ResolvConf  string      // /etc/resolv.conf's target when under /run
	Mounts      []mountSpec // project overlay, .git, caches, install trees, extras
	RuntimeDir  string      // host dir bound at /run/shadow
	TmpSize     int64
	HomeSize    int64
	GitConfig   string        // the jail's ~/.gitconfig: the host's commit identity only
	Scrubbed    []shownConfig // files shown scrubbed: git configs (gitconfig.go), credentials (credfiles.go)
	LayerSize   int64         // size of the run's tmpfs layer; 0: the kernel's default
	Checkpoints checkpointSpec
	NewNet      bool  // own network namespace: bring lo up
	Publish     []int // ports relayed from the host over publish.sock
	Proxy       bool  // relay a port of the jail's lo to proxy.sock
	Exec        execSpec
	InitRules   confine.FileRules // PID 1's own Landlock rules

	// LoopbackRelays are the jail's loopback addresses that PID 1 listens
	// on and hands to the proxy with its own port: the allowed loopback
	// destinations of the host (loopbackRelays).
	LoopbackRelays []string

	// UserLimits are the jail's user namespace's /proc/sys/user/max_*
	// values, by name, that PID 1 sets (userlimits.go).
	UserLimits map[string]int64
}

// mountSpec is one mount after /tmp and $HOME, in order.
type mountSpec struct {
	Kind        string // mountOverlay, mountBind or mountShown
	What        string // for errors: "project overlay", "--ro", ...
	Src         string // bind source, or overlay lower
	Dst         string // jail path
	ReadOnly    bool   // bind read-only
	Upper, Work string // overlay layers; for mountRun, Work is where the run's layer goes when it cannot be a tmpfs
	OnDisk      bool   // mountRun: put the run's layer in Work even where a tmpfs would do (tests)
}

const (
	mountOverlay = "overlay"
	mountBind    = "bind"
	// mountRun is the project's overlay: the run's tmpfs layer (upper) over
	// the session's staging layer over the project (layer.go).
	mountRun = "run"
	// mountShown shows a host directory read-only through an overlay with
	// no upper layer rather than a bind: a read-only bind still lets
	// connect(2) reach a host daemon's socket inside it (git's fsmonitor
	// listens in .git), an overlay refuses it.
	mountShown = "shown"
)

// execSpec is what PID 1 sends the stage that execs the command.
type execSpec struct {
	Argv  []string
	Env   []string
	Rules confine.FileRules
}

// systemDirGlobs are the host system directories the jail sees read-only.
var systemDirGlobs = []string{"/usr", "/bin", "/sbin", "/lib*", "/etc", "/opt"}

// cacheDirs are the package caches (relative to $HOME) shown through their
// own overlay: reads from the host cache, writes to a per-session layer.
var cacheDirs = []string{
	".cache/go-build", "go/pkg/mod", ".npm", ".cache/yarn", ".local/share/pnpm/store",
	".cargo/registry", ".cargo/git", ".cache/pip", ".m2/repository",
}

// deviceFiles are the jail's devices the command may read and write.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// CheckProject refuses a project that the jail, which shows the project whole and writable,
// cannot show without handing over the machine: the root directory, or a directory that is or
// contains home, the invoker's home directory (~/.ssh and every other credential). project and
// home are clean absolute paths; home may be empty.
func CheckProject(project, home string) error {
	switch {
	case project == "/":
		return errors.New("/ cannot be the project, as the jail would show the whole system writable: " +
			"run shadow in the project's directory, or give --project DIR")
	case home != "" && project == home:
		return fmt.Errorf("your home directory %s cannot be the project, as the jail would show its credentials: "+
			"run shadow in the project's directory, or give --project DIR", home)
	case home != "" && within(home, project):
		return fmt.Errorf("%s cannot be the project, as it holds your home directory %s and its credentials: "+
			"run shadow in the project's directory, or give --project DIR", project, home)
	}
	return nil
}

// prepare checks p and resolves everything the jail needs on the host.
func prepare(p Policy, argv []string, root string) (*jailSpec, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, &JailError{Step: "command", Err: errors.New("no command given")}
	}
	project, err := realDir(p.Project)
	if err != nil {
		return nil, &JailError{Step: "project", Err: err}
	}
	home := p.Home
	if home == "" {
		home = os.Getenv("HOME")
	}
	if home != "" {
		home = filepath.Clean(home)
	}
	if err := CheckProject(project, home); err != nil {
		return nil, &JailError{Step: "project", Err: err}
	}
	if p.Upper == "" {
		return nil, &JailError{Step: "staging layer", Err: errors.New("the staging layer's directory is required")}
	}
	upper, err := makeDir(p.Upper)
	if err != nil {
		return nil, &JailError{Step: "staging layer", Err: err}
	}
	if within(upper, project) {
		return nil, &JailError{Step: "staging layer", Err: fmt.Errorf("%s is inside the project %s", upper, project)}
	}
	env := p.Env
	if env == nil {
		env = BuildEnv(os.Environ(), nil)
	}
	env = setEnv(env, "HOME", home)
	dir := startDir(p.Dir, project)
	env = setEnv(env, "PWD", dir)
	if lookupEnv(env, "PATH") == "" {
		env = setEnv(env, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")
	}

	// /proc/self/exe cannot be the bind source: in the jail it still refers
	// to the host's mount of the binary, which a bind from the jail's mount
	// namespace refuses (EINVAL). The path is looked up again there.
	self, err := os.Executable()
	if err != nil {
		return nil, &JailError{Step: "find shadow binary", Err: err}
	}
	s := &jailSpec{
		Root:     root,
		Binary:   self,
		Project:  project,
		Dir:      dir,
		Home:     home,
		HostUID:  os.Getuid(),
		HostGID:  os.Getgid(),
		TmpSize:  orDefault(p.TmpSize, 1<<30),
		HomeSize: orDefault(p.HomeSize, 512<<20),
		Publish:  p.Publish,
		Proxy:    len(p.AllowDomains) > 0 && !p.AllowNetwork, // full network: nothing to filter
	}
	if s.Proxy {
		for _, r := range loopbackRelays(p.AllowDomains) {
			s.LoopbackRelays = append(s.LoopbackRelays, r.Listen)
		}
	}
	for _, g := range systemDirGlobs {
		m, _ := filepath.Glob(g)
		s.SystemDirs = append(s.SystemDirs, m...)
	}
	if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && within(t, "/run") {
		s.ResolvConf = t
	}
	if s.UserLimits, err = jailUserLimits(userLimitsDir); err != nil {
		return nil, &JailError{Step: "per-user limits", Err: err}
	}

	s.LayerSize = p.MaxUpperBytes
	if p.Checkpoints != "" {
		dir, err := makeDir(p.Checkpoints)
		if err != nil {
			return nil, &JailError{Step: "checkpoints", Err: err}
		}
		s.Checkpoints = checkpointSpec{Dir: dir, Next: max(p.NextCheckpoint, 1), Quiet: int64(p.QuietCheckpoint), Budget: p.CheckpointBudget}
	}
	s.Mounts = append(s.Mounts, mountSpec{Kind: mountRun, What: "project overlay",
		Src: project, Dst: project, Upper: upper, Work: upper + ".run", OnDisk: layerOnDisk})
	gitRO := gitReadOnly(project, p.GitWritable)
	for _, g := range gitRO {
		m, err := readOnlyMount("git directory", g)
		if err != nil {
			return nil, &JailError{Step: "git directory", Err: err}
		}
		s.Mounts = append(s.Mounts, m)
	}
	s.GitConfig = gitIdentity(home, project)
	dirs, creds := projectDirs(project)
	s.Scrubbed = append(gitConfigs(project, dirs), credentialFiles(creds)...)
	var caches []string
	if home != "" && p.CacheDir != "" && !p.NoCache {
		for _, c := range cacheDirs {
			path := filepath.Join(home, c)
			if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
				continue
			}
			layer := filepath.Join(p.CacheDir, strings.ReplaceAll(c, "/", "_"))
			cu, err := makeDir(filepath.Join(layer, "upper"))
			if err != nil {
				return nil, &JailError{Step: "cache layer", Err: err}
			}
			cw, err := makeDir(filepath.Join(layer, "work"))
			if err != nil {
				return nil, &JailError{Step: "cache layer", Err: err}
			}
			caches = append(caches, path)
			s.Mounts = append(s.Mounts, mountSpec{Kind: mountOverlay, What: "cache " + c,
				Src: path, Dst: path, Upper: cu, Work: cw})
		}
	}
	trees := installTrees(argv[0], lookupEnv(env, "PATH"), home, project)
	for _, t := range trees {
		m, err := readOnlyMount("install tree", t)
		if err != nil {
			return nil, &JailError{Step: "install tree", Err: err}
		}
		s.Mounts = append(s.Mounts, m)
	}
	ro, err := absPaths(p.ReadOnly)
	if err != nil {
		return nil, &JailError{Step: "--ro", Err: err}
	}
	rw, err := absPaths(p.ReadWrite)
	if err != nil {
		return nil, &JailError{Step: "--rw", Err: err}
	}
	for _, x := range ro {
		m, err := readOnlyMount("--ro "+x, x)
		if err != nil {
			return nil, &JailError{Step: "--ro", Err: err}
		}
		s.Mounts = append(s.Mounts, m)
	}
	for _, x := range rw {
		s.Mounts = append(s.Mounts, mountSpec{Kind: mountBind, What: "--rw " + x, Src: x, Dst: x})
	}
	state, err := stateMounts(p.StateBinds, home, project)
	if err != nil {
		return nil, &JailError{Step: "agent state", Err: err}
	}
	s.Mounts = append(s.Mounts, state...)
	for _, m := range state {
		rw = append(rw, m.Dst)
	}
	agentCaches, agentCacheDsts, err := agentCacheMounts(p.AgentCaches, home, project)
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
		ReadExec: append(append(append([]string{}, s.SystemDirs...), trees...), ro...),
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
	s.Exec = execSpec{Argv: argv, Env: env, Rules: rules}
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

// readOnlyMount shows host path p read-only at the same path: a directory
// through an overlay (mountShown), a file through a read-only bind. A socket
// is refused: the jail never reaches a host socket.
func readOnlyMount(what, p string) (mountSpec, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return mountSpec{}, err
	}
	switch {
	case fi.IsDir():
		return mountSpec{Kind: mountShown, What: what, Src: p, Dst: p, ReadOnly: true}, nil
	case fi.Mode()&fs.ModeSocket != 0:
		return mountSpec{}, fmt.Errorf("%s is a socket: shadow never lets the jail reach a host socket", p)
	}
	return mountSpec{Kind: mountBind, What: what, Src: p, Dst: p, ReadOnly: true}, nil
}

// gitReadOnly returns the git directories to bind read-only: the project's
// .git directory unless writable, and the gitdir (and its common dir) a .git
// file points to, always, as it lies outside the staged project.
func gitReadOnly(project string, writable bool) []string {
	dirs := gitDirsOf(project)
	if len(dirs) == 0 {
		return nil
	}
	if dirs[0] == filepath.Join(project, ".git") {
		if writable {
			return nil
		}
		return dirs
	}
	var keep []string
	for _, d := range outermost(dirs) {
		if !within(d, project) || !writable {
			keep = append(keep, d)
		}
	}
	return keep
}

// outermost drops the directories of dirs that are (or lie below) another
// one: showing the outer one shows them.
func outermost(dirs []string) []string {
	var out []string
	for i, d := range dirs {
		covered := false
		for j, o := range dirs {
			if i != j && within(d, o) && (d != o || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, d)
		}
	}
	return out
}

// installTrees returns the directories to bind read-only so that the
// command, when it resolves to a file under home, can start: the tree it is
// installed in (~/.nvm/versions/node/vX for .../vX/bin/node, ~/.local/bin,
// ~/go/bin) and, when it is a symlink, the tree its target is in.
func installTrees(cmd, path, home, project string) []string {
	if home == "" || home == "/" {
		return nil
	}
	file := ""
	if strings.Contains(cmd, "/") {
		if filepath.IsAbs(cmd) {
			file = cmd
		}
	} else {
		for _, dir := range filepath.SplitList(path) {
			if !filepath.IsAbs(dir) {
				continue
			}
			c := filepath.Join(dir, cmd)
			if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				file = c
				break
			}
		}
	}
	if file == "" {
		return nil
	}
	var trees []string
	add := func(f string) {
		if !within(f, home) || within(f, project) {
			return
		}
		t := installTree(f, home)
		if t == "" || t == home {
			return
		}
		for _, x := range trees {
			if x == t {
				return
			}
		}
		trees = append(trees, t)
	}
	add(filepath.Clean(file))
	if real, err := filepath.EvalSymlinks(file); err == nil {
		add(real)
	}
	return trees
}

// installTree is the directory bound for one executable under home.
func installTree(file, home string) string {
	dir := filepath.Dir(file)
	if filepath.Base(dir) != "bin" {
		return dir
	}
	parent := filepath.Dir(dir)
	switch parent {
	case home, filepath.Join(home, ".local"), filepath.Join(home, "go"), filepath.Join(home, ".cargo"):
		return dir // a shared bin directory: the bin alone
	}
	return parent // a per-tool tree: vX/{bin,lib}
}

// startDir is where the command starts: dir, resolved, when it is a
// directory in project; else project.
func startDir(dir, project string) string {
	if dir == "" {
		return project
	}
	real, err := realDir(dir)
	if err != nil || !within(real, project) {
		return project
	}
	return real
}

// realDir resolves dir to an absolute real path and checks it is a directory.
func realDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no project directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", real, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

// makeDir creates dir if needed and returns its real absolute path.
func makeDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", abs, err)
	}
	return filepath.EvalSymlinks(abs)
}

// absPaths resolves extra paths, which must exist.
func absPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", p, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", p, err)
		}
		if real == "/" {
			return nil, errors.New("refusing to bind the whole host root")
		}
		out = append(out, real)
	}
	return out, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func orDefault(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

func lookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// pathDepth is the number of components of a clean absolute path.
func pathDepth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// projectUpper is the upper layer of the project's overlay: what the run
// stages.
func (s *jailSpec) projectUpper() string {
	for _, m := range s.Mounts {
		if m.Kind == mountRun {
			return m.Upper
		}
	}
	return ""
}
