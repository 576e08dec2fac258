// Package proxy is the allow-list HTTP and HTTPS (CONNECT) proxy that gives a
// jailed command network access to listed hosts only. It runs on the host
// side, resolves names itself, refuses IP literals that are not listed and,
// for names matched by a wildcard, addresses on the host or its private
// network (DNS rebinding). Every request, allowed or denied, is logged as one
// JSON line.
package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is what a Proxy allows and where it logs.
type Config struct {
	Allow    []Rule                                                            // the allow-list; see ParseRules
	Resolver Resolver                                                          // default net.DefaultResolver
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error) // dials a resolved "IP:port"; default a net.Dialer
	Log      io.Writer                                                         // JSON lines, one per request; nil: none

	// Secrets are put into the headers of requests to their hosts, and
	// refused everywhere else (secret.go). TLS to their hosts is
	// terminated with CA, and the real server verified against Roots.
	Secrets []Secret
	CA      *CA            // required with Secrets: a CONNECT to their hosts is refused without one
	Roots   *x509.CertPool // trusted for the real servers; nil: the host's

	// Ask, when set, is asked about a request off the allow-list instead
	// of refusing it at once (ask.go); no answer within AskTimeout (default
	// 30s) refuses it. A name let through is still refused where it
	// resolves to a local or private address, as a wildcard's name is; an IP
	// literal, which the user saw as it is, goes where it says.
	Ask        Asker
	AskTimeout time.Duration
}

// Entry is one line of the request log.
type Entry struct {
	Time     time.Time `json:"time"`
	Method   string    `json:"method"`           // CONNECT, TCP (a loopback relay), GET, POST, …
	Scheme   string    `json:"scheme,omitempty"` // http, or https for TLS the proxy terminated; empty for a tunnel
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Path     string    `json:"path,omitempty"`   // the request's path and query, where the proxy sees it
	Target   string    `json:"target,omitempty"` // a CONNECT's target, as the client wrote it
	Allowed  bool      `json:"allowed"`
	Rule     string    `json:"rule,omitempty"`    // the allow-list rule that let it through
	Reason   string    `json:"reason,omitempty"`  // why it was denied or failed
	Secrets  []string  `json:"secrets,omitempty"` // the secrets the proxy put into its headers
	Status   int       `json:"status"`            // HTTP status sent to the client
	Up       int64     `json:"bytes_up"`          // bytes from the client to the server
	Down     int64     `json:"bytes_down"`        // bytes from the server to the client
	Duration float64   `json:"duration_ms"`

	denied bool // the policy refused the resolved address
	quiet  bool // not logged: a terminated CONNECT whose requests are
}

// Proxy is an allow-list forward proxy; serve it with Serve.
type Proxy struct {
	cfg   Config
	rp    *httputil.ReverseProxy
	logMu sync.Mutex

	mu        sync.Mutex
	srv       *http.Server
	listeners []net.Listener // Relay's
	tunnels   map[net.Conn]struct{}
	closed    bool

	inflight atomic.Int64 // requests whose log line is not written yet

	ca *CA // Config.CA

	asking asking
}

// closeWait bounds how long Close waits for open requests to log.
const closeWait = 2 * time.Second

// errDenied marks a destination the policy refuses.
type errDenied struct{ reason string }

func (e errDenied) Error() string { return e.reason }

// New returns a proxy for cfg.
func New(cfg Config) *Proxy {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
	}
	p := &Proxy{cfg: cfg, tunnels: map[net.Conn]struct{}{}, ca: cfg.CA}
	transport := &http.Transport{
		TLSClientConfig:       &tls.Config{RootCAs: cfg.Roots, MinVersion: tls.VersionTLS12},
		DialContext:           p.dialChecked,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0,
		ForceAttemptHTTP2:     false,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			// The Host header is the URL's host: a request cannot name one
			// host to the allow-list and another to the server.
			pr.Out.Host = ""
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		Transport:     transport,
		FlushInterval: -1, // stream: server-sent events and chunked replies pass at once
		ErrorHandler:  p.proxyError,
	}
	return p
}

// Serve accepts connections on l until Close; it returns nil after Close.
// l is closed when Serve returns.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	srv := p.srv
	p.mu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and ends every open tunnel and connection. It returns
// once the requests they carried are logged (or after a short bound), so
// that the log may be closed next.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	srv := p.srv
	for _, l := range p.listeners {
		l.Close()
	}
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	for deadline := time.Now().Add(closeWait); p.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return err
}

