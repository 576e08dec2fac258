package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// terminateTimeout bounds the client's TLS handshake with the proxy.
const terminateTimeout = 10 * time.Second

// terminate answers a CONNECT to a host a secret goes to: rather than a
// tunnel, the proxy is the TLS server (a certificate for the CONNECT
// target, signed by the session's CA) and relays each request inside to
// the real server over TLS of its own, verified against Config.Roots. A
// client that does not trust the CA fails the handshake and nothing is
// sent on: there is no fallback to a tunnel. A client hello naming another
// server than the target is refused, and so is a request inside whose Host
// differs from it.
func (p *Proxy) terminate(w http.ResponseWriter, r *http.Request, e *Entry) {
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		e.Reason = "hijack: " + err.Error()
		e.Status = http.StatusInternalServerError
		http.Error(w, "shadow proxy: cannot tunnel", e.Status)
		return
	}
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	var raw net.Conn = client
	if n := buf.Reader.Buffered(); n > 0 {
		raw = &prefixConn{Conn: client, r: io.MultiReader(io.LimitReader(buf, int64(n)), client)}
	}
	host, port, rule := e.Host, e.Port, e.Rule
	tc := tls.Server(raw, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			sni := normalizeHost(hello.ServerName)
			if sni != host && !(sni == "" && isIPLiteral(host)) {
				return nil, fmt.Errorf("the TLS server name %q differs from the CONNECT target %s", hello.ServerName, host)
			}
			return p.ca.leaf(host)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		e.Scheme = "https"
		e.Status = http.StatusForbidden
		e.Reason = "TLS with the session's CA failed, nothing was sent on: " + err.Error()
		return
	}
	// The requests inside are logged each; the CONNECT that carried them is not.
	e.quiet = true
	done := make(chan struct{})
	var once sync.Once
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.serveTerminated(w, r, host, port, rule)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				once.Do(func() { close(done) })
			}
		},
	}
	go srv.Serve(&oneConnListener{c: tc, done: done})
	<-done
}

// serveTerminated relays one request that arrived inside TLS the proxy
// terminated for CONNECT host:port, and logs it.
func (p *Proxy) serveTerminated(w http.ResponseWriter, r *http.Request, host string, port int, rule string) {
	p.inflight.Add(1)
	start := time.Now()
	e := &Entry{Time: start.UTC(), Method: r.Method, Scheme: "https", Host: host, Port: port,
		Path: r.URL.RequestURI(), Rule: rule}
	defer func() {
		e.Duration = float64(time.Since(start).Microseconds()) / 1000
		p.log(e)
		p.inflight.Add(-1)
	}()
	authority := hostPort(host, port, 443)
	if h, pt, err := splitHostPort(r.Host, 443); err != nil || h != host || pt != port {
		e.Reason = fmt.Sprintf("the Host header %q differs from the CONNECT target %s", r.Host, authority)
		e.Status = http.StatusMisdirectedRequest
		http.Error(w, "shadow proxy: refused: "+e.Reason, e.Status)
		return
	}
	put, err := p.applySecrets(r, host, port, false)
	if err != nil {
		p.refuseSecret(w, e, err)
		return
	}
	e.Secrets = put
	r.URL.Scheme, r.URL.Host = "https", authority
	p.forward(w, r, e)
}

// hostPort writes host:port, leaving out the scheme's default port.
func hostPort(host string, port, def int) string {
	if port == def {
		if isIPLiteral(host) && netip.MustParseAddr(host).Is6() {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func isIPLiteral(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// prefixConn reads first what the CONNECT's reader had buffered.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener hands an http.Server one connection, then waits for it
// to end.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }
