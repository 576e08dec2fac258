// Package doctor checks that a host can build shadow's jail. Every check
// is tried for real: user namespaces and overlay mounts in a re-executed probe
// child, the Landlock ABI queried, a seccomp filter loaded. For each problem it
// gives the exact remedy for the distribution it detects.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// Status is the outcome of one check.
type Status string

// The outcomes of a check.
const (
	StatusOK       Status = "ok"       // works
	StatusMissing  Status = "missing"  // does not work
	StatusDegraded Status = "degraded" // works with less protection or fewer features
)

// Check is the result of one host check.
type Check struct {
	Name     string `json:"name"`             // short name, e.g. "overlay in user namespace"
	Status   Status `json:"status"`           // ok, missing or degraded
	Required bool   `json:"required"`         // a missing required check means run cannot work
	Detail   string `json:"detail"`           // what was found
	Remedy   string `json:"remedy,omitempty"` // exact commands that fix a problem
}

// Report is the outcome of all checks.
type Report struct {
	Checks []Check `json:"checks"`
	Distro string  `json:"distro"` // as detected from /etc/os-release, e.g. "debian 12"
	Kernel string  `json:"kernel"` // uname release
	// Container is the container doctor runs in (nil on a host), and ContainerFix the options
	// of its engine's run line (or the pod's securityContext) that lift what the checks found
	// it denies.
	Container    *Container `json:"container,omitempty"`
	ContainerFix string     `json:"container_fix,omitempty"`
}

// OK reports whether `shadow run` will work: no required check is missing.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if c.Required && c.Status == StatusMissing {
			return false
		}
	}
	return true
}

// MarshalJSON adds the verdict of OK as "ok" to the report's JSON.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		OK bool `json:"ok"`
	}{plain(r), r.OK()})
}

// AppArmorTemplate is the AppArmor profile doctor prints as the remedy on
// Ubuntu 24.04 and later, with @SHADOW_PATH@ standing for the path of the
// shadow binary. The command line sets it from the embedded
// assets/apparmor/shadow.apparmor before calling Run.
var AppArmorTemplate string

// Options are the inputs of RunWith; zero fields take the host's defaults.
type Options struct {
	ProcSys          string // sysctl tree; default /proc/sys
	OSRelease        string // default /etc/os-release
	Exe              string // binary re-executed for probes; default /proc/self/exe
	ExePath          string // path the AppArmor profile names; default os.Executable()
	ProbeDir         string // where overlay and devpts probes make temporary directories; default os.TempDir()
	AppArmorTemplate string // default AppArmorTemplate
	// StateDir is where shadow keeps its sessions, and StateDirErr why it cannot (no HOME, a
	// directory this user may not write): the caller finds both, doctor reports them. Neither
	// set: the state directory is not checked.
	StateDir    string
	StateDirErr error
	// Root is where the marks of a container engine (/.dockerenv, /run/.containerenv,
	// /proc/1/cgroup) are looked for, and Getenv reads the environment ($container,
	// KUBERNETES_SERVICE_HOST); defaults / and os.Getenv.
	Root   string
	Getenv func(string) string
}

func (o Options) withDefaults() Options {
	if o.ProcSys == "" {
		o.ProcSys = "/proc/sys"
	}
	if o.OSRelease == "" {
		o.OSRelease = "/etc/os-release"
	}
	if o.Exe == "" {
		o.Exe = "/proc/self/exe"
	}
	if o.ExePath == "" {
		if p, err := os.Executable(); err == nil {
			o.ExePath = p
		} else {
			o.ExePath = "/usr/local/bin/shadow"
		}
	}
	if o.ProbeDir == "" {
		o.ProbeDir = os.TempDir()
	}
	if o.AppArmorTemplate == "" {
		o.AppArmorTemplate = AppArmorTemplate
	}
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return o
}

// Run checks this host with the default options.
func Run(ctx context.Context) Report {
	return RunWith(ctx, Options{})
}

