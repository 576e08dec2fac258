package sandbox

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// A secret for a host the jail reaches directly (every entry of its NO_PROXY) cannot be put
// into requests: the run says so rather than sending the placeholder silently.
func TestLoopbackSecretHostWarns(t *testing.T) {
	var direct []string
	for _, e := range strings.Split(jailNoProxy, ",") {
		if pfx, err := netip.ParsePrefix(e); err == nil {
			direct = append(direct, pfx.Addr().String(), pfx.Addr().Next().String(), pfx.Masked().Addr().String())
			continue
		}
		direct = append(direct, e)
	}
	var forms []string
	for _, h := range direct {
		forms = append(forms, h, strings.ToUpper(h))
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			forms = append(forms, netip.AddrPortFrom(a, 8443).String())
		} else {
			forms = append(forms, h+":8443", h+".")
		}
	}
	forms = append(forms, "127.255.255.254:1", "[::ffff:127.0.0.1]:80")
	for _, h := range forms {
		var w bytes.Buffer
		p := Policy{Secrets: []proxy.Secret{{Name: "K", Value: "v", Hosts: []string{h}}}}
		spec := &jailSpec{Proxy: true, SystemDirs: systemDirs()}
		if _, err := setUpSecrets(p, spec, t.TempDir(), &w); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(w.String(), "--secret K for "+h+":") || !strings.Contains(w.String(), "placeholder") {
			t.Errorf("secret host %s: warning %q, want one naming it", h, w.String())
		}
	}
	for _, h := range []string{"vm:8443", "api.anthropic.com", "10.0.0.1", "[2001:db8::1]:443", "localhost.example.com", "128.0.0.1"} {
		var w bytes.Buffer
		p := Policy{Secrets: []proxy.Secret{{Name: "K", Value: "v", Hosts: []string{h}}}}
		if _, err := setUpSecrets(p, &jailSpec{Proxy: true, SystemDirs: systemDirs()}, t.TempDir(), &w); err != nil {
			t.Fatal(err)
		}
		if w.Len() != 0 {
			t.Errorf("secret host %s goes through the proxy, yet: %s", h, w.String())
		}
	}
}
