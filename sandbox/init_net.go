package sandbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PID 1's side of the network: the proxy's port and the loopback relays it
// listens on and hands to the host (proxy_jail.go has the host's side), and
// the published ports it relays into the jail (net.go).

// proxySocket is the hand-off socket in the runtime directory.
const proxySocket = "proxy.sock"

// handOffTimeout bounds how long the host waits for a connection's
// descriptor on the hand-off socket.
const handOffTimeout = 5 * time.Second

// maxHandOff bounds the descriptors one hand-off carries: the proxy's
// listener and the loopback relays' (loopbackRelays keeps to it).
const maxHandOff = 64

// listenProxyPort runs in PID 1: it listens on a free port of the jail's
// own loopback, the address the command is given as its proxy.
func listenProxyPort() (net.Listener, int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, fmt.Errorf("listen on the jail's 127.0.0.1: %w", err)
	}
	return ln, ln.Addr().(*net.TCPAddr).Port, nil
}

// handOffProxyListener runs in PID 1: it hands the listening socket ln,
// then the loopback relays' listeners, over to the host's proxy through the
// hand-off socket sock, then closes its own copies; from then on the host
// accepts the command's connections directly. On failure they are closed
// too, so the command's connections are refused rather than left hanging.
func handOffProxyListener(ln net.Listener, relays []net.Listener, sock string) error {
	all := append([]net.Listener{ln}, relays...)
	defer func() {
		for _, l := range all {
			l.Close()
		}
	}()
	var fds []int
	for _, l := range all {
		f, err := l.(*net.TCPListener).File()
		if err != nil {
			return fmt.Errorf("proxy listener: %w", err)
		}
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	c, err := net.DialTimeout("unix", sock, handOffTimeout)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", sock, err)
	}
	defer c.Close()
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte{0}, unix.UnixRights(fds...), nil); err != nil {
		return fmt.Errorf("hand the proxy listener over on %s: %w", sock, err)
	}
	return nil
}

// listenLoopbackRelays runs in PID 1: it listens on each relay address of
// the jail's lo. An address that cannot be had (no IPv6 on this kernel) is
// left out: the host relays what it is handed.
func listenLoopbackRelays(addrs []string) []net.Listener {
	var out []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			if !strings.HasPrefix(a, "[") {
				fmt.Fprintf(os.Stderr, "shadow: cannot relay %s into the jail: %v\n", a, err)
			}
			continue
		}
		out = append(out, ln)
	}
	return out
}

// jailNoProxy is what goes direct rather than through the proxy: the
// jail's own loopback, where the command's own servers listen (an allowed
// loopback destination of the host is relayed there). Every form, since
// clients differ: CIDR for Go, curl and Python, names and addresses for
// Node's.
const jailNoProxy = "localhost,127.0.0.1,::1,127.0.0.0/8,[::1]"

// proxyEnv points the command's HTTP clients at the relay on port: the
// proxy variables in both cases, NO_PROXY for the jail's loopback only
// (nothing else bypasses the allow-list; there is nothing else to reach
// directly), and NODE_USE_ENV_PROXY so that Node's own fetch uses them.
func proxyEnv(env []string, port int) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	for _, kv := range [][2]string{
		{"HTTP_PROXY", u}, {"HTTPS_PROXY", u}, {"ALL_PROXY", u},
		{"http_proxy", u}, {"https_proxy", u}, {"all_proxy", u},
		{"NO_PROXY", jailNoProxy}, {"no_proxy", jailNoProxy}, {"NODE_USE_ENV_PROXY", "1"},
	} {
		env = setEnv(env, kv[0], kv[1])
	}
	return env
}

// servePublish runs in PID 1: it accepts relayed connections and dials the
// jail's 127.0.0.1:PORT for each, for the listed ports only.
func servePublish(ln net.Listener, ports []int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var hdr [2]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			port := int(binary.BigEndian.Uint16(hdr[:]))
			if !slices.Contains(ports, port) {
				return
			}
			t, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
			if err != nil {
				return
			}
			defer t.Close()
			relay(c, t)
		}()
	}
}

// relay copies both ways until both directions are done.
func relay(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}