// ServeHTTP handles one proxy request: CONNECT host:port, or a request in
// absolute form (http://host/path).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	start := time.Now()
	e := &Entry{Time: start.UTC(), Method: r.Method}
	defer func() {
		e.Duration = float64(time.Since(start).Microseconds()) / 1000
		if !e.quiet {
			p.log(e)
		}
		p.inflight.Add(-1)
	}()

	var hostport string
	defPort := 80
	switch {
	case r.Method == http.MethodConnect:
		hostport, defPort = r.Host, 443
		e.Target = r.Host
	case r.URL.IsAbs() && (r.URL.Scheme == "http" || r.URL.Scheme == "https"):
		hostport = r.URL.Host
		e.Scheme, e.Path = r.URL.Scheme, r.URL.RequestURI()
		if r.URL.Scheme == "https" {
			defPort = 443
		}
	default:
		e.Reason = "not a proxy request"
		e.Status = http.StatusBadRequest
		http.Error(w, "shadow proxy: send requests in absolute form or CONNECT", e.Status)
		return
	}
	host, port, err := splitHostPort(hostport, defPort)
	if err != nil {
		e.Reason = err.Error()
		e.Status = http.StatusBadRequest
		http.Error(w, "shadow proxy: "+err.Error(), e.Status)
		return
	}
	e.Host, e.Port = host, port
	if matchRules(p.cfg.Allow, host, port) == noMatch {
		ok, why := false, "not in the allow-list"
		if p.cfg.Ask != nil {
			ok, why = p.ask(Question{Host: host, Port: port, Method: r.Method, Path: e.Path})
		}
		if !ok {
			e.Reason = why
			e.Status = http.StatusForbidden
			http.Error(w, fmt.Sprintf("shadow proxy: %s is not in the allow-list (--allow-domain)", net.JoinHostPort(host, strconv.Itoa(port))), e.Status)
			return
		}
		e.Rule = why
		r = r.WithContext(context.WithValue(r.Context(), grantKey{}, net.JoinHostPort(host, strconv.Itoa(port))))
	} else {
		e.Rule = ruleFor(p.cfg.Allow, host, port)
	}
	put, err := p.applySecrets(r, host, port, r.Method != http.MethodConnect && r.URL.Scheme == "http")
	if err != nil {
		p.refuseSecret(w, e, err)
		return
	}
	e.Secrets = put
	if r.Method == http.MethodConnect {
		if p.secretHost(host, port) {
			if p.ca == nil {
				p.refuseSecret(w, e, errors.New("a secret goes to this host, and the proxy has no CA to terminate its TLS with"))
				return
			}
			p.terminate(w, r, e)
			return
		}
		p.tunnel(w, r, e)
		return
	}
	p.forward(w, r, e)
}

// refuseSecret answers a request that carries a placeholder where it may
// not go.
func (p *Proxy) refuseSecret(w http.ResponseWriter, e *Entry, err error) {
	e.Allowed, e.Reason, e.Status = false, err.Error(), http.StatusForbidden
	http.Error(w, "shadow proxy: refused: "+err.Error(), e.Status)
}

// forward relays a plain HTTP request.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, e *Entry) {
	ctx := context.WithValue(r.Context(), entryKey{}, e)
	body := &countReader{r: r.Body}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = body
	}
	cw := &countWriter{ResponseWriter: w}
	p.rp.ServeHTTP(cw, r.WithContext(ctx))
	e.Up, e.Down = body.n.Load(), cw.n
	if e.Reason != "" {
		e.Down = 0 // only the proxy's own error page was sent
	}
	e.Status = cw.status
	e.Allowed = !e.denied
}

type entryKey struct{}

// proxyError answers a request the proxy could not complete: the policy
// refused its address, or the server could not be reached.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	e, _ := r.Context().Value(entryKey{}).(*Entry)
	status := http.StatusBadGateway
	var d errDenied
	var sr secretRefusal
	if errors.As(err, &d) || errors.As(err, &sr) {
		status = http.StatusForbidden
	}
	if errors.As(err, &sr) {
		err = sr // not the transport's wrapping of it
	}
	if e != nil {
		e.Reason = err.Error()
		e.denied = status == http.StatusForbidden
	}
	http.Error(w, "shadow proxy: "+err.Error(), status)
}

// tunnel answers CONNECT: dial, then copy both ways.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, e *Entry) {
	upstream, err := p.dialChecked(r.Context(), "tcp", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
	if err != nil {
		e.Reason = err.Error()
		e.Status = http.StatusBadGateway
		var d errDenied
		if errors.As(err, &d) {
			e.Status = http.StatusForbidden
		} else {
			e.Allowed = true // allowed, but the server could not be reached
		}
		http.Error(w, "shadow proxy: "+err.Error(), e.Status)
		return
	}
	rc := http.NewResponseController(w)
	client, buf, err := rc.Hijack()
	if err != nil {
		upstream.Close()
		e.Reason = "hijack: " + err.Error()
		e.Status = http.StatusInternalServerError
		http.Error(w, "shadow proxy: cannot tunnel", e.Status)
		return
	}
	if !p.track(client, upstream) {
		client.Close()
		upstream.Close()
		return
	}
	defer p.untrack(client, upstream)
	e.Allowed, e.Status = true, http.StatusOK
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	var up, down int64
	done := make(chan struct{})
	go func() {
		// Bytes the client sent right after its CONNECT may sit in buf.
		up, _ = io.Copy(upstream, io.MultiReader(io.LimitReader(buf, int64(buf.Reader.Buffered())), client))
		closeWrite(upstream)
		close(done)
	}()
	down, _ = io.Copy(client, upstream)
	closeWrite(client)
	<-done
	client.Close()
	upstream.Close()
	e.Up, e.Down = up, down
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.tunnels, c)
	}
}

