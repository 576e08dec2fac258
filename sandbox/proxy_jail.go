//go:build !shadowinit

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
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

// StateBind is a host path bound read-write into the jail at Dst, for an
// agent's own state (SPEC §8): writes go straight to Src, are not staged and
// are not reviewed.
type StateBind struct {
	Src string // host directory or file
	Dst string // absolute jail path
}

// netProxy is the host side of the allow-list proxy of one run.
type netProxy struct {
	p     *proxy.Proxy
	ul    net.Listener // the hand-off socket, until the jail's listener arrives
	path  string
	log   *os.File
	rules []proxy.Rule
	done  chan struct{} // closed when the hand-off goroutine ends
}

// startNetProxy starts an allow-list proxy for rules that serves the
// listening socket PID 1 of the jail hands over on runtimeDir's proxy
// socket. Every request is appended as a JSON line to netLog (none when
// empty). The proxy resolves names, trusts the real servers of the secrets'
// hosts and puts a request off the list to the user as w says
// (IO.Resolver, IO.Roots, IO.AskNetwork).
func startNetProxy(runtimeDir string, rules []proxy.Rule, netLog string, sec *runSecrets, w IO) (*netProxy, error) {
	cfg := proxy.Config{Allow: rules, Resolver: w.Resolver, Roots: w.Roots, Ask: w.AskNetwork}
	if sec != nil {
		cfg.Secrets, cfg.CA = sec.secrets, sec.ca
	}
	n := &netProxy{done: make(chan struct{}), rules: rules}
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
	ul, err := ListenUnix(n.path)
	if err != nil {
		n.close()
		return nil, err
	}
	n.ul = ul
	n.p = proxy.New(cfg)
	go n.awaitListener()
	return n, nil
}

// awaitListener takes the first valid hand-off on the hand-off socket (the
// proxy's listener, then one listener per loopback relay), closes and
// removes that socket, and serves the proxy and the relays until close.
func (n *netProxy) awaitListener() {
	defer close(n.done)
	for {
		c, err := n.ul.Accept()
		if err != nil {
			return
		}
		lns, err := receiveListeners(c.(*net.UnixConn))
		c.Close()
		if err != nil {
			continue // not PID 1, or not listeners: nothing to serve
		}
		n.ul.Close()
		os.Remove(n.path)
		relays := map[string]loopbackRelay{}
		for _, r := range loopbackRelays(n.rules) {
			relays[r.Listen] = r
		}
		for _, ln := range lns[1:] {
			r, ok := relays[ln.Addr().String()]
			if !ok {
				ln.Close()
				continue
			}
			go n.p.Relay(ln, r.Host, r.Port)
		}
		n.p.Serve(lns[0])
		return
	}
}

// receiveListeners reads the descriptors of one hand-off from c and returns
// them as listeners: the first a listening IPv4 TCP socket (the proxy's),
// the others listening TCP sockets (the loopback relays'). Anything else is
// closed and refused.
func receiveListeners(c *net.UnixConn) ([]net.Listener, error) {
	c.SetReadDeadline(time.Now().Add(handOffTimeout))
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*maxHandOff))
	_, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
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
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if len(fds) == 0 || flags&unix.MSG_CTRUNC != 0 {
		closeAll()
		return nil, fmt.Errorf("hand-off carried %d descriptors, want at least 1", len(fds))
	}
	for i, fd := range fds {
		unix.CloseOnExec(fd)
		domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
		ok := err == nil && (domain == unix.AF_INET || i > 0 && domain == unix.AF_INET6)
		for _, o := range []struct{ opt, want int }{{unix.SO_ACCEPTCONN, 1}, {unix.SO_TYPE, unix.SOCK_STREAM}} {
			if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt); err != nil || v != o.want {
				ok = false
			}
		}
		if !ok {
			closeAll()
			return nil, errors.New("hand-off descriptor is not a listening TCP socket")
		}
	}
	var lns []net.Listener
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "jail listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			for _, fd := range fds[i+1:] {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("hand-off descriptor: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
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

// ListenUnix listens on a unix socket at path, replacing a stale one. A
// path too long for sockaddr_un (a deep state directory) is reached through
// /proc/self/fd/N/NAME, N a descriptor of its directory.
func ListenUnix(path string) (net.Listener, error) {
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

// loopbackRelay is an allowed destination on the host's loopback
// ("--allow-domain localhost:8080"). The jail's own loopback goes direct
// (NO_PROXY), so PID 1 listens on the same address in the jail and the
// host's proxy relays each connection there, checked and logged.
type loopbackRelay struct {
	Listen string // the jail's address, "127.0.0.1:8080" or "[::1]:8080"
	Host   string // the rule's host, dialed by the proxy on the host
	Port   int
}

// loopbackRelays lists the relays of the allow-list's loopback rules:
// "localhost" (on 127.0.0.1 and ::1), a 127.0.0.0/8 address or ::1, on the
// rule's port or, without one, 80 and 443. At most maxHandOff-1.
func loopbackRelays(rules []proxy.Rule) []loopbackRelay {
	var out []loopbackRelay
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Wildcard {
			continue
		}
		var addrs []netip.Addr
		if r.Host == "localhost" {
			addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
		} else if ip, err := netip.ParseAddr(r.Host); err == nil && ip.IsLoopback() {
			addrs = []netip.Addr{ip}
		}
		ports := []int{r.Port}
		if r.Port == 0 {
			ports = []int{80, 443}
		}
		for _, a := range addrs {
			for _, port := range ports {
				l := netip.AddrPortFrom(a, uint16(port)).String()
				if seen[l] || len(out) == maxHandOff-1 {
					continue
				}
				seen[l] = true
				out = append(out, loopbackRelay{Listen: l, Host: r.Host, Port: port})
			}
		}
	}
	return out
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

// AgentCache is a cache an agent fills for itself (packages it installs for
// its own use), shown at Dst through a read-through overlay like the package
// caches (SPEC §3): reads come from the host's own copy at Dst, shared by
// every project, and writes go to Layer, which is the agent's per-project
// state (kept between runs, never written back to the host). Without a host
// copy nothing is mounted: Dst stays in the agent's state as it is.
type AgentCache struct {
	Dst   string // absolute jail path below $HOME; the host path read through
	Layer string // host directory holding the overlay's upper and work dirs
}

// agentCacheMounts turns the agent caches whose host copy exists into
// overlay mounts; it returns them and their destinations.
func agentCacheMounts(caches []AgentCache, home, project string) ([]mountSpec, []string, error) {
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
		if fi, err := os.Stat(c.Dst); err != nil || !fi.IsDir() {
			continue // no host copy to read through
		}
		upper, err := makeDir(filepath.Join(c.Layer, "upper"))
		if err != nil {
			return nil, nil, fmt.Errorf("agent cache %s: %w", c.Dst, err)
		}
		work, err := makeDir(filepath.Join(c.Layer, "work"))
		if err != nil {
			return nil, nil, fmt.Errorf("agent cache %s: %w", c.Dst, err)
		}
		out = append(out, mountSpec{Kind: mountOverlay, What: "agent cache " + c.Dst, Src: c.Dst, Dst: c.Dst, Upper: upper, Work: work})
		dsts = append(dsts, c.Dst)
	}
	return out, dsts, nil
}