// RunWith checks this host. The probes re-execute o.Exe, whose main must
// call ProbeMain when its first argument is ProbeArg.
func RunWith(ctx context.Context, o Options) Report {
	o = o.withDefaults()
	d := readDistro(o.OSRelease)
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	release := unix.ByteSliceToString(uts.Release[:])
	r := Report{Distro: d.String(), Kernel: release, Container: detectContainer(o.Root, o.Getenv)}
	var problems []problem

	r.Checks = append(r.Checks, kernelCheck(release))
	usernsErr := runProbe(ctx, o.Exe, nsUser, "userns")
	userns := userNSCheck(usernsErr, readSysctls(o.ProcSys), d, os.Geteuid(), o.AppArmorTemplate, o.ExePath)
	if c := r.Container; c != nil && userns.Status != StatusOK {
		userns.Remedy = inContainer(c, userns.Remedy)
		if usernsErr != nil {
			problems = append(problems, problemSeccomp)
			userns.Remedy = containerRemedy(c, problemSeccomp) + "\n" + userns.Remedy
		}
	}
	r.Checks = append(r.Checks, userns)
	jail, found := jailNSCheck(runProbeIn(ctx, o, nsJail, "jailns", usernsErr), r.Container)
	problems = append(problems, found...)
	r.Checks = append(r.Checks, jail)
	r.Checks = append(r.Checks, overlayCheck(ctx, o, usernsErr))
	r.Checks = append(r.Checks, runLayerCheck(ctx, o, usernsErr))
	r.Checks = append(r.Checks, landlockCheck(confine.LandlockABI(), os.Geteuid(), d))
	r.Checks = append(r.Checks, seccompCheck(runProbe(ctx, o.Exe, nsHost, "seccomp")))
	r.Checks = append(r.Checks, openat2Check())
	r.Checks = append(r.Checks, ptyCheck(ctx, o, usernsErr))
	r.Checks = append(r.Checks, networkCheck(exec.LookPath, d))
	r.Checks = append(r.Checks, tunCheck(tunProbe(ctx, o, usernsErr), sandbox.CheckTun(sandbox.TunDevice)))
	if o.StateDir != "" || o.StateDirErr != nil {
		r.Checks = append(r.Checks, stateDirCheck(o.StateDir, o.StateDirErr))
	}
	r.Checks = append(r.Checks, userCheck(os.Geteuid()))
	if r.Container != nil {
		r.ContainerFix = containerRunLine(r.Container, problems)
	}
	return r
}

// inContainer says where a host's remedy applies: a sysctl is the host's, and a container's
// /proc/sys is read-only.
func inContainer(c *Container, remedy string) string {
	if !strings.Contains(remedy, "sysctl") && !strings.Contains(remedy, "apparmor_parser") {
		return remedy
	}
	return "# on the host that runs this " + c.Kind + " container, not in it (its /proc/sys is read-only):\n" + remedy
}

// jailNSCheck judges the jailns probe: PID and UTS namespaces, the hostname set, a new /proc
// mounted, as the jail does. In container c, what failed is named with the engine's option that
// lifts it, and returned as the problems found.
func jailNSCheck(probeErr error, c *Container) (Check, []problem) {
	ch := Check{Name: "PID namespace and /proc", Required: true}
	if probeErr == nil {
		ch.Status, ch.Detail = StatusOK, "set the hostname of a new UTS namespace and mounted a new /proc in a PID namespace"
		return ch, nil
	}
	ch.Status, ch.Detail = StatusMissing, probeErr.Error()
	var problems []problem
	msg := probeErr.Error()
	if strings.Contains(msg, hostnameFailed) {
		problems = append(problems, problemSeccomp)
	}
	if strings.Contains(msg, procFailed) {
		problems = append(problems, problemProc)
	}
	if c == nil {
		ch.Remedy = "check that no security module or seccomp profile around shadow denies sethostname or mount, and that /proc is not partly covered by other mounts"
		return ch, problems
	}
	if len(problems) == 0 {
		problems = append(problems, problemSeccomp)
	}
	ch.Remedy = containerRemedy(c, problems...)
	return ch, problems
}

// runProbeIn runs probe name in namespaces ns on a fresh directory, or reports it not tried
// when there is no user namespace.
func runProbeIn(ctx context.Context, o Options, ns uintptr, name string, usernsErr error) error {
	if usernsErr != nil {
		return errors.New("not tried: no user namespace")
	}
	dir, err := os.MkdirTemp(o.ProbeDir, "shadow-doctor-")
	if err != nil {
		return fmt.Errorf("make a directory in %s: %v", o.ProbeDir, err)
	}
	defer os.RemoveAll(dir)
	return runProbe(ctx, o.Exe, ns, name, dir)
}

