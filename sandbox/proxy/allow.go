package proxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one entry of the allow-list.
type Rule struct {
	Host     string // lower case, no trailing dot; for a wildcard, the suffix after "*."
	Wildcard bool   // "*.example.com": any name below example.com, not example.com itself
	Port     int    // 0: ports 80 and 443
}

// String returns the rule as it is written on the command line.
func (r Rule) String() string {
	h := r.Host
	if r.Wildcard {
		h = "*." + h
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Is6() {
		h = "[" + h + "]"
	}
	if r.Port != 0 {
		return h + ":" + strconv.Itoa(r.Port)
	}
	return h
}

// ParseRule parses "HOST[:PORT]", "*.DOMAIN[:PORT]", "IP[:PORT]" or
// "[IPv6][:PORT]".
func ParseRule(s string) (Rule, error) {
	spec := strings.TrimSpace(s)
	if spec == "" {
		return Rule{}, fmt.Errorf("allow-domain %q: empty", s)
	}
	if strings.Contains(spec, "/") {
		return Rule{}, fmt.Errorf("allow-domain %q: give a host, not a URL", s)
	}
	host, port := spec, 0
	if h, p, err := net.SplitHostPort(spec); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("allow-domain %q: bad port %q", s, p)
		}
		host, port = h, n
	} else if strings.HasPrefix(spec, "[") && strings.HasSuffix(spec, "]") {
		host = spec[1 : len(spec)-1]
	}
	r := Rule{Port: port}
	if ip, err := netip.ParseAddr(host); err == nil {
		r.Host = ip.Unmap().String()
		return r, nil
	}
	host = normalizeHost(host)
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard = true
		host = rest
	}
	if !validName(host) {
		return Rule{}, fmt.Errorf("allow-domain %q: %q is not a host name", s, host)
	}
	if r.Wildcard && !strings.Contains(host, ".") {
		return Rule{}, fmt.Errorf("allow-domain %q: a wildcard must name a domain below a top-level domain", s)
	}
	r.Host = host
	return r, nil
}

// ParseRules parses every spec of an allow-list.
func ParseRules(specs []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(specs))
	for _, s := range specs {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// validName accepts LDH labels (and underscores, which exist in the wild).
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// match is how a destination matched the allow-list.
type match int

const (
	noMatch       match = iota
	exactMatch          // the name or IP is listed as such: it may go where it resolves
	wildcardMatch       // matched through "*.": must not resolve to a local address
)

// matchRules checks host (normalized) and port against rules; an exact
// match wins over a wildcard one.
func matchRules(rules []Rule, host string, port int) match {
	// An IP literal matches only a rule naming it: "*.0.1" is not a way to
	// reach 10.0.0.1.
	_, err := netip.ParseAddr(host)
	isIP := err == nil
	best := noMatch
	for _, r := range rules {
		if !portAllowed(r.Port, port) {
			continue
		}
		switch {
		case !r.Wildcard && r.Host == host:
			return exactMatch
		case r.Wildcard && !isIP && strings.HasSuffix(host, "."+r.Host):
			best = wildcardMatch
		}
	}
	return best
}

// ruleFor names the rule of rules that lets host:port through, as the log
// records it: the exact one when there is one, else the first wildcard.
func ruleFor(rules []Rule, host string, port int) string {
	var wild string
	for _, r := range rules {
		if matchRules([]Rule{r}, host, port) == exactMatch {
			return r.String()
		}
		if wild == "" && matchRules([]Rule{r}, host, port) == wildcardMatch {
			wild = r.String()
		}
	}
	return wild
}

func portAllowed(rulePort, port int) bool {
	if rulePort == 0 {
		return port == 80 || port == 443
	}
	return rulePort == port
}

// cgnat is the shared address space of carrier-grade NAT, used for
// in-cloud services.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// LocalAddr reports whether ip is of this machine or its networks: loopback,
// private, link-local, unspecified, multicast or shared (CGNAT) addresses. A
// name matched by a wildcard must not reach one (DNS rebinding onto the host
// or its network); the app warns of an IP literal that is one.
func LocalAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || cgnat.Contains(ip)
}
