package audit

import (
	"bytes"
	"errors"
	"io/fs"
	"math/bits"
	"path"
	"strconv"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
	"golang.org/x/sys/unix"
)

// checkENV001: uid 0, lowered to low when it holds no capabilities or maps to
// an unprivileged user of the parent namespace.
func checkENV001(s *scan) outcome {
	st, err := s.procStatus()
	if err != nil {
		return skipped("%v", err)
	}
	if !st.HasUID {
		return skipped("/proc/self/status has no Uid line")
	}
	if st.UID[1] != 0 && st.UID[0] != 0 {
		return passed(note("running as uid %d", st.UID[1]))
	}
	ev := []Evidence{note("running as uid 0 (real %d, effective %d)", st.UID[0], st.UID[1])}
	mitigated := false
	if b, err := s.env.readFile("/proc/self/uid_map", 64<<10); err == nil {
		if m, err := ParseIDMap(b); err == nil {
			if out, ok := MapOutside(m, 0); ok && out != 0 {
				ev = append(ev, note("uid 0 maps to unprivileged uid %d of the parent user namespace", out))
				mitigated = true
			} else if !IdentityMap(m) {
				ev = append(ev, note("in a user namespace (uid_map %q)", strings.TrimSpace(string(b))))
			}
		}
	}
	if st.HasCapEff && st.CapEff == 0 {
		ev = append(ev, note("holds no effective capabilities"))
		mitigated = true
	}
	o := failed(ev...)
	if mitigated {
		o.severity = Low
	}
	return o
}

// checkENV002: any container, VM or user-namespace marker confirms isolation.
func checkENV002(s *scan) outcome {
	var ev []Evidence
	readable := 0
	for _, p := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := s.env.lstat(p); err == nil {
			ev = append(ev, note("%s present", p))
		}
	}
	if b, err := s.env.readFile("/run/systemd/container", 4096); err == nil {
		ev = append(ev, note("/run/systemd/container says %q", strings.TrimSpace(string(b))))
	}
	for _, p := range []string{"/proc/1/cgroup", "/proc/self/cgroup"} {
		b, err := s.env.readFile(p, 1<<20)
		if err != nil {
			continue
		}
		readable++
		for _, marker := range []string{"docker", "kubepods", "containerd", "libpod", "lxc", "crio", "buildkit"} {
			if bytes.Contains(b, []byte(marker)) {
				ev = append(ev, note("%s names %s", p, marker))
				break
			}
		}
	}
	if b, err := s.env.readFile("/proc/self/uid_map", 64<<10); err == nil {
		readable++
		if m, err := ParseIDMap(b); err == nil && !IdentityMap(m) {
			ev = append(ev, note("user namespace: uid_map %q", strings.Join(strings.Fields(string(b)), " ")))
		}
	}
	if b, err := s.env.readFile("/sys/hypervisor/type", 4096); err == nil && len(bytes.TrimSpace(b)) > 0 {
		ev = append(ev, note("hypervisor %s", bytes.TrimSpace(b)))
	}
	if b, err := s.env.readFile("/proc/cpuinfo", 4<<20); err == nil {
		readable++
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "flags") && strings.Contains(line, " hypervisor") {
				ev = append(ev, note("CPU reports a hypervisor (virtual machine)"))
				break
			}
		}
	}
	if len(ev) > 0 {
		return passed(ev...)
	}
	if readable == 0 {
		return skipped("neither uid_map, cgroup nor cpuinfo is readable, so absence of isolation cannot be confirmed")
	}
	return failed(note("no container, VM or user-namespace marker: identity uid_map, no /.dockerenv, /run/.containerenv or container cgroup"))
}

// checkENV003: seccomp mode from /proc/self/status.
func checkENV003(s *scan) outcome {
	st, err := s.procStatus()
	if err != nil {
		return skipped("%v", err)
	}
	if !st.HasSeccomp {
		return skipped("/proc/self/status has no Seccomp line (kernel without CONFIG_SECCOMP?)")
	}
	switch st.Seccomp {
	case 2:
		return passed(note("seccomp mode 2 (filter)"))
	case 1:
		return passed(note("seccomp mode 1 (strict)"))
	}
	return failed(note("seccomp mode %d: no filter applied", st.Seccomp))
}

// checkENV004: no_new_privs.
func checkENV004(s *scan) outcome {
	st, err := s.procStatus()
	if err != nil {
		return skipped("%v", err)
	}
	if !st.HasNoNewPrivs {
		return skipped("/proc/self/status has no NoNewPrivs line")
	}
	if st.NoNewPrivs == 1 {
		return passed(note("NoNewPrivs 1"))
	}
	return failed(note("NoNewPrivs %d: setuid binaries can raise privileges", st.NoNewPrivs))
}