// stateDirCheck: every run records its session in the state directory, so one shadow may not
// write makes run fail however good the kernel is.
func stateDirCheck(dir string, err error) Check {
	c := Check{Name: "state directory", Required: true, Status: StatusOK, Detail: dir}
	if err != nil {
		c.Status, c.Detail = StatusMissing, err.Error()
		c.Remedy = "export XDG_STATE_HOME=/a/directory/you/can/write    # or set HOME"
	}
	return c
}

// userCheck recommends running shadow as a normal user: as root, the command
// is root of the jail, held back only by dropped capabilities, Landlock and
// seccomp.
func userCheck(euid int) Check {
	c := Check{Name: "invoking user", Status: StatusOK, Detail: fmt.Sprintf("uid %d", euid)}
	if euid == 0 {
		c.Status = StatusDegraded
		c.Detail = "running as root: the command would be root of the jail, with every capability dropped"
		c.Remedy = "run shadow as a normal user"
	}
	return c
}

// kernelCheck needs 5.11: unprivileged overlay mounts in user namespaces.
func kernelCheck(release string) Check {
	c := Check{Name: "kernel", Required: true}
	ma, mi, ok := parseVersion(release)
	switch {
	case !ok:
		c.Status, c.Detail = StatusMissing, fmt.Sprintf("cannot read the kernel version %q", release)
	case ma > 5 || ma == 5 && mi >= 11:
		c.Status, c.Detail = StatusOK, fmt.Sprintf("Linux %s (5.11 or later needed)", release)
	default:
		c.Status, c.Detail = StatusMissing, fmt.Sprintf("Linux %s is older than 5.11, which overlay in a user namespace needs", release)
		c.Remedy = "upgrade the kernel to 5.11 or later"
	}
	return c
}

// userNSCheck judges unprivileged user namespaces from the probe's result
// and the sysctls that switch them off, and gives the remedy for distro d.
// It runs on values only, so that tests can give it any host.
func userNSCheck(probeErr error, s sysctls, d Distro, euid int, tmpl, exePath string) Check {
	c := Check{Name: "user namespaces", Required: true}
	var blocks []string
	var remedies []string
	if s.MaxUserNamespaces == 0 {
		blocks = append(blocks, "user.max_user_namespaces = 0")
		remedies = append(remedies, sysctlRemedy("user.max_user_namespaces", "15000"))
	}
	if s.UnprivUsernsClone == 0 {
		blocks = append(blocks, "kernel.unprivileged_userns_clone = 0")
		remedies = append(remedies, sysctlRemedy("kernel.unprivileged_userns_clone", "1"))
	}
	if s.AppArmorRestrictUsers == 1 {
		blocks = append(blocks, "kernel.apparmor_restrict_unprivileged_userns = 1")
		remedies = append(remedies, appArmorRemedy(d, tmpl, exePath))
	}
	switch {
	case probeErr != nil:
		c.Status = StatusMissing
		c.Detail = "cannot create a user namespace: " + probeErr.Error()
		if len(blocks) > 0 {
			c.Detail += " (" + strings.Join(blocks, ", ") + ")"
		}
		if len(remedies) == 0 {
			remedies = append(remedies, "enable CONFIG_USER_NS in the kernel, and check that no security module (SELinux, AppArmor, a container runtime's seccomp profile) denies clone(CLONE_NEWUSER)")
		}
	case len(blocks) > 0 && euid == 0:
		// Root can always create user namespaces; unprivileged users, for
		// whom shadow is meant, cannot.
		c.Status = StatusDegraded
		c.Detail = "works for root only: " + strings.Join(blocks, ", ") + "; shadow is best run as a normal user"
	case len(blocks) > 0:
		c.Status = StatusOK
		c.Detail = "created a user namespace, although " + strings.Join(blocks, ", ") + " is set (a profile or exception allows it)"
		remedies = nil
	default:
		c.Status = StatusOK
		c.Detail = "created a user namespace as an unprivileged-in-namespace root"
	}
	if c.Status != StatusOK {
		c.Remedy = strings.Join(remedies, "\n")
	}
	return c
}

