package proxy

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Secret is a credential the jail holds only a placeholder of (SPEC §14):
// the proxy puts Value in place of Placeholder in the headers of requests
// to Hosts, and refuses any other request that carries Placeholder.
type Secret struct {
	Name        string   // the variable, ANTHROPIC_API_KEY
	Placeholder string   // what the jail's variable holds (NewPlaceholder)
	Value       string   `json:"-"` // the real value; never logged, never shown
	Hosts       []string // "host" (any port) or "host:port"; names, IP literals or "*.domain"
}

// NewPlaceholder returns a fresh placeholder for the variable name: random,
// and recognisable in a log or a leaked file as shadow's.
func NewPlaceholder(name string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return "shadow-secret-" + name + "-" + hex.EncodeToString(b)
}

// IsPlaceholder reports whether value is a placeholder NewPlaceholder made for the variable name:
// what the jail holds in place of a secret the proxy keeps.
func IsPlaceholder(name, value string) bool {
	rest, ok := strings.CutPrefix(value, "shadow-secret-"+name+"-")
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// CheckSecretHost checks one host of a secret's list, as --secret takes it.
func CheckSecretHost(h string) error {
	host, _, err := parseSecretHost(h)
	if err != nil {
		return err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !validName(strings.TrimPrefix(host, "*.")) {
		return fmt.Errorf("%q is not a host name", h)
	}
	return nil
}

// parseSecretHost reads "host" or "host:port"; port 0 is any port.
func parseSecretHost(h string) (string, int, error) {
	h = strings.TrimSpace(h)
	if h == "" || strings.Contains(h, "/") {
		return "", 0, fmt.Errorf("%q: give a host, not a URL", h)
	}
	if host, p, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("%q: bad port", h)
		}
		h = host
		host, _, err := splitHostPort(h, 0)
		return host, n, err
	}
	host, _, err := splitHostPort(h, 0)
	return host, 0, err
}

// goesTo reports whether the secret may be sent to host:port.
func (s *Secret) goesTo(host string, port int) bool {
	_, err := netip.ParseAddr(host)
	isIP := err == nil
	for _, h := range s.Hosts {
		sh, sp, err := parseSecretHost(h)
		if err != nil || sp != 0 && sp != port {
			continue
		}
		if sh == host || !isIP && strings.HasPrefix(sh, "*.") && strings.HasSuffix(host, sh[1:]) {
			return true
		}
	}
	return false
}

// secretHost reports whether some secret goes to host:port: the proxy
// terminates TLS there, to see the requests it puts the secret in.
func (p *Proxy) secretHost(host string, port int) bool {
	for i := range p.cfg.Secrets {
		if p.cfg.Secrets[i].goesTo(host, port) {
			return true
		}
	}
	return false
}

// secretRefusal is why a request that carries a placeholder where it may
// not go is refused.
type secretRefusal struct {
	name, where string
}

func (e secretRefusal) Error() string {
	return fmt.Sprintf("the request carries the placeholder of %s in its %s, which %s may not go to", e.name, e.where, e.name)
}

// Forms of a placeholder: the proxy recognises it as it is (in any case) and
// base64-encoded (Basic authentication's user:password, or any other
// base64), in either alphabet. encodedForms lists what base64 holding it
// contains.

// encodings are the base64 alphabets a placeholder is looked for in.
var encodings = []*base64.Encoding{base64.StdEncoding, base64.URLEncoding}

