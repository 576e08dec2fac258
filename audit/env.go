package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/audit/manifest"
)

// Env is the view of the environment the ENV, FS and NET rules read. Every
// absolute path a probe reads (/proc/self/status, /etc/ld.so.preload, ~/.ssh)
// is resolved under Root, so tests point the probes at a fixture tree holding
// files in the real kernel formats; LiveEnv is the running system.
type Env struct {
	// Root is the filesystem root the probes read: "/" for the live system.
	Root string
	// Vars is the environment the agent's command would receive, as KEY=VALUE.
	Vars []string
	// Home is the home directory (absolute, as seen by the command).
	Home string
	// Granted names variables a preset or --env deliberately passes; FS007
	// reports them as granted rather than as leaks.
	Granted []string
	// LandlockProbe, when set, tries an access a Landlock domain would deny and
	// reports whether it was denied; ENV008 uses it to detect Landlock by effect.
	LandlockProbe func() ProbeResult
}

// ProbeResult is the answer of an effect probe.
type ProbeResult struct {
	// Denied is true when the probe access was refused by a confinement layer.
	Denied bool
	// Detail says what was tried and what happened.
	Detail string
	// Err is set when the probe could not be made at all.
	Err error
}

// GrantedEnvVar names the variable through which shadow tells an audit which
// variables a preset passes on purpose (comma-separated names): the in-jail
// verification is started with it, so FS007 reports a preset's API key as
// granted while a variable widened in with --env still fails. LiveEnv reads
// it and leaves it out of Vars.
const GrantedEnvVar = "SHADOW_AUDIT_GRANTED"

// LiveEnv returns the view of the running process: root "/", its environment,
// its home directory, the variables granted through GrantedEnvVar, and the
// default Landlock probe.
func LiveEnv() Env {
	home, _ := os.UserHomeDir()
	e := Env{Root: "/", Home: home, LandlockProbe: DefaultLandlockProbe}
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if name == GrantedEnvVar {
			for _, g := range strings.Split(val, ",") {
				if g = strings.TrimSpace(g); g != "" {
					e.Granted = append(e.Granted, g)
				}
			}
			continue
		}
		e.Vars = append(e.Vars, kv)
	}
	return e
}

// DefaultLandlockProbe opens the filesystem root for listing. Its permission
// bits allow that to everyone, so EACCES can only come from an LSM; in shadow's
// jail no Landlock rule covers "/" itself, so the jail's domain refuses it.
func DefaultLandlockProbe() ProbeResult {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return ProbeResult{Err: err}
	}
	if st.Mode&0o005 != 0o005 {
		return ProbeResult{Err: errors.New("/ is not world-listable, the probe proves nothing")}
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return ProbeResult{Denied: false, Detail: "listing / (mode 0755) was allowed"}
	}
	if errors.Is(err, unix.EACCES) {
		return ProbeResult{Denied: true, Detail: "listing / (mode 0755) was refused with EACCES"}
	}
	return ProbeResult{Err: err}
}

// live reports whether the view is the running system.
func (e Env) live() bool { return e.Root == "" || e.Root == "/" }

// path maps an absolute path of the viewed system to the path to open.
func (e Env) path(abs string) string {
	if e.live() {
		return abs
	}
	return filepath.Join(e.Root, abs)
}

// home joins a path relative to the home directory of the viewed system.
func (e Env) home(rel string) string {
	return filepath.Join(e.Home, rel)
}

// readFile reads a file of the viewed system, at most limit bytes.
func (e Env) readFile(abs string, limit int64) ([]byte, error) {
	return readRegular(e.path(abs), limit)
}

// openRegular opens a file for reading only if it is a regular file: a FIFO,
// socket or device planted where a file is expected never blocks or feeds
// the audit (O_NONBLOCK for the open, fstat for the type).
func openRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readCapped reads a whole regular file of at most limit bytes; a larger file
// gives an error wrapping manifest.ErrTooLarge, so its checks are skipped.
func readCapped(path string, limit int64) ([]byte, error) {
	b, err := readRegular(path, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &manifest.ParseError{Path: path, Err: fmt.Errorf("%w: more than %d bytes", manifest.ErrTooLarge, limit)}
	}
	return b, nil
}

// readRegular reads at most limit bytes of a regular file.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err // already "read PATH: ..."
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// lstat stats a path of the viewed system without following a final symlink.
func (e Env) lstat(abs string) (fs.FileInfo, error) { return os.Lstat(e.path(abs)) }

// stat stats a path of the viewed system.
func (e Env) stat(abs string) (fs.FileInfo, error) { return os.Stat(e.path(abs)) }

// access checks read/write/execute permission for the effective ids without
// opening the file, so secret contents are never read. On the live system it
// is faccessat(AT_EACCESS); on a fixture root, a plain access of the fixture path.
func (e Env) access(abs string, mode uint32) error {
	if e.live() {
		return unix.Faccessat(unix.AT_FDCWD, abs, mode, unix.AT_EACCESS)
	}
	return unix.Access(e.path(abs), mode)
}

// readDir lists a directory of the viewed system.
func (e Env) readDir(abs string) ([]fs.DirEntry, error) { return os.ReadDir(e.path(abs)) }

// readlink reads a symlink of the viewed system.
func (e Env) readlink(abs string) (string, error) { return os.Readlink(e.path(abs)) }

// Getenv returns a variable of the viewed environment and whether it is set.
func (e Env) Getenv(name string) (string, bool) {
	for i := len(e.Vars) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(e.Vars[i], "=")
		if ok && k == name {
			return v, true
		}
	}
	return "", false
}

// granted reports whether a variable was deliberately passed.
func (e Env) granted(name string) bool {
	for _, g := range e.Granted {
		if g == name {
			return true
		}
	}
	return false
}