// appArmorRemedy is the profile that lets the shadow binary create user
// namespaces under Ubuntu's restriction, as the commands that install it.
func appArmorRemedy(d Distro, tmpl, exePath string) string {
	if tmpl == "" {
		return "install an AppArmor profile granting 'userns,' to " + exePath + " (assets/apparmor/shadow.apparmor in shadow's source)"
	}
	var b strings.Builder
	if !d.ubuntuAtLeast(24, 4) && d.ID != "" {
		fmt.Fprintf(&b, "# %s restricts user namespaces through AppArmor as Ubuntu 24.04 does:\n", d)
	}
	b.WriteString("sudo tee /etc/apparmor.d/shadow >/dev/null <<'EOF'\n")
	b.WriteString(AppArmorProfile(tmpl, exePath))
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	b.WriteString("EOF\nsudo apparmor_parser -r /etc/apparmor.d/shadow")
	return b.String()
}

// AppArmorProfile fills the profile template with the path of the shadow
// binary.
func AppArmorProfile(tmpl, exePath string) string {
	return strings.ReplaceAll(tmpl, "@SHADOW_PATH@", exePath)
}

// overlayCheck mounts a real overlay with userxattr in a probe child.
func overlayCheck(ctx context.Context, o Options, usernsErr error) Check {
	c := Check{Name: "overlay in user namespace", Required: true}
	if usernsErr != nil {
		c.Status, c.Detail = StatusMissing, "not tried: no user namespace"
		return c
	}
	dir, err := probeInDir(ctx, o, "overlay")
	if errors.Is(err, errNoProbeDir) {
		c.Status, c.Detail = StatusMissing, err.Error()
		return c
	}
	if err != nil {
		// A run's layer is a tmpfs where tmpfs keeps user.* attributes: an overlay there is
		// what the jail mounts, whatever the probe directory's filesystem (a container's root
		// is an overlay, which cannot be an upper layer).
		if _, terr := probeInDir(ctx, o, "overlaytmpfs"); terr == nil {
			c.Status = StatusOK
			c.Detail = "mounted an overlay with userxattr on a tmpfs, as a run's layer is, and wrote through it (" + dir + " cannot hold one: " + unwrapLast(err) + ")"
			return c
		}
		c.Status, c.Detail = StatusMissing, err.Error()
		c.Remedy = "a kernel of 5.11 or later with CONFIG_OVERLAY_FS is needed; the staging directory must be on a filesystem that supports user.* extended attributes (ext4, xfs, btrfs, tmpfs from 6.6)"
		return c
	}
	c.Status = StatusOK
	c.Detail = "mounted an overlay with userxattr on " + dir + " and wrote through it"
	return c
}

