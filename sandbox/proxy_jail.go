package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// The allow-list proxy (--allow-domain, SPEC §8) runs on the host, where
// names are resolved and from where it dials out. The jail keeps its own
// network namespace with only lo. PID 1 of the jail listens on a free port of
// that lo and hands the listening socket to the host over a unix socket in
// the runtime directory (a path-based unix socket is reachable across the
// namespace boundary; SCM_RIGHTS carries the descriptor). The host's proxy
// then accepts the command's connections itself, with no relay in between,
// and removes the hand-off socket. The command finds the port in HTTP_PROXY
// and its kin. Nothing else leaves the jail's namespace.

// proxySocket is the hand-off socket in the runtime directory.
const proxySocket = "proxy.sock"

// StateBind is a host path bound read-write into the jail at Dst, for an
// agent's own state (SPEC §8): writes go straight to Src, are not staged and
// are not reviewed.
type StateBind struct {
	Src string // host directory or file
	Dst string // absolute jail path
}

// netProxy is the host side of the allow-list proxy of one run.
type netProxy struct {
	p    *proxy.Proxy
	ul   net.Listener // the hand-off socket, until the jail's listener arrives
	path string
	log  *os.File
	done chan struct{} // closed when the hand-off goroutine ends
}

// proxyResolver resolves names for the proxy when startNetProxy is given
// no resolver; nil is the host's resolver. Tests map their own names.
var proxyResolver proxy.Resolver

// handOffTimeout bounds how long the host waits for a connection's
// descriptor on the hand-off socket.
const handOffTimeout = 5 * time.Second

// startNetProxy starts an allow-list proxy for rules that serves the
// listening socket PID 1 of the jail hands over on runtimeDir's proxy
// socket. Every request is appended as a JSON line to netLog (none when
// empty). Names resolve through proxyResolver.
func startNetProxy(runtimeDir string, rules []proxy.Rule, netLog string) (*netProxy, error) {
	cfg := proxy.Config{Allow: rules, Resolver: proxyResolver}
	n := &netProxy{done: make(chan struct{})}
	if netLog != "" {
		if err := os.MkdirAll(filepath.Dir(netLog), 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", filepath.Dir(netLog), err)
		}
		f, err := os.OpenFile(netLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open network log %s: %w", netLog, err)
		}
		n.log, cfg.Log = f, f
	}
	n.path = filepath.Join(runtimeDir, proxySocket)
	ul, err := listenUnix(n.path)
	if err != nil {
		n.close()
		return nil, err
	}
	n.ul = ul
	n.p = proxy.New(cfg)
	go n.awaitListener()
	return n, nil
}

// awaitListener takes the first valid listening socket handed over on the
// hand-off socket, closes and removes that socket, and serves the proxy on
// the listener until close.
func (n *netProxy) awaitListener() {
	defer close(n.done)
	for {
		c, err := n.ul.Accept()
		if err != nil {
			return
		}
		ln, err := receiveListener(c.(*net.UnixConn))
		c.Close()
		if err != nil {
			continue // not PID 1, or not a listener: nothing to serve
		}
		n.ul.Close()
		os.Remove(n.path)
		n.p.Serve(ln)
		return
	}
}

// receiveListener reads one descriptor from c and returns it as a listener
// if it is a listening TCP socket; anything else is closed and refused.
func receiveListener(c *net.UnixConn) (net.Listener, error) {
	c.SetReadDeadline(time.Now().Add(handOffTimeout))
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	_, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("read hand-off: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("read hand-off: %w", err)
	}
	var fds []int
	for i := range msgs {
		if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, f...)
		}
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("hand-off carried %d descriptors, want 1", len(fds))
	}
	fd := fds[0]
	unix.CloseOnExec(fd)
	for _, o := range []struct{ opt, want int }{
		{unix.SO_ACCEPTCONN, 1}, {unix.SO_DOMAIN, unix.AF_INET}, {unix.SO_TYPE, unix.SOCK_STREAM},
	} {
		if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt); err != nil || v != o.want {
			unix.Close(fd)
			return nil, errors.New("hand-off descriptor is not a listening TCP socket")
		}
	}
	f := os.NewFile(uintptr(fd), "jail proxy listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("hand-off descriptor: %w", err)
	}
	return ln, nil
}