// dangerousCaps are the capabilities ENV005 reports, by number (linux/capability.h).
var dangerousCaps = []struct {
	bit  uint
	name string
}{
	{2, "CAP_DAC_READ_SEARCH"}, {12, "CAP_NET_ADMIN"}, {16, "CAP_SYS_MODULE"}, {17, "CAP_SYS_RAWIO"},
	{19, "CAP_SYS_PTRACE"}, {21, "CAP_SYS_ADMIN"}, {38, "CAP_PERFMON"}, {39, "CAP_BPF"},
}

func capNames(mask uint64) []string {
	var out []string
	for _, c := range dangerousCaps {
		if mask&(1<<c.bit) != 0 {
			out = append(out, c.name)
		}
	}
	return out
}

// checkENV005: dangerous effective capabilities; the bounding set is reported.
func checkENV005(s *scan) outcome {
	st, err := s.procStatus()
	if err != nil {
		return skipped("%v", err)
	}
	if !st.HasCapEff {
		return skipped("/proc/self/status has no CapEff line")
	}
	var ev []Evidence
	full := false
	if b, err := s.env.readFile("/proc/sys/kernel/cap_last_cap", 64); err == nil {
		if last, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && last >= 0 && last < 63 {
			all := uint64(1)<<(last+1) - 1
			full = st.CapEff&all == all
		}
	}
	if full {
		ev = append(ev, note("CapEff %016x is the full set: privileged", st.CapEff))
	}
	if st.HasCapBnd && len(capNames(st.CapBnd)) > 0 {
		ev = append(ev, note("bounding set holds %s", strings.Join(capNames(st.CapBnd), ", ")))
	} else if st.HasCapBnd {
		ev = append(ev, note("bounding set %016x holds none of the dangerous capabilities", st.CapBnd))
	}
	if names := capNames(st.CapEff); len(names) > 0 || full {
		return failed(append([]Evidence{note("effective capabilities include %s", strings.Join(names, ", "))}, ev...)...)
	}
	return passed(append([]Evidence{note("CapEff %016x (%s), none dangerous", st.CapEff, english.Count(bits.OnesCount64(st.CapEff), "capability"))}, ev...)...)
}

