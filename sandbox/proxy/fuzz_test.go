package proxy

import (
	"testing"
)

// FuzzParseRule: whatever ParseRule accepts prints back to a rule that
// parses to the same value, and a wildcard never matches an IP literal.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"api.example.com", "API.Example.com.:8443", "*.example.com:443", "10.1.2.3:80",
		"[::1]:8080", "[2001:db8::1]", "*.0.0.1", "*.8.8:443", "my_host.internal", "*.*.com", "x.com:99999", "https://x.com", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %+v, String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		if r.Port < 0 || r.Port > 65535 {
			t.Fatalf("port %d", r.Port)
		}
		if r.Wildcard {
			for _, ip := range []string{"127.0.0.1", "10.0.0.1", "8.8.8.8", "::1"} {
				if matchRules([]Rule{r}, ip, 443) != noMatch {
					t.Fatalf("wildcard %q matches the IP literal %s", s, ip)
				}
			}
		}
	})
}
