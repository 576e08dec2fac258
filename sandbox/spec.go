package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// jailSpec is what the host side sends PID 1 of the jail, as JSON over an
// inherited pipe: every path already resolved on the host.
type jailSpec struct {
	Root        string      // empty host directory the jail's root tmpfs is mounted on
	Binary      string      // PID 1's program (initBinary), bound at jailInitBinary
	InitSelf    bool        `json:"-"` // Binary is this executable: start /proc/self/exe
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

	// Seccomp is the jail's seccomp program (confine.Program), compiled by the host: PID 1
	// loads it and hands it to the exec stage, so it links no libseccomp.
	Seccomp []byte

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

// gitReadOnly returns the git directories to bind read-only, of the
// project's git directories dirs (gitDirsOf): the project's .git directory
// unless writable, and the gitdir (and its common dir) a .git file points
// to, always, as it lies outside the staged project.
func gitReadOnly(dirs []string, project string, writable bool) []string {
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

// systemDirs are the host's directories of systemDirGlobs.
func systemDirs() []string {
	var dirs []string
	for _, g := range systemDirGlobs {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	return dirs
}
