package audit

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
)

// interfaces returns the interface names of /proc/net/dev.
func (s *scan) interfaces() ([]string, error) {
	b, err := s.env.readFile("/proc/net/dev", 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read /proc/net/dev: %w", err)
	}
	return ParseNetDev(b), nil
}

func onlyLoopback(ifs []string) bool {
	for _, i := range ifs {
		if i != "lo" {
			return false
		}
	}
	return true
}

// checkNET001: TCP listeners on the unspecified address.
func checkNET001(s *scan) outcome {
	var socks []Socket
	readable := 0
	for _, p := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := s.env.readFile(p, 64<<20)
		if err != nil {
			continue
		}
		readable++
		ss, err := ParseProcNetTCP(b)
		if err != nil {
			return skipped("parse %s: %v", p, err)
		}
		socks = append(socks, ss...)
	}
	if readable == 0 {
		return skipped("neither /proc/net/tcp nor /proc/net/tcp6 is readable")
	}
	var open []Socket
	local := 0
	for _, so := range socks {
		if !so.Listening() {
			continue
		}
		if so.Local.Addr().Unmap().IsUnspecified() {
			open = append(open, so)
		} else {
			local++
		}
	}
	if len(open) == 0 {
		return passed(note("no listener on 0.0.0.0 or :: (%s on specific addresses)", english.Count(local, "listener")))
	}
	owners := s.socketOwners(open)
	var ev []Evidence
	for _, so := range open {
		who := fmt.Sprintf("uid %d", so.UID)
		if o, ok := owners[so.Inode]; ok {
			who += ", " + o
		}
		ev = append(ev, note("listening on %s (%s)", so.Local, who))
	}
	if ifs, err := s.interfaces(); err == nil && onlyLoopback(ifs) {
		return passed(append([]Evidence{note("listeners on all interfaces, but the namespace has only lo")}, ev...)...)
	}
	return failed(ev...)
}

// socketOwners maps socket inodes to "pid N (comm)" for the processes whose
// /proc/<pid>/fd is visible; it stops after a bounded number of processes.
func (s *scan) socketOwners(socks []Socket) map[uint64]string {
	want := make(map[string]uint64, len(socks))
	for _, so := range socks {
		want["socket:["+strconv.FormatUint(so.Inode, 10)+"]"] = so.Inode
	}
	out := map[uint64]string{}
	procs, err := s.env.readDir("/proc")
	if err != nil {
		return out
	}
	scanned := 0
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if scanned++; scanned > 4096 || len(out) == len(want) {
			break
		}
		fdDir := "/proc/" + p.Name() + "/fd"
		fds, err := s.env.readDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := s.env.readlink(fdDir + "/" + fd.Name())
			if err != nil {
				continue
			}
			if ino, ok := want[link]; ok {
				comm, _ := s.env.readFile("/proc/"+p.Name()+"/comm", 256)
				out[ino] = fmt.Sprintf("pid %s %s", p.Name(), strings.TrimSpace(string(comm)))
			}
		}
	}
	return out
}

// hostBridges are interface name prefixes that exist only in a host namespace.
var hostBridges = []string{"docker0", "virbr", "br-", "cni0", "podman", "lxcbr", "lxdbr", "veth", "flannel", "cali", "cilium_host"}

// hostUnixPrefixes are unix socket paths that belong to a host's services.
var hostUnixPrefixes = []string{"/run/systemd/", "/var/run/dbus/", "/run/dbus/", "/run/user/", "@/tmp/.X11-unix", "/tmp/.X11-unix", "/run/docker.sock", "/var/run/docker.sock", "/run/containerd/"}

