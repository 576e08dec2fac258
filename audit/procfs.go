package audit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ProcStatus holds the fields of /proc/<pid>/status the environment rules read.
// A Has* flag is false when the kernel did not print the field.
type ProcStatus struct {
	Name                              string
	UID                               [4]int // real, effective, saved, filesystem
	Seccomp                           int
	NoNewPrivs                        int
	CapEff, CapBnd, CapPrm            uint64
	HasUID, HasSeccomp, HasNoNewPrivs bool
	HasCapEff, HasCapBnd              bool
}

// ParseProcStatus parses the "Key:\tvalue" lines of /proc/<pid>/status.
// Unknown keys are ignored; a known key with a malformed value is an error.
func ParseProcStatus(b []byte) (ProcStatus, error) {
	var st ProcStatus
	for n, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		var err error
		switch key {
		case "Name":
			st.Name = val
		case "Uid":
			f := strings.Fields(val)
			if len(f) != 4 {
				err = fmt.Errorf("want 4 ids, got %d", len(f))
				break
			}
			for i := range f {
				if st.UID[i], err = strconv.Atoi(f[i]); err != nil {
					break
				}
			}
			st.HasUID = err == nil
		case "Seccomp":
			st.Seccomp, err = strconv.Atoi(val)
			st.HasSeccomp = err == nil
		case "NoNewPrivs":
			st.NoNewPrivs, err = strconv.Atoi(val)
			st.HasNoNewPrivs = err == nil
		case "CapEff":
			st.CapEff, err = strconv.ParseUint(val, 16, 64)
			st.HasCapEff = err == nil
		case "CapBnd":
			st.CapBnd, err = strconv.ParseUint(val, 16, 64)
			st.HasCapBnd = err == nil
		case "CapPrm":
			st.CapPrm, err = strconv.ParseUint(val, 16, 64)
		}
		if err != nil {
			return st, fmt.Errorf("status line %d (%s): %w", n+1, key, err)
		}
	}
	return st, nil
}

// IDMapRange is one line of /proc/<pid>/uid_map: Count ids starting at Inside
// map to ids starting at Outside in the parent user namespace.
type IDMapRange struct {
	Inside, Outside, Count uint32
}

// ParseIDMap parses /proc/<pid>/uid_map or gid_map.
func ParseIDMap(b []byte) ([]IDMapRange, error) {
	var out []IDMapRange
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("uid_map line %d: want 3 fields, got %d", n+1, len(f))
		}
		var v [3]uint32
		for i := range f {
			x, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("uid_map line %d: %w", n+1, err)
			}
			v[i] = uint32(x)
		}
		out = append(out, IDMapRange{v[0], v[1], v[2]})
	}
	return out, nil
}

// IdentityMap reports whether the map is the initial user namespace's
// ("0 0 4294967295"): no user namespace isolates the process.
func IdentityMap(m []IDMapRange) bool {
	return len(m) == 1 && m[0].Inside == 0 && m[0].Outside == 0 && m[0].Count == 4294967295
}

// MapOutside returns the parent-namespace id that id maps to.
func MapOutside(m []IDMapRange, id uint32) (uint32, bool) {
	for _, r := range m {
		if id >= r.Inside && uint64(id) < uint64(r.Inside)+uint64(r.Count) {
			return r.Outside + (id - r.Inside), true
		}
	}
	return 0, false
}

// Mount is one line of /proc/<pid>/mountinfo.
type Mount struct {
	ID, Parent   int
	Root         string
	MountPoint   string
	Options      []string // per-mount options: rw/ro, nosuid, ...
	FSType       string
	Source       string
	SuperOptions []string
}

// ReadOnly reports whether the mount itself is read-only.
func (m Mount) ReadOnly() bool { return hasOpt(m.Options, "ro") || hasOpt(m.SuperOptions, "ro") }

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// ParseMountinfo parses /proc/<pid>/mountinfo (proc(5)): the fields before the
// "-" separator, the optional fields, then fstype, source and super options.
// Octal escapes (\040 for a space) in paths are decoded.
func ParseMountinfo(b []byte) ([]Mount, error) {
	var out []Mount
	for n, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || len(f) < sep+3 {
			return nil, fmt.Errorf("mountinfo line %d: malformed", n+1)
		}
		var m Mount
		var err error
		if m.ID, err = strconv.Atoi(f[0]); err != nil {
			return nil, fmt.Errorf("mountinfo line %d: mount id: %w", n+1, err)
		}
		if m.Parent, err = strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("mountinfo line %d: parent id: %w", n+1, err)
		}
		m.Root = unescapeOctal(f[3])
		m.MountPoint = unescapeOctal(f[4])
		m.Options = strings.Split(f[5], ",")
		m.FSType = f[sep+1]
		m.Source = unescapeOctal(f[sep+2])
		if len(f) > sep+3 {
			m.SuperOptions = strings.Split(f[sep+3], ",")
		}
		out = append(out, m)
	}
	return out, nil
}

// unescapeOctal decodes the \ooo escapes the kernel uses for space, tab,
// newline and backslash in mount paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountFor returns the mount that covers path: the last-mounted entry whose
// mount point is path or one of its ancestors.
func MountFor(mounts []Mount, path string) (Mount, bool) {
	best, found := Mount{}, false
	bestLen := -1
	for _, m := range mounts {
		mp := m.MountPoint
		if mp == path || mp == "/" || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			// Later lines stack over earlier ones at the same point.
			if len(mp) >= bestLen {
				best, found, bestLen = m, true, len(mp)
			}
		}
	}
	return best, found
}