// checkENV006: loader injection through the environment or /etc/ld.so.preload.
func checkENV006(s *scan) outcome {
	var bad []Evidence
	for _, name := range []string{"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"} {
		if v, ok := s.env.Getenv(name); ok && strings.TrimSpace(v) != "" {
			bad = append(bad, note("%s is set (%s)", name, english.Count(len(strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' })), "entry")))
		}
	}
	b, err := s.env.readFile("/etc/ld.so.preload", 1<<20)
	switch {
	case err == nil:
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				bad = append(bad, note("/etc/ld.so.preload loads %s", line))
			}
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		if len(bad) == 0 {
			return skipped("cannot read /etc/ld.so.preload: %v", err)
		}
	}
	if len(bad) > 0 {
		return failed(bad...)
	}
	return passed(note("no LD_PRELOAD, LD_AUDIT or LD_LIBRARY_PATH; /etc/ld.so.preload absent or empty"))
}

// checkENV007: interpreter hook variables and npm configuration overrides.
func checkENV007(s *scan) outcome {
	var bad []Evidence
	if v, ok := s.env.Getenv("NODE_OPTIONS"); ok {
		for _, f := range strings.Fields(v) {
			flag, _, _ := strings.Cut(f, "=")
			switch flag {
			case "--require", "-r", "--import", "--loader", "--experimental-loader":
				bad = append(bad, note("NODE_OPTIONS loads code with %s", flag))
			}
		}
	}
	for _, name := range []string{"PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "RUBYOPT", "BASH_ENV", "ENV", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXEC_PATH"} {
		if v, ok := s.env.Getenv(name); ok && strings.TrimSpace(v) != "" {
			bad = append(bad, note("%s is set", name))
		}
	}
	for _, kv := range s.env.Vars {
		k, v, _ := strings.Cut(kv, "=")
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "npm_config_") {
			continue
		}
		switch key := strings.TrimPrefix(lk, "npm_config_"); {
		case key == "registry" || strings.HasSuffix(key, ":registry"):
			bad = append(bad, note("%s overrides the registry", k))
		case key == "ignore_scripts" || key == "ignore-scripts":
			if strings.EqualFold(strings.TrimSpace(v), "false") {
				bad = append(bad, note("%s=false forces install scripts on", k))
			}
		case key == "script_shell" || key == "script-shell", key == "node_options" || key == "node-options", key == "userconfig", key == "globalconfig":
			bad = append(bad, note("%s overrides npm's %s", k, key))
		}
	}
	if len(bad) > 0 {
		return failed(bad...)
	}
	return passed(note("no interpreter hook variables and no npm_config overrides"))
}

// checkENV008: LSM label, or Landlock detected by a denied probe access.
func checkENV008(s *scan) outcome {
	var ev []Evidence
	label, labelErr, labelPath := "", error(nil), ""
	for _, p := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		b, err := s.env.readFile(p, 4096)
		if err == nil {
			label = strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
			labelErr = nil
			break
		}
		labelErr, labelPath = err, p // *PathError: names the file
	}
	// The kernel answers a read of attr/current with EINVAL when no active
	// LSM keeps a process label (SELinux, AppArmor, Smack): not unreadable,
	// but no label to judge. An LSM without one (BPF, TOMOYO) stays unseen.
	noLabel := errors.Is(labelErr, unix.EINVAL)
	if noLabel {
		ev = append(ev, note("no LSM keeps a process label (%s: %v)", labelPath, unix.EINVAL))
	}
	if b, err := s.env.readFile("/sys/kernel/security/lsm", 4096); err == nil {
		ev = append(ev, note("kernel LSMs: %s", strings.TrimSpace(string(b))))
	}
	if labelErr == nil {
		if label != "" && !unconfinedLabel(label) {
			return passed(append([]Evidence{note("confined by label %q", label)}, ev...)...)
		}
		ev = append(ev, note("LSM label %q", label))
	}
	if s.env.LandlockProbe != nil {
		pr := s.env.LandlockProbe()
		switch {
		case pr.Err != nil:
			ev = append(ev, note("Landlock probe could not run: %v", pr.Err))
		case pr.Denied:
			return passed(append([]Evidence{note("Landlock in effect: %s", pr.Detail)}, ev...)...)
		default:
			ev = append(ev, note("no Landlock domain: %s", pr.Detail))
			if labelErr == nil {
				return failed(ev...)
			}
		}
	}
	if noLabel {
		return skipped("no LSM keeps a process label (reading %s gives EINVAL) and Landlock was not detected by a probe; confinement by an LSM without a label cannot be seen", labelPath)
	}
	if labelErr != nil {
		return skipped("LSM label unreadable (%v) and Landlock not detected by a probe; confinement unknown", labelErr)
	}
	return skipped("label %q is unconfined and no Landlock probe was available", label)
}

// unconfinedLabel reports whether an LSM label means no confinement.
func unconfinedLabel(l string) bool {
	return l == "unconfined" || strings.Contains(l, "unconfined_t") || strings.HasSuffix(l, "(complain)") ||
		strings.HasSuffix(l, "(unconfined)") || l == "kernel"
}

// writable reports whether the viewed system lets the current user write path:
// the mount covering it is not read-only and the access check allows writing.
func (s *scan) writable(p string) bool {
	if mounts, err := s.mountinfo(); err == nil {
		if m, ok := MountFor(mounts, p); ok && m.ReadOnly() {
			return false
		}
	}
	return s.env.access(p, 2) == nil
}

// checkENV009: escape primitives through procfs, sysfs, cgroup v1 and disks.
func checkENV009(s *scan) outcome {
	mounts, err := s.mountinfo()
	if err != nil {
		return skipped("%v", err)
	}
	var bad, ok []Evidence
	for _, p := range []string{"/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/sys/kernel/uevent_helper"} {
		if _, err := s.env.lstat(p); err != nil {
			continue
		}
		if s.writable(p) {
			bad = append(bad, note("%s is writable", p))
		}
	}
	for _, m := range mounts {
		switch m.FSType {
		case "sysfs":
			if !m.ReadOnly() {
				ok = append(ok, note("sysfs mounted rw at %s", m.MountPoint))
			}
		case "cgroup":
			ra := path.Join(m.MountPoint, "release_agent")
			if _, err := s.env.lstat(ra); err == nil && s.writable(ra) {
				bad = append(bad, note("%s is writable", ra))
			}
		}
	}
	if m, found := MountFor(mounts, "/proc/sys"); found && m.FSType == "proc" {
		if m.ReadOnly() {
			ok = append(ok, note("/proc/sys is mounted read-only"))
		} else {
			ok = append(ok, note("/proc/sys is on a rw procfs mount"))
		}
	}
	if b, err := s.env.readFile("/proc/partitions", 1<<20); err == nil {
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) != 4 {
				continue
			}
			dev := "/dev/" + f[3]
			fi, err := s.env.lstat(dev)
			if err != nil {
				continue
			}
			block := fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0
			if !block && s.env.live() {
				continue
			}
			if s.env.access(dev, 4) == nil || s.env.access(dev, 2) == nil {
				bad = append(bad, note("host block device %s is accessible", dev))
			} else {
				ok = append(ok, note("host block device %s present, not accessible", dev))
			}
		}
	}
	if len(bad) > 0 {
		return failed(append(bad, ok...)...)
	}
	return passed(append([]Evidence{note("no writable core_pattern, sysrq-trigger, uevent_helper, release_agent or host disk")}, ok...)...)
}
