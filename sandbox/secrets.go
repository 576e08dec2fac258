//go:build !shadowinit

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// Secrets (SPEC §14, Policy.Secrets): the jail's variable holds a
// placeholder, and the allow-list proxy on the host puts the real value in
// its place in the headers of requests to the secret's hosts. To see those
// requests the proxy terminates their TLS with a CA made for the run: the
// jail trusts its certificate (the system bundle with it added, bound over
// the distro's bundle and named by the variables clients read), and its key
// stays in this process's memory, on the host side of the jail.

// caBundlePaths are where distributions keep the system's trust bundle, the
// file OpenSSL, GnuTLS and most clients read: Debian and its kin, Fedora and
// RHEL, openSUSE, and the names Alpine and Arch link to them.
var caBundlePaths = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// caBundleEnv are the variables through which clients are told the bundle:
// OpenSSL and Go (SSL_CERT_FILE), Node (NODE_EXTRA_CA_CERTS), Python's
// requests, curl, and git.
var caBundleEnv = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// caBundleFile is the bundle's name in the runtime directory, from where it
// is bound over the distro's.
const caBundleFile = "ca-bundle.crt"

// runSecrets is what the proxy of a run needs for its secrets.
type runSecrets struct {
	ca      *proxy.CA
	secrets []proxy.Secret
}

// setUpSecrets gives each of p's secrets a placeholder (unless it has one)
// and sets it in the command's environment, makes the run's CA, and binds
// the system bundle with the CA's certificate added over the distro's
// bundle files. Without the proxy there is nothing to put a secret in: the
// variables are left out and a warning says so.
func setUpSecrets(p Policy, s *jailSpec, runtimeDir string, warn io.Writer) (*runSecrets, error) {
	if len(p.Secrets) == 0 {
		return nil, nil
	}
	var names []string
	for _, sec := range p.Secrets {
		names = append(names, sec.Name)
	}
	if !s.Proxy {
		fmt.Fprintf(warn, "shadow: warning: %s not set in the jail: a secret is put into requests by the allow-list proxy, "+
			"which runs with --allow-domain and without --allow-network (--env %s gives the agent the value itself)\n",
			strings.Join(names, ", "), strings.Join(names, " --env "))
		return nil, nil
	}
	ca, err := proxy.NewCA()
	if err != nil {
		return nil, err
	}
	rs := &runSecrets{ca: ca}
	for _, sec := range p.Secrets {
		warnLoopbackSecretHosts(warn, sec)
		if sec.Placeholder == "" {
			sec.Placeholder = proxy.NewPlaceholder(sec.Name)
		}
		s.Exec.Env = setEnv(s.Exec.Env, sec.Name, sec.Placeholder)
		rs.secrets = append(rs.secrets, sec)
	}
	bundles, system, err := systemBundles(s.SystemDirs)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(system)
	if err != nil {
		return nil, fmt.Errorf("read the system's CA bundle: %w", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	data = append(data, ca.CertPEM()...)
	bundle := filepath.Join(runtimeDir, caBundleFile)
	if err := os.WriteFile(bundle, data, 0o644); err != nil {
		return nil, fmt.Errorf("write the jail's CA bundle: %w", err)
	}
	for _, b := range bundles {
		s.Mounts = append(s.Mounts, mountSpec{Kind: mountBind, What: "CA bundle " + b, Src: bundle, Dst: b, ReadOnly: true})
	}
	for _, v := range caBundleEnv {
		s.Exec.Env = setEnv(s.Exec.Env, v, system)
	}
	return rs, nil
}

// warnLoopbackSecretHosts warns of each of sec's hosts that is a loopback
// address: the jail reaches those directly (NO_PROXY) and what it sends to
// them is relayed to the host's loopback as it is, so the proxy sees no
// request to put the value into, and the service gets the placeholder.
func warnLoopbackSecretHosts(w io.Writer, sec proxy.Secret) {
	for _, h := range sec.Hosts {
		host := h
		if hh, _, err := net.SplitHostPort(h); err == nil {
			host = hh
		}
		if !loopbackName(host) {
			continue
		}
		fmt.Fprintf(w, "shadow: warning: --secret %s for %s: the jail reaches a loopback address directly and the bytes go "+
			"to the host's loopback as they are, so %s there is the placeholder, not the value; "+
			"name the service by a host name that resolves to it (an /etc/hosts entry) to have the proxy put the value in, "+
			"or pass it with --env %s\n", sec.Name, h, sec.Name, sec.Name)
	}
}

// loopbackName reports whether host is what the jail's NO_PROXY sends
// directly: localhost, 127.0.0.0/8 or ::1.
func loopbackName(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// systemBundles returns the real paths of the distro's bundle files (each
// of caBundlePaths that exists, its links followed, within the system
// trees the jail shows), and the first of them, whose content the jail's
// bundle starts with and the variables name.
func systemBundles(systemDirs []string) ([]string, string, error) {
	var out []string
	seen := map[string]bool{}
	for _, b := range caBundlePaths {
		real, err := filepath.EvalSymlinks(b)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() || seen[real] {
			continue
		}
		shown := false
		for _, d := range systemDirs {
			shown = shown || within(real, d)
		}
		if shown {
			seen[real] = true
			out = append(out, real)
		}
	}
	if len(out) == 0 {
		return nil, "", errors.New("no system CA bundle (" + strings.Join(caBundlePaths, ", ") + ") to add the session's CA to")
	}
	return out, out[0], nil
}