// checkNET002: signs of the host's network namespace.
func checkNET002(s *scan) outcome {
	ifs, err := s.interfaces()
	if err != nil {
		return skipped("%v", err)
	}
	if onlyLoopback(ifs) {
		return passed(note("own network namespace with only lo"))
	}
	var bad []Evidence
	for _, i := range ifs {
		for _, p := range hostBridges {
			if strings.HasPrefix(i, p) {
				bad = append(bad, note("host interface %s visible", i))
				break
			}
		}
	}
	if b, err := s.env.readFile("/proc/net/unix", 16<<20); err == nil {
		hits := map[string]bool{}
		for _, p := range ParseNetUnix(b) {
			for _, pre := range hostUnixPrefixes {
				if strings.HasPrefix(p, pre) && !hits[pre] {
					hits[pre] = true
					bad = append(bad, note("host unix socket %s visible in this namespace", p))
				}
			}
		}
	}
	self, err1 := s.env.readlink("/proc/self/ns/net")
	init, err2 := s.env.readlink("/proc/1/ns/net")
	comm, err3 := s.env.readFile("/proc/1/comm", 256)
	if err1 == nil && err2 == nil && err3 == nil && self == init {
		c := strings.TrimSpace(string(comm))
		if c == "systemd" || c == "init" {
			bad = append(bad, note("same network namespace (%s) as pid 1 %s", self, c))
		}
	}
	if len(bad) > 0 {
		return failed(bad...)
	}
	return passed(note("interfaces %s, no host bridge, host service socket or host init in this namespace", strings.Join(ifs, ", ")))
}

// metadataAddr is the link-local cloud metadata service.
var metadataAddr = netip.MustParseAddr("169.254.169.254")

// checkNET003: default routes and metadata routes.
func checkNET003(s *scan) outcome {
	var routes []Route
	readable := 0
	if b, err := s.env.readFile("/proc/net/route", 16<<20); err == nil {
		readable++
		r, err := ParseRoute(b)
		if err != nil {
			return skipped("parse /proc/net/route: %v", err)
		}
		routes = append(routes, r...)
	}
	if b, err := s.env.readFile("/proc/net/ipv6_route", 16<<20); err == nil {
		readable++
		r, err := ParseIPv6Route(b)
		if err != nil {
			return skipped("parse /proc/net/ipv6_route: %v", err)
		}
		routes = append(routes, r...)
	}
	if readable == 0 {
		return skipped("neither /proc/net/route nor /proc/net/ipv6_route is readable")
	}
	var ev []Evidence
	metadata := false
	for _, r := range routes {
		if r.Flags&routeUp == 0 || r.Iface == "lo" {
			continue
		}
		switch {
		case r.Default():
			ev = append(ev, note("default route via %s dev %s", r.Gateway, r.Iface))
		case r.Dest.Contains(metadataAddr):
			metadata = true
			ev = append(ev, note("route to the metadata service %s: %s dev %s", metadataAddr, r.Dest, r.Iface))
		}
	}
	if len(ev) == 0 {
		var proxy []Evidence
		for _, name := range []string{"HTTPS_PROXY", "https_proxy", "ALL_PROXY"} {
			if v, ok := s.env.Getenv(name); ok && v != "" {
				proxy = append(proxy, note("egress only through the proxy in %s", name))
				break
			}
		}
		return passed(append([]Evidence{note("no default route and no metadata route")}, proxy...)...)
	}
	o := failed(ev...)
	if metadata {
		o.severity = High
	}
	return o
}

// checkNET004: container daemon endpoints on another machine.
func checkNET004(s *scan) outcome {
	var bad, ok []Evidence
	for _, name := range []string{"DOCKER_HOST", "CONTAINER_HOST", "BUILDKIT_HOST"} {
		v, set := s.env.Getenv(name)
		if !set || v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Scheme == "" {
			bad = append(bad, note("%s is set to an unparseable endpoint", name))
			continue
		}
		switch u.Scheme {
		case "unix", "npipe", "docker-container", "podman-container", "kube-pod":
			ok = append(ok, note("%s is a local %s endpoint (see FS001)", name, u.Scheme))
			continue
		}
		host := u.Hostname()
		if isLocalHost(host) {
			ok = append(ok, note("%s points at this machine (%s)", name, host))
			continue
		}
		bad = append(bad, note("%s points at %s://%s, off this machine", name, u.Scheme, host))
	}
	if len(bad) > 0 {
		return failed(append(bad, ok...)...)
	}
	if len(ok) == 0 {
		return passed(note("DOCKER_HOST, CONTAINER_HOST and BUILDKIT_HOST unset"))
	}
	return passed(ok...)
}

func isLocalHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
