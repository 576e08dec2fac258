package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketsEnv names, in the environment of TestUnprivileged's re-run, the
// listening sockets its root half planted in the system trees, where the
// unprivileged user cannot.
const socketsEnv = "SHADOW_TEST_SYSTEM_SOCKETS"

func init() {
	// readdir prints how many entries each directory of $P lists.
	probes["readdir"] = func() []string {
		var out []string
		for _, p := range strings.Split(os.Getenv("P"), ":") {
			e, err := os.ReadDir(p)
			if err != nil {
				out = append(out, errName(err))
				continue
			}
			out = append(out, fmt.Sprint(len(e)))
		}
		return out
	}
	// mounts prints every mount of the jail: "RESULT <dev> <fstype> <mount point>".
	probes["mounts"] = func() []string {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return []string{"open: " + err.Error()}
		}
		defer f.Close()
		var out []string
		for _, m := range parseMountinfo(f) {
			out = append(out, m.dev+" "+m.fstype+" "+m.path)
		}
		return out
	}
	unprivFixtures = append(unprivFixtures, func(t *testing.T, _, _ int) []string {
		var paths []string
		for _, s := range plantSystemSockets(t) {
			paths = append(paths, s.path)
		}
		return []string{socketsEnv + "=" + strings.Join(paths, ":")}
	})
}

// mountLine is what the socket tests read of one mountinfo line.
type mountLine struct{ dev, fstype, path string }

func parseMountinfo(f *os.File) []mountLine {
	var out []mountLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 1 {
			continue
		}
		out = append(out, mountLine{dev: fields[2], fstype: tail[0], path: unescapeMountinfo(fields[4])})
	}
	return out
}

// plantedSocket is a 0666 unix socket a host daemon listens on, in a
// directory of its own, and the connections it accepted.
type plantedSocket struct {
	path     string
	accepted chan struct{}
}

// waitAccepted waits (up to a generous deadline) for one connection to
// be accepted.
func (s *plantedSocket) waitAccepted() bool {
	select {
	case <-s.accepted:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

// pending counts the connections accepted and not yet counted, without
// waiting: a connection the jail made was queued before its run ended,
// and the probe's own "ok" says so as well.
func (s *plantedSocket) pending() int {
	n := 0
	for {
		select {
		case <-s.accepted:
			n++
		default:
			return n
		}
	}
}

// plantSocket makes directory pattern (os.MkdirTemp's, below parent, mode
// 0755) with sub below it, listens on a 0666 socket named s in it and
// removes it all when t ends.
func plantSocket(t *testing.T, parent, pattern, sub string) (*plantedSocket, error) {
	top, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dir := filepath.Join(top, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for d := dir; d != parent; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	// Bound through the directory's descriptor: a socket address holds no
	// more than 107 bytes, and the tests' paths are longer.
	fd, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/s", fd.Fd()))
	fd.Close()
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
	s := &plantedSocket{path: filepath.Join(dir, "s"), accepted: make(chan struct{}, 64)}
	if err := os.Chmod(s.path, 0o666); err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			s.accepted <- struct{}{}
		}
	}()
	return s, nil
}

// plantSystemSockets plants, as root, a host daemon's socket in each
// system tree the jail shows (systemDirGlobs) and in the places of the
// report: /opt/<app>/run/, /usr/local/share/<app>-run/ and /etc/<app>/.
func plantSystemSockets(t *testing.T) []*plantedSocket {
	t.Helper()
	type place struct{ parent, pattern, sub string }
	places := []place{
		{"/opt", "shadowtest-*", "run"},
		{"/usr/local/share", "shadowtest-*-run", ""},
		{"/etc", "shadowtest-*", ""},
	}
	for _, g := range systemDirGlobs {
		m, _ := filepath.Glob(g)
		for _, d := range m {
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				places = append(places, place{d, "shadowtest-*", "run"})
			}
		}
	}
	var out []*plantedSocket
	for _, p := range places {
		if _, err := os.Stat(p.parent); err != nil {
			continue
		}
		s, err := plantSocket(t, p.parent, p.pattern, p.sub)
		if err != nil {
			t.Fatalf("plant a socket in %s: %v", p.parent, err)
		}
		out = append(out, s)
	}
	return out
}