// encodedForms returns the text any base64 of bytes holding placeholder
// contains, whatever the bytes around it: for each alphabet and each of
// the three places the placeholder can start in base64's groups of three
// bytes, the characters of the groups that hold only its bytes.
func encodedForms(placeholder string) []string {
	var out []string
	for _, enc := range encodings {
		for lead := range 3 { // the placeholder's bytes in a group shared with what comes before
			body := placeholder[lead:]
			body = body[:len(body)/3*3]
			f := enc.EncodeToString([]byte(body))
			if f != "" && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// encodedIn reports whether s holds the placeholder in one of forms.
func encodedIn(s string, forms []string) bool {
	for _, f := range forms {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// withBasicValue returns v, a header value holding s's placeholder
// base64-encoded, with s's value in its place, when v is a Basic
// credential (RFC 7617) that holds the placeholder as it is.
func withBasicValue(v string, s *Secret) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil || !strings.Contains(string(dec), s.Placeholder) {
		return "", false
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(dec), s.Placeholder, s.Value))), true
}

// applySecrets checks r, a request to host:port, against the secrets: a
// placeholder, in any of its forms, in the URL, or in the headers of a
// request to a host its secret does not go to, refuses the request; in the
// headers of one to a host it goes to, the real value takes its place (in
// a Basic credential, encoded again; another encoded form, which the value
// cannot be put into, refuses it). A body to a host a secret does not go
// to is read through a guard that fails the request on its placeholder in
// any form. A request the proxy sends on in clear text (plain) gets a
// value only when it stays on this machine (loopback): the network never
// sees one unencrypted. It returns the names of the secrets put in.
func (p *Proxy) applySecrets(r *http.Request, host string, port int, plain bool) ([]string, error) {
	if len(p.cfg.Secrets) == 0 {
		return nil, nil
	}
	var put []string
	var guard [][]byte
	var guarded []string // the secret of each of guard
	uri := r.URL.String()
	for i := range p.cfg.Secrets {
		s := &p.cfg.Secrets[i]
		if s.Placeholder == "" {
			continue
		}
		forms := encodedForms(s.Placeholder)
		if containsFold(uri, s.Placeholder) || containsFold(r.Host, s.Placeholder) || encodedIn(uri, forms) || encodedIn(r.Host, forms) {
			return nil, secretRefusal{s.Name, "URL"}
		}
		ok := s.goesTo(host, port)
		if !ok {
			for _, f := range append([]string{s.Placeholder}, forms...) {
				guard, guarded = append(guard, []byte(strings.ToLower(f))), append(guarded, s.Name)
			}
		}
		found := false
		for k, vs := range r.Header {
			if containsFold(k, s.Placeholder) || encodedIn(k, forms) { // names come canonicalized
				return nil, secretRefusal{s.Name, "headers"}
			}
			for j, v := range vs {
				encoded := encodedIn(v, forms)
				if !encoded && !containsFold(v, s.Placeholder) {
					continue
				}
				if !ok {
					return nil, secretRefusal{s.Name, "headers"}
				}
				if plain && !loopbackHost(host) {
					return nil, fmt.Errorf("the request would carry the value of %s unencrypted over the network: use https", s.Name)
				}
				if encoded {
					nv, ok := withBasicValue(v, s)
					if !ok {
						return nil, secretRefusal{s.Name, "headers, base64-encoded other than as a Basic credential,"}
					}
					vs[j] = nv
					found = true
					continue
				}
				if !strings.Contains(v, s.Placeholder) {
					return nil, secretRefusal{s.Name, "headers, changed in case,"}
				}
				vs[j] = strings.ReplaceAll(v, s.Placeholder, s.Value)
				found = true
			}
		}
		if found {
			put = append(put, s.Name)
		}
	}
	if len(guard) > 0 && r.Body != nil && r.Body != http.NoBody {
		r.Body = &guardReader{r: r.Body, pats: guard, names: guarded}
	}
	return put, nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// guardReader passes a request body on (pats are lower case, and so is
// what it compares them with), holding back the bytes that could
// begin a placeholder until it is sure they do not, and fails once one is
// seen: the server gets no byte of it.
type guardReader struct {
	r     io.ReadCloser
	pats  [][]byte
	names []string
	held  []byte // read, not yet passed on
	ready []byte // checked, to pass on
	err   error
}

func (g *guardReader) Read(b []byte) (int, error) {
	for len(g.ready) == 0 {
		if g.err != nil {
			if errors.Is(g.err, io.EOF) && len(g.held) > 0 {
				g.ready, g.held = g.held, nil
				break
			}
			return 0, g.err
		}
		buf := make([]byte, 32<<10)
		n, err := g.r.Read(buf)
		g.held = append(g.held, buf[:n]...)
		low := bytes.ToLower(g.held)
		for i, pat := range g.pats {
			if bytes.Contains(low, pat) {
				g.err = secretRefusal{g.names[i], "body"}
				g.held = nil
				return 0, g.err
			}
		}
		g.err = err
		keep := 0
		for _, pat := range g.pats {
			keep = max(keep, len(pat)-1)
		}
		if err == nil && len(g.held) > keep {
			cut := len(g.held) - keep
			g.ready = append([]byte(nil), g.held[:cut]...)
			g.held = append(g.held[:0:0], g.held[cut:]...)
		}
	}
	n := copy(b, g.ready)
	g.ready = g.ready[n:]
	return n, nil
}

func (g *guardReader) Close() error { return g.r.Close() }