// unwrapLast is the last part of a probe's message, the system's reason.
func unwrapLast(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// errNoProbeDir marks a probe that could not even get its directory.
var errNoProbeDir = errors.New("no probe directory")

// probeInDir runs probe name in a user namespace on a fresh directory under
// o.ProbeDir, removed afterwards, and returns the directory's parent for
// the report.
func probeInDir(ctx context.Context, o Options, name string) (string, error) {
	dir, err := os.MkdirTemp(o.ProbeDir, "shadow-doctor-")
	if err != nil {
		return "", fmt.Errorf("%w: make one in %s: %v", errNoProbeDir, o.ProbeDir, err)
	}
	defer os.RemoveAll(dir)
	return filepath.Dir(dir), runProbe(ctx, o.Exe, nsUser, name, dir)
}

// runLayerCheck tells whether a run's layer can be a tmpfs: the overlay
// keeps what it knows of directories (opaque ones) in user.* attributes of
// its upper layer, which tmpfs keeps from Linux 6.6.
func runLayerCheck(ctx context.Context, o Options, usernsErr error) Check {
	c := Check{Name: "run layer in memory"}
	if usernsErr != nil {
		c.Status, c.Detail = StatusMissing, "not tried: no user namespace"
		return c
	}
	if _, err := probeInDir(ctx, o, "tmpfsxattr"); errors.Is(err, errNoProbeDir) {
		c.Status, c.Detail = StatusMissing, err.Error()
		return c
	} else if err != nil {
		c.Status = StatusDegraded
		c.Detail = "tmpfs keeps no user.* attributes here (" + err.Error() + "): each run's layer is a directory on disk, " +
			"its writes cost disk copy-ups, and --max-upper-bytes is polled every second rather than enforced by the kernel"
		c.Remedy = "a kernel of 6.6 or later"
		return c
	}
	c.Status = StatusOK
	c.Detail = "each run writes into a tmpfs whose size the kernel enforces (--max-upper-bytes)"
	return c
}

// landlockCheck: Landlock is required when shadow runs as root (the jail's
// root has no other guard on files); for a normal user it is defence in depth.
func landlockCheck(abi, euid int, d Distro) Check {
	c := Check{Name: "Landlock", Required: euid == 0}
	switch {
	case abi == 0:
		c.Detail = "the kernel offers no Landlock ABI"
		if euid == 0 {
			c.Status = StatusMissing
			c.Detail += "; shadow refuses to run as root without it"
		} else {
			c.Status = StatusDegraded
			c.Detail += "; the jail relies on namespaces alone for file access"
		}
		c.Remedy = landlockRemedy(d)
	case abi < 2:
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("ABI %d: renames across directories in the project are refused (REFER needs ABI 2, Linux 5.19)", abi)
	default:
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("ABI %d", abi)
		if abi < 6 {
			c.Detail += " (abstract unix socket and signal scoping need ABI 6)"
		}
	}
	return c
}

func landlockRemedy(d Distro) string {
	grub := "add lsm=landlock,lockdown,yama,integrity,apparmor,bpf to GRUB_CMDLINE_LINUX in /etc/default/grub (keep the other modules your kernel lists in /sys/kernel/security/lsm), then run "
	switch {
	case d.is("debian") || d.is("ubuntu"):
		return grub + "'sudo update-grub' and reboot"
	case d.is("fedora") || d.is("rhel"):
		return grub + "'sudo grub2-mkconfig -o /boot/grub2/grub.cfg' and reboot"
	}
	return grub + "your bootloader's update command and reboot (the kernel needs CONFIG_SECURITY_LANDLOCK)"
}

func seccompCheck(probeErr error) Check {
	c := Check{Name: "seccomp", Required: true}
	if probeErr != nil {
		c.Status, c.Detail = StatusMissing, "loading the jail's filter failed: "+probeErr.Error()
		c.Remedy = "the kernel needs CONFIG_SECCOMP_FILTER, and libseccomp 2.5 or later must be installed (Debian/Ubuntu: apt install libseccomp2)"
		return c
	}
	c.Status, c.Detail = StatusOK, "loaded the jail's filter in a child; ptrace was denied with EPERM"
	return c
}

func openat2Check() Check {
	c := Check{Name: "openat2", Required: true}
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		c.Status, c.Detail = StatusMissing, "openat2: "+err.Error()
		c.Remedy = "upgrade the kernel to 5.6 or later"
		if errors.Is(err, unix.EPERM) {
			c.Remedy = "a seccomp profile around shadow denies openat2; run shadow outside that container or allow openat2"
		}
		return c
	}
	unix.Close(fd)
	c.Status, c.Detail = StatusOK, "openat2 with RESOLVE_NO_SYMLINKS works"
	return c
}

// ptyCheck opens a pty from the host's /dev/ptmx and from a new devpts
// instance in a user namespace, as the jail does.
func ptyCheck(ctx context.Context, o Options, usernsErr error) Check {
	c := Check{Name: "pty"}
	hostErr := openPTY("/dev/ptmx", "/dev/pts")
	var nsErr error
	if usernsErr != nil {
		nsErr = errors.New("no user namespace")
	} else if dir, err := os.MkdirTemp(o.ProbeDir, "shadow-doctor-pts-"); err != nil {
		nsErr = err
	} else {
		nsErr = runProbe(ctx, o.Exe, nsUser, "devpts", dir)
		os.RemoveAll(dir)
	}
	switch {
	case nsErr == nil:
		c.Status, c.Detail = StatusOK, "opened a pty from a new devpts instance"
		if hostErr != nil {
			c.Detail += " (the host's /dev/ptmx: " + hostErr.Error() + ")"
		}
	default:
		c.Status = StatusDegraded
		c.Detail = "a new devpts instance does not work (" + nsErr.Error() + "): commands get pipes, not a terminal"
		c.Remedy = "the kernel needs CONFIG_UNIX98_PTYS and CONFIG_DEVPTS_MULTIPLE_INSTANCES (always on since 4.7)"
	}
	return c
}