// TestEscapeHostSocketEveryShownTree: no host daemon's socket is reachable
// through any path the jail shows from the host. The class is read from
// the jail itself: every mount of its /proc/self/mountinfo that shows host
// files (an overlay, or a filesystem the host has mounted) with the
// system trees, the project, its .git, a package cache, an install tree
// and a --ro directory in the jail. A 0666 socket is planted in a
// directory made below each such directory mount (by root beforehand for
// the trees an ordinary user cannot write), after the first run built the
// mask cache; the host reaches each (the control), the jail none, as root
// and as the user. A file mount (a device, the shadow binary) must not be
// a socket the jail reaches either. Left out, each for its reason: the
// jail's runtime directory /run/shadow, shadow's own, where only shadow
// listens; --rw and agent state binds, writable by request, are not in
// this jail.
func TestEscapeHostSocketEveryShownTree(t *testing.T) {
	j := newTestJail(t)
	roDir := filepath.Join(j.base, "tools")
	writeFiles(t, roDir, map[string]string{"README": "tools\n"})
	writeFiles(t, j.home, map[string]string{".npm/_cacache/index": "cache\n"})
	// The probe, installed under $HOME: its install tree is shown.
	bin := filepath.Join(j.home, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(bin, "probe")
	if err := os.Symlink(j.probe, installed); err != nil {
		t.Fatal(err)
	}
	p := j.policy()
	p.ReadOnly = append(p.ReadOnly, roDir)
	p.CacheDir = filepath.Join(j.base, "caches")
	p.MaskCache = filepath.Join(j.base, "masks")
	try := func(name string, env ...string) []string {
		q := p
		q.Env = append(append(append([]string{}, p.Env...), "SHADOW_TRY="+name), env...)
		res, out, errOut := j.run(t, q, installed)
		if res.ExitCode != 0 {
			t.Fatalf("probe %s exited %d\nstdout: %s\nstderr: %s", name, res.ExitCode, out, errOut)
		}
		var results []string
		for _, l := range strings.Split(out, "\n") {
			if r, ok := strings.CutPrefix(l, "RESULT "); ok {
				results = append(results, r)
			}
		}
		return results
	}

	// As root, a filesystem the host mounted below a system tree (a
	// container's /etc/hosts, a separate /opt/app) is shown too: a tmpfs
	// directory and a file bound over one.
	var subFile, fileBind string
	if os.Getuid() == 0 {
		sub, err := os.MkdirTemp("/opt", "shadowtest-mnt-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(sub) })
		if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "mode=0755,size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })
		subFile = filepath.Join(sub, "seen")
		writeFiles(t, sub, map[string]string{"seen": "submount\n"})
		src := filepath.Join(j.base, "bound.conf")
		writeFiles(t, j.base, map[string]string{"bound.conf": "bound\n"})
		f, err := os.CreateTemp("/etc", "shadowtest-bind-*.conf")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		fileBind = f.Name()
		t.Cleanup(func() { os.Remove(fileBind) })
		if err := unix.Mount(src, fileBind, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(fileBind, unix.MNT_DETACH) })
		if got := try("read", "P="+subFile+":"+fileBind); !slices.Equal(got, []string{"ok", "ok"}) {
			t.Fatalf("reading the host's mounts below /opt and /etc in the jail: %v, want ok ok", got)
		}
	}

	hostDevs := map[string]bool{}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		for _, m := range parseMountinfo(f) {
			hostDevs[m.dev] = true
		}
		f.Close()
	}
	// The first run lists the jail's mounts, and builds the mask cache.
	var dirs, files []string
	for _, l := range try("mounts") {
		parts := strings.SplitN(l, " ", 3)
		if len(parts) != 3 {
			t.Fatalf("mounts probe: %q", l)
		}
		dev, fstype, path := parts[0], parts[1], parts[2]
		if (fstype != "overlay" && !hostDevs[dev]) || path == jailRuntimeDir {
			continue // the jail's own tmpfs, /proc, devpts; shadow's runtime dir
		}
		// A mount at a path the host does not have is a file's (the
		// shadow binary at /run/shadow-init).
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			dirs = append(dirs, path)
		} else {
			files = append(files, path)
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	if subFile != "" && !slices.Contains(dirs, filepath.Dir(subFile)) {
		t.Errorf("the jail's mounts %v lack the host's %s", dirs, filepath.Dir(subFile))
	}
	if fileBind != "" && !slices.Contains(files, fileBind) {
		t.Errorf("the jail's file mounts %v lack the host's %s", files, fileBind)
	}
	for _, want := range []string{"/usr", "/etc", j.project, filepath.Join(j.project, ".git"),
		filepath.Join(j.home, ".npm"), bin, roDir} {
		// A tree with the host's mounts below it is shown piece by piece.
		if !slices.ContainsFunc(dirs, func(d string) bool { return within(d, want) }) {
			t.Errorf("the jail's mounts %v show nothing of %s", dirs, want)
		}
	}

	// The top of a tree shown through an overlay lists its entries (the
	// hosts's may change meanwhile: other tests plant files in /etc).
	tops := []string{"/usr", "/etc", filepath.Join(j.project, ".git"), roDir}
	counts := try("readdir", "P="+strings.Join(tops, ":"))
	for i, d := range tops {
		if n, err := strconv.Atoi(counts[i]); err != nil || n == 0 {
			t.Errorf("the jail lists %s entries in %s, want some", counts[i], d)
		}
	}

	// Sockets, made after the first run: one below each directory mount
	// this user may write, and root's in the system trees.
	var sockets []*plantedSocket
	for _, d := range dirs {
		s, err := plantSocket(t, d, "shadowtest-*", "run")
		if err == nil {
			sockets = append(sockets, s)
		} else if os.Getuid() == 0 {
			t.Fatalf("plant a socket in %s: %v", d, err)
		}
	}
	var paths []string
	if os.Getuid() == 0 {
		sockets = append(sockets, plantSystemSockets(t)...)
	} else if env := os.Getenv(socketsEnv); env != "" {
		paths = strings.Split(env, ":")
	}
	for _, s := range sockets {
		paths = append(paths, s.path)
	}
	// Every directory mount has a socket below it, its own or a deeper
	// mount's.
	for _, d := range dirs {
		if !slices.ContainsFunc(paths, func(p string) bool { return within(p, d) }) {
			t.Errorf("no socket could be planted in %s, which the jail shows", d)
		}
	}
	for _, p := range paths {
		if err := dialUnixAt(p); err != nil {
			t.Fatalf("control: the host cannot reach %s: %v", p, err)
		}
	}
	for _, s := range sockets {
		if !s.waitAccepted() {
			t.Fatalf("control: %s accepted no connection", s.path)
		}
	}

	targets := append(append([]string{}, paths...), files...)
	got := try("unixconnect", "P="+strings.Join(targets, ":"))
	if len(got) != len(targets) {
		t.Fatalf("unixconnect: %d results for %d paths: %v", len(got), len(targets), got)
	}
	for i, p := range targets {
		if got[i] == "ok" {
			t.Errorf("connect to host socket %s from the jail: ok", p)
		}
	}
	for _, s := range sockets {
		if n := s.pending(); n != 0 {
			t.Errorf("the host daemon at %s accepted %d connections from the jail", s.path, n)
		}
	}
	t.Logf("%d host-backed directory mounts, %d file mounts, %d sockets: %v", len(dirs), len(files), len(paths), got)
}