// dialChecked resolves addr's host itself, drops the addresses the policy
// refuses, and dials one that remains: the address checked is the address
// dialed, so a name cannot be rebound in between.
func (p *Proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	host = normalizeHost(host)
	port, _ := strconv.Atoi(portStr)
	m := matchRules(p.cfg.Allow, host, port)
	if m == noMatch && p.grantedFor(ctx, host, port) {
		m = wildcardMatch // the user saw a name, not where it resolves
		if _, err := netip.ParseAddr(host); err == nil {
			m = exactMatch // the user saw the address itself
		}
	}
	if m == noMatch {
		return nil, errDenied{"not in the allow-list"}
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip} // listed exactly: matchRules never lets a wildcard match an IP
	} else {
		addrs, err = p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
	}
	var ok []netip.Addr
	for _, a := range addrs {
		if m == wildcardMatch && LocalAddr(a) {
			continue
		}
		ok = append(ok, a.Unmap())
	}
	if len(ok) == 0 {
		return nil, errDenied{fmt.Sprintf("%s matches a wildcard but resolves to a local or private address (%v)", host, addrs)}
	}
	var firstErr error
	for _, a := range ok {
		c, err := p.cfg.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// splitHostPort reads "host[:port]" with a default port; the host comes back
// normalized.
func splitHostPort(hp string, defPort int) (string, int, error) {
	host, port := hp, defPort
	if h, p, err := net.SplitHostPort(hp); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("bad port in %q", hp)
		}
		host, port = h, n
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]")
	}
	if host == "" {
		return "", 0, fmt.Errorf("no host in %q", hp)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String(), port, nil
	}
	return normalizeHost(host), port, nil
}

func (p *Proxy) log(e *Entry) {
	if p.cfg.Log == nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	p.logMu.Lock()
	p.cfg.Log.Write(b)
	p.logMu.Unlock()
}

type countReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countReader) Close() error { return c.r.Close() }

type countWriter struct {
	http.ResponseWriter
	n      int64
	status int
}

func (c *countWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (c *countWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Relay serves raw TCP connections accepted on l as tunnels to host:port,
// checked against the allow-list and logged like a CONNECT (method "TCP").
// It carries an allowed loopback destination ("localhost:8080") that a
// client inside the jail reaches directly rather than through the proxy:
// the jail's own loopback goes direct (NO_PROXY), so such a port of the
// jail's lo is listened on and relayed here. It returns when l is closed or
// on Close; l is closed when Relay returns.
func (p *Proxy) Relay(l net.Listener, host string, port int) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return nil
	}
	p.listeners = append(p.listeners, l)
	p.mu.Unlock()
	defer l.Close()
	host = normalizeHost(host)
	for {
		c, err := l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		p.inflight.Add(1)
		go p.relayConn(c, host, port)
	}
}

// relayConn tunnels one relayed connection; its caller counted it in
// inflight.
func (p *Proxy) relayConn(client net.Conn, host string, port int) {
	start := time.Now()
	e := &Entry{Time: start.UTC(), Method: "TCP", Host: host, Port: port}
	defer func() {
		e.Duration = float64(time.Since(start).Microseconds()) / 1000
		p.log(e)
		p.inflight.Add(-1)
	}()
	defer client.Close()
	if matchRules(p.cfg.Allow, host, port) == noMatch {
		e.Reason, e.Status = "not in the allow-list", http.StatusForbidden
		return
	}
	e.Rule = ruleFor(p.cfg.Allow, host, port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	upstream, err := p.dialChecked(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	cancel()
	if err != nil {
		e.Reason, e.Status = err.Error(), http.StatusBadGateway
		var d errDenied
		if errors.As(err, &d) {
			e.Status = http.StatusForbidden
		} else {
			e.Allowed = true
		}
		return
	}
	defer upstream.Close()
	if !p.track(client, upstream) {
		return
	}
	defer p.untrack(client, upstream)
	e.Allowed, e.Status = true, http.StatusOK
	var up int64
	done := make(chan struct{})
	go func() {
		up, _ = io.Copy(upstream, client)
		closeWrite(upstream)
		close(done)
	}()
	e.Down, _ = io.Copy(client, upstream)
	closeWrite(client)
	<-done
	e.Up = up
}