// TCP socket states of /proc/net/tcp (include/net/tcp_states.h).
const tcpListen = 0x0A

// Socket is one line of /proc/net/tcp or /proc/net/tcp6.
type Socket struct {
	Local, Remote netip.AddrPort
	State         uint8
	UID           int
	Inode         uint64
}

// Listening reports whether the socket is a TCP listener.
func (s Socket) Listening() bool { return s.State == tcpListen }

// ParseProcNetTCP parses /proc/net/tcp or tcp6: a header line, then one socket
// a line with addresses as hex words in the kernel's byte order.
func ParseProcNetTCP(b []byte) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || (n == 1 && f[0] == "sl") {
			continue
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("tcp line %d: want at least 10 fields, got %d", n, len(f))
		}
		var s Socket
		var err error
		if s.Local, err = parseHexAddrPort(f[1]); err != nil {
			return nil, fmt.Errorf("tcp line %d: local address: %w", n, err)
		}
		if s.Remote, err = parseHexAddrPort(f[2]); err != nil {
			return nil, fmt.Errorf("tcp line %d: remote address: %w", n, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("tcp line %d: state: %w", n, err)
		}
		s.State = uint8(st)
		if s.UID, err = strconv.Atoi(f[7]); err != nil {
			return nil, fmt.Errorf("tcp line %d: uid: %w", n, err)
		}
		if s.Inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
			return nil, fmt.Errorf("tcp line %d: inode: %w", n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tcp: %w", err)
	}
	return out, nil
}

// parseHexAddrPort decodes "0100007F:0016" (IPv4) or 32 hex digits (IPv6)
// followed by a hex port. Each 32-bit word of the address is printed as the
// host-order value of the network-order bytes.
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q: no port", s)
	}
	addr, err := parseHexAddr(a)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: port: %w", s, err)
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// parseHexAddr decodes an address of /proc/net/{tcp,route} in host word order.
func parseHexAddr(a string) (netip.Addr, error) {
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, fmt.Errorf("%q: not a hex IPv4 or IPv6 address", a)
	}
	out := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(out[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(out)
	return addr, nil
}

// Route is one IPv4 or IPv6 route of /proc/net/route or /proc/net/ipv6_route.
type Route struct {
	Iface   string
	Dest    netip.Prefix
	Gateway netip.Addr
	Flags   uint64
}

// routeUp is RTF_UP.
const routeUp = 0x1

// Default reports whether the route is an up default route.
func (r Route) Default() bool { return r.Flags&routeUp != 0 && r.Dest.Bits() == 0 }

// ParseRoute parses /proc/net/route: a header, then
// Iface Destination Gateway Flags RefCnt Use Metric Mask ... with hex addresses.
func ParseRoute(b []byte) ([]Route, error) {
	var out []Route
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || (n == 0 && f[0] == "Iface") {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("route line %d: want at least 8 fields, got %d", n+1, len(f))
		}
		dst, err := parseHexAddr(f[1])
		if err != nil || !dst.Is4() {
			return nil, fmt.Errorf("route line %d: destination %q", n+1, f[1])
		}
		gw, err := parseHexAddr(f[2])
		if err != nil || !gw.Is4() {
			return nil, fmt.Errorf("route line %d: gateway %q", n+1, f[2])
		}
		flags, err := strconv.ParseUint(f[3], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("route line %d: flags: %w", n+1, err)
		}
		mask, err := parseHexAddr(f[7])
		if err != nil || !mask.Is4() {
			return nil, fmt.Errorf("route line %d: mask %q", n+1, f[7])
		}
		bits := maskBits(mask.As4())
		if bits < 0 {
			return nil, fmt.Errorf("route line %d: non-contiguous mask %s", n+1, mask)
		}
		out = append(out, Route{Iface: f[0], Dest: netip.PrefixFrom(dst, bits).Masked(), Gateway: gw, Flags: flags})
	}
	return out, nil
}

func maskBits(m [4]byte) int {
	v := binary.BigEndian.Uint32(m[:])
	bits := 0
	for v&0x80000000 != 0 {
		bits++
		v <<= 1
	}
	if v != 0 {
		return -1
	}
	return bits
}

// ParseIPv6Route parses /proc/net/ipv6_route: dest destlen src srclen nexthop
// metric refcnt use flags iface, addresses as 32 hex digits in network order.
func ParseIPv6Route(b []byte) ([]Route, error) {
	var out []Route
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("ipv6_route line %d: want 10 fields, got %d", n+1, len(f))
		}
		dst, err1 := hex.DecodeString(f[0])
		plen, err2 := strconv.ParseUint(f[1], 16, 8)
		gw, err3 := hex.DecodeString(f[4])
		flags, err4 := strconv.ParseUint(f[8], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(dst) != 16 || len(gw) != 16 || plen > 128 {
			return nil, fmt.Errorf("ipv6_route line %d: malformed", n+1)
		}
		d, _ := netip.AddrFromSlice(dst)
		g, _ := netip.AddrFromSlice(gw)
		out = append(out, Route{Iface: f[9], Dest: netip.PrefixFrom(d, int(plen)).Masked(), Gateway: g, Flags: flags})
	}
	return out, nil
}

// ParseNetDev returns the interface names of /proc/net/dev.
func ParseNetDev(b []byte) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		name, _, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.Contains(name, "|") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// ParseNetUnix returns the bound paths of /proc/net/unix ("@name" for abstract
// sockets); unbound sockets are left out.
func ParseNetUnix(b []byte) []string {
	var out []string
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if n == 0 || len(f) < 8 {
			continue
		}
		out = append(out, f[7])
	}
	return out
}