// close stops the proxy, ending open tunnels and closing the jail's
// listener (which holds the jail's network namespace alive), then closes
// the log.
func (n *netProxy) close() {
	if n == nil {
		return
	}
	if n.ul != nil {
		n.ul.Close() // ends awaitListener if nothing was handed over
	}
	if n.p != nil {
		n.p.Close()
	}
	if n.done != nil && n.ul != nil {
		<-n.done
	}
	if n.log != nil {
		n.log.Close()
	}
}

// maxSunPath is the longest path a sockaddr_un holds, less its NUL.
const maxSunPath = 107

// listenUnix listens on a unix socket at path, replacing a stale one. A
// path too long for sockaddr_un (a deep state directory) is reached through
// /proc/self/fd/N/NAME, N a descriptor of its directory.
func listenUnix(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	addr := path
	if len(path) > maxSunPath {
		dir, err := os.Open(filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", filepath.Dir(path), err)
		}
		defer dir.Close()
		addr = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + filepath.Base(path)
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The path is removed by the hand-off, or replaced by the next run;
	// Close must not unlink a path it may not own by then.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, nil
}

// listenProxyPort runs in PID 1: it listens on a free port of the jail's
// own loopback, the address the command is given as its proxy.
func listenProxyPort() (net.Listener, int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, fmt.Errorf("listen on the jail's 127.0.0.1: %w", err)
	}
	return ln, ln.Addr().(*net.TCPAddr).Port, nil
}

// handOffProxyListener runs in PID 1: it hands the listening socket ln
// over to the host's proxy through the hand-off socket sock, then closes its
// own copy; from then on the host accepts the command's connections
// directly. On failure ln is closed too, so the command's proxy connections
// are refused rather than left hanging.
func handOffProxyListener(ln net.Listener, sock string) error {
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("proxy listener: %w", err)
	}
	defer f.Close()
	c, err := net.DialTimeout("unix", sock, handOffTimeout)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", sock, err)
	}
	defer c.Close()
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte{0}, unix.UnixRights(int(f.Fd())), nil); err != nil {
		return fmt.Errorf("hand the proxy listener over on %s: %w", sock, err)
	}
	return nil
}

// proxyEnv points the command's HTTP clients at the relay on port: the
// proxy variables in both cases, an empty NO_PROXY (nothing bypasses the
// allow-list; there is nothing to reach directly), and NODE_USE_ENV_PROXY so
// that Node's own fetch uses them.
func proxyEnv(env []string, port int) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	for _, kv := range [][2]string{
		{"HTTP_PROXY", u}, {"HTTPS_PROXY", u}, {"ALL_PROXY", u},
		{"http_proxy", u}, {"https_proxy", u}, {"all_proxy", u},
		{"NO_PROXY", ""}, {"no_proxy", ""}, {"NODE_USE_ENV_PROXY", "1"},
	} {
		env = setEnv(env, kv[0], kv[1])
	}
	return env
}

// stateMounts checks agent state binds and turns them into read-write bind
// mounts. A destination must lie below $HOME and outside the project: a bind
// into the project would let writes bypass the staging layer.
func stateMounts(binds []StateBind, home, project string) ([]mountSpec, error) {
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
		src, err := filepath.EvalSymlinks(b.Src)
		if err != nil {
			return nil, fmt.Errorf("bind %s on %s: %w", b.Src, b.Dst, err)
		}
		out = append(out, mountSpec{Kind: mountBind, What: "agent state " + b.Dst, Src: src, Dst: b.Dst})
	}
	return out, nil
}
