package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// BenchmarkRequest measures one small HTTP request over a kept-alive
// connection, straight to the server and through the proxy; the difference
// of the two ns/op is the latency the proxy adds (SPEC §9: at most 1 ms).
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	e := startProxy(b, []string{"api.test:" + port}, map[string][]netip.Addr{"api.test": addrs("127.0.0.1")})

	run := func(b *testing.B, c *http.Client, url string) {
		for b.Loop() {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		run(b, &http.Client{Transport: &http.Transport{}}, srv.URL+"/")
	})
	b.Run("proxy", func(b *testing.B) {
		run(b, e.client(), "http://api.test:"+port+"/")
	})
	// A new connection per request: CONNECT tunnel setup against a plain
	// TCP connect.
	b.Run("direct-newconn", func(b *testing.B) {
		run(b, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, srv.URL+"/")
	})
	b.Run("proxy-newconn", func(b *testing.B) {
		run(b, &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.proxyURL), DisableKeepAlives: true}}, "http://api.test:"+port+"/")
	})
}

// BenchmarkTerminated measures a small HTTPS request with a secret put in,
// straight to the server and through the proxy terminating TLS: on a
// kept-alive connection (the difference of ns/op is the latency the proxy
// adds; SPEC §14: at most 1 ms) and with a new connection each time (the
// cost of the two handshakes the proxy adds).
func BenchmarkTerminated(b *testing.B) {
	srv, port, roots, _ := tlsBackend(b, "api.test")
	e := startSecretProxy(b, []string{"api.test:" + port}, []string{"api.test"},
		map[string][]netip.Addr{"api.test": addrs("127.0.0.1")}, roots)
	run := func(b *testing.B, c *http.Client, url string) {
		for b.Loop() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("X-Api-Key", testPlaceholder)
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	direct := func(keepAlive bool) *http.Client {
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive,
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "api.test"}}}
	}
	proxied := func(keepAlive bool) *http.Client {
		c := e.trusting()
		c.Transport.(*http.Transport).DisableKeepAlives = !keepAlive
		return c
	}
	_ = srv
	b.Run("direct", func(b *testing.B) { run(b, direct(true), "https://127.0.0.1:"+port+"/") })
	b.Run("proxy", func(b *testing.B) { run(b, proxied(true), "https://api.test:"+port+"/") })
	b.Run("direct-newconn", func(b *testing.B) { run(b, direct(false), "https://127.0.0.1:"+port+"/") })
	b.Run("proxy-newconn", func(b *testing.B) { run(b, proxied(false), "https://api.test:"+port+"/") })
}