// networkCheck looks for the user-mode network helpers --allow-network uses.
func networkCheck(lookPath func(string) (string, error), d Distro) Check {
	c := Check{Name: "pasta/slirp4netns"}
	var found []string
	for _, name := range []string{"pasta", "slirp4netns"} {
		if p, err := lookPath(name); err == nil {
			found = append(found, p)
		}
	}
	if len(found) > 0 {
		c.Status, c.Detail = StatusOK, "found "+strings.Join(found, ", ")
		return c
	}
	c.Status = StatusDegraded
	c.Detail = "neither pasta nor slirp4netns is installed: --allow-network would share the host's network"
	switch {
	case d.is("debian") || d.is("ubuntu"):
		c.Remedy = "sudo apt install passt"
	case d.is("fedora") || d.is("rhel"):
		c.Remedy = "sudo dnf install passt"
	case d.is("arch"):
		c.Remedy = "sudo pacman -S passt"
	default:
		c.Remedy = "install passt (pasta) or slirp4netns from your distribution"
	}
	return c
}

// tunProbe tries the tun device as pasta and slirp4netns do for --allow-network: in a new user
// and network namespace (or, without user namespaces, from here), it opens the device and creates
// a tap interface on it.
func tunProbe(ctx context.Context, o Options, usernsErr error) error {
	if usernsErr != nil {
		return sandbox.CheckTun(sandbox.TunDevice)
	}
	return runProbe(ctx, o.Exe, nsNet, "tun", sandbox.TunDevice)
}

// tunCheck judges the tun probe's result; hostErr is what opening the device from here gave,
// which names the cause and the fix when the device's mode or absence is the problem.
func tunCheck(probeErr, hostErr error) Check {
	c := Check{Name: "/dev/net/tun"}
	if probeErr == nil {
		c.Status, c.Detail = StatusOK, "opened it and created a tap interface in a user and network namespace, as pasta does for --allow-network"
		return c
	}
	c.Status = StatusMissing
	var te *sandbox.TunError
	if errors.As(hostErr, &te) || errors.As(probeErr, &te) {
		c.Detail = sandbox.TunDevice + " " + te.Cause + ": --allow-network cannot work"
		c.Remedy = te.Fix
		if te.Keep != "" {
			c.Remedy += "\n" + te.Keep + "   # keeps it so across reboots"
		}
		return c
	}
	c.Detail = "--allow-network cannot work: " + probeErr.Error()
	c.Remedy = "check that no security module (SELinux, AppArmor, a container's seccomp profile) denies TUNSETIFF in a user namespace"
	return c
}

// Text writes the report for a person: one line per check, the remedy of
// each problem under it, and the verdict. color adds ANSI colours.
func (r Report) Text(w io.Writer, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	where := ""
	if r.Container != nil {
		where = ", in a " + r.Container.Kind + " container (" + r.Container.Evidence + ")"
	}
	fmt.Fprintf(w, "shadow doctor: %s, Linux %s%s\n", r.Distro, r.Kernel, where)
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	for _, c := range r.Checks {
		mark := paint("32", "ok      ")
		switch c.Status {
		case StatusMissing:
			mark = paint("31", "missing ")
		case StatusDegraded:
			mark = paint("33", "degraded")
		}
		opt := ""
		if !c.Required && c.Status != StatusOK {
			opt = " (optional)"
		}
		fmt.Fprintf(w, "  %s  %-*s  %s%s\n", mark, width, c.Name, c.Detail, opt)
		if c.Remedy != "" {
			fmt.Fprintln(w, "      fix:")
			for _, line := range strings.Split(c.Remedy, "\n") {
				fmt.Fprintln(w, "        "+line)
			}
		}
	}
	if r.OK() {
		fmt.Fprintln(w, paint("32", "shadow run will work on this host."))
	} else {
		fmt.Fprintln(w, paint("31", "shadow run will not work on this host: fix the missing checks above."))
	}
	if r.ContainerFix != "" {
		fmt.Fprintf(w, "In this %s container, those checks pass once it is started with: %s\n", r.Container.Kind, r.ContainerFix)
	}
}
