package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox"
)

// TestMain lets the test binary serve as the probe child, as shadow's main
// does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ProbeArg {
		os.Exit(ProbeMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func template(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../assets/apparmor/shadow.apparmor")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunThisHost runs every check for real: this host (Debian 12, Linux
// 6.18, user namespaces, overlay, Landlock, seccomp) passes them all.
func TestRunThisHost(t *testing.T) {
	r := RunWith(context.Background(), Options{AppArmorTemplate: template(t), ProbeDir: t.TempDir()})
	var text bytes.Buffer
	r.Text(&text, false)
	t.Log("\n" + text.String())
	names := map[string]bool{}
	for _, c := range r.Checks {
		names[c.Name] = true
		if c.Required && c.Status != StatusOK {
			t.Errorf("required check %s: %s: %s", c.Name, c.Status, c.Detail)
		}
	}
	for _, n := range []string{"kernel", "user namespaces", "PID namespace and /proc", "overlay in user namespace", "run layer in memory", "Landlock", "seccomp", "openat2", "pty", "pasta/slirp4netns", "/dev/net/tun", "invoking user"} {
		if !names[n] {
			t.Errorf("no %s check", n)
		}
	}
	if !r.OK() {
		t.Error("OK() = false")
	}
	if !strings.Contains(text.String(), "shadow run will work") {
		t.Error("text has no verdict")
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		OK     bool    `json:"ok"`
		Distro string  `json:"distro"`
		Checks []Check `json:"checks"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.OK || len(back.Checks) != len(r.Checks) || back.Distro != r.Distro {
		t.Errorf("JSON round trip: %s", b)
	}
}

// TestProbesFail shows the probes report real failures: an overlay on a
// directory that does not exist, an unknown probe.
func TestProbesFail(t *testing.T) {
	exe, _ := os.Executable()
	err := runProbe(context.Background(), exe, nsUser, "overlay", "/nonexistent-shadow-doctor")
	if err == nil || !strings.Contains(err.Error(), "mkdir /nonexistent-shadow-doctor") {
		t.Errorf("overlay on a missing directory: %v", err)
	}
	if err := runProbe(context.Background(), exe, nsUser, "tmpfsxattr", "/nonexistent-shadow-doctor"); err == nil {
		t.Error("tmpfs probe on a missing directory succeeded")
	}
	if code := ProbeMain([]string{"nosuch"}); code != 2 {
		t.Errorf("unknown probe: exit %d", code)
	}
	// Without a user namespace the test binary, unless it is root, cannot
	// mount: the overlay probe must fail rather than pretend.
	if os.Geteuid() != 0 {
		if err := runProbe(context.Background(), exe, nsHost, "overlay", t.TempDir()); err == nil {
			t.Error("overlay probe without a user namespace succeeded as a normal user")
		}
	}
}

// fakeHost writes a /proc/sys tree and an os-release file.
func fakeHost(t *testing.T, sysctl map[string]string, osRelease string) (procSys, osr string) {
	t.Helper()
	root := t.TempDir()
	procSys = filepath.Join(root, "proc", "sys")
	for name, v := range sysctl {
		p := filepath.Join(procSys, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	osr = filepath.Join(root, "os-release")
	if err := os.WriteFile(osr, []byte(osRelease), 0o644); err != nil {
		t.Fatal(err)
	}
	return procSys, osr
}

const (
	debianRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
`
	ubuntuRelease = `PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
ID=ubuntu
ID_LIKE=debian
`
)

var errDenied = errors.New("fork/exec: operation not permitted")

func TestUserNSRemedyDebian(t *testing.T) {
	procSys, osr := fakeHost(t, map[string]string{
		"kernel/unprivileged_userns_clone": "0",
		"user/max_user_namespaces":         "31204",
	}, debianRelease)
	d := readDistro(osr)
	if d.String() != "debian 12" {
		t.Fatalf("distro %q", d)
	}
	c := userNSCheck(errDenied, readSysctls(procSys), d, 1000, template(t), "/usr/local/bin/shadow")
	if c.Status != StatusMissing || !c.Required {
		t.Fatalf("status %s", c.Status)
	}
	want := "sudo sysctl -w kernel.unprivileged_userns_clone=1\n" +
		"echo 'kernel.unprivileged_userns_clone = 1' | sudo tee -a /etc/sysctl.d/90-shadow.conf"
	if c.Remedy != want {
		t.Errorf("remedy:\n%s\nwant:\n%s", c.Remedy, want)
	}
	if !strings.Contains(c.Detail, "kernel.unprivileged_userns_clone = 0") {
		t.Errorf("detail does not name the switch: %s", c.Detail)
	}
	// The same host with the switch on: nothing to fix.
	procSys, _ = fakeHost(t, map[string]string{"kernel/unprivileged_userns_clone": "1"}, debianRelease)
	if c := userNSCheck(nil, readSysctls(procSys), d, 1000, "", ""); c.Status != StatusOK || c.Remedy != "" {
		t.Errorf("switch on: %+v", c)
	}
}

func TestUserNSRemedyUbuntu(t *testing.T) {
	procSys, osr := fakeHost(t, map[string]string{
		"kernel/apparmor_restrict_unprivileged_userns": "1",
		"kernel/unprivileged_userns_clone":             "1",
	}, ubuntuRelease)
	d := readDistro(osr)
	c := userNSCheck(errDenied, readSysctls(procSys), d, 1000, template(t), "/home/me/bin/shadow")
	if c.Status != StatusMissing {
		t.Fatalf("status %s", c.Status)
	}
	for _, want := range []string{
		"sudo tee /etc/apparmor.d/shadow >/dev/null <<'EOF'\n",
		"profile shadow /home/me/bin/shadow flags=(unconfined) {",
		"  userns,\n",
		"\nEOF\nsudo apparmor_parser -r /etc/apparmor.d/shadow",
	} {
		if !strings.Contains(c.Remedy, want) {
			t.Errorf("remedy lacks %q:\n%s", want, c.Remedy)
		}
	}
	if strings.Contains(c.Remedy, "@SHADOW_PATH@") || strings.Contains(c.Remedy, "sysctl") {
		t.Errorf("remedy:\n%s", c.Remedy)
	}
}

func TestUserNSRemedyMaxZero(t *testing.T) {
	procSys, osr := fakeHost(t, map[string]string{"user/max_user_namespaces": "0"}, "ID=fedora\nVERSION_ID=40\n")
	c := userNSCheck(errDenied, readSysctls(procSys), readDistro(osr), 1000, "", "")
	if !strings.HasPrefix(c.Remedy, "sudo sysctl -w user.max_user_namespaces=15000\n") {
		t.Errorf("remedy: %s", c.Remedy)
	}
}

// TestUserNSRootOnly: root can create user namespaces even when the switch
// is off for everyone else: degraded, and run still works.
func TestUserNSRootOnly(t *testing.T) {
	procSys, osr := fakeHost(t, map[string]string{"kernel/unprivileged_userns_clone": "0"}, debianRelease)
	c := userNSCheck(nil, readSysctls(procSys), readDistro(osr), 0, "", "")
	if c.Status != StatusDegraded || !strings.Contains(c.Remedy, "kernel.unprivileged_userns_clone=1") {
		t.Errorf("%+v", c)
	}
	if r := (Report{Checks: []Check{c}}); !r.OK() {
		t.Error("a degraded check makes OK false")
	}
	if r := (Report{Checks: []Check{{Name: "x", Required: true, Status: StatusMissing}}}); r.OK() {
		t.Error("a missing required check leaves OK true")
	}
	if r := (Report{Checks: []Check{{Name: "x", Status: StatusMissing}}}); !r.OK() {
		t.Error("a missing optional check makes OK false")
	}
}

func TestKernelCheck(t *testing.T) {
	for rel, want := range map[string]Status{
		"6.18.44-fc-v782": StatusOK, "5.11.0-1-amd64": StatusOK, "5.10.0-28-amd64": StatusMissing,
		"4.19.0": StatusMissing, "garbage": StatusMissing, "10.0": StatusOK,
	} {
		if got := kernelCheck(rel).Status; got != want {
			t.Errorf("kernel %s: %s, want %s", rel, got, want)
		}
	}
}

func TestLandlockCheck(t *testing.T) {
	deb := Distro{ID: "debian"}
	if c := landlockCheck(0, 0, deb); c.Status != StatusMissing || !c.Required || !strings.Contains(c.Remedy, "update-grub") {
		t.Errorf("root without Landlock: %+v", c)
	}
	if c := landlockCheck(0, 1000, deb); c.Status != StatusDegraded || c.Required {
		t.Errorf("user without Landlock: %+v", c)
	}
	if c := landlockCheck(1, 1000, deb); c.Status != StatusDegraded {
		t.Errorf("ABI 1: %+v", c)
	}
	if c := landlockCheck(7, 0, deb); c.Status != StatusOK || c.Detail != "ABI 7" {
		t.Errorf("ABI 7: %+v", c)
	}
}

func TestUserCheck(t *testing.T) {
	if c := userCheck(0); c.Status != StatusDegraded || c.Required || c.Remedy == "" {
		t.Errorf("root: %+v", c)
	}
	if c := userCheck(1000); c.Status != StatusOK {
		t.Errorf("user: %+v", c)
	}
}

func TestNetworkCheck(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("not found") }
	if c := networkCheck(none, Distro{ID: "ubuntu"}); c.Status != StatusDegraded || c.Remedy != "sudo apt install passt" {
		t.Errorf("%+v", c)
	}
	pasta := func(n string) (string, error) {
		if n == "pasta" {
			return "/usr/bin/pasta", nil
		}
		return "", errors.New("not found")
	}
	if c := networkCheck(pasta, Distro{}); c.Status != StatusOK || !strings.Contains(c.Detail, "/usr/bin/pasta") {
		t.Errorf("%+v", c)
	}
}

func TestReadDistroQuoting(t *testing.T) {
	_, osr := fakeHost(t, nil, "ID='linuxmint'\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=\"22\"\n")
	d := readDistro(osr)
	if d.ID != "linuxmint" || !d.is("ubuntu") || !d.is("debian") || d.Version != "22" {
		t.Errorf("%+v", d)
	}
	if d.ubuntuAtLeast(24, 4) {
		t.Error("mint 22 read as Ubuntu 24.04")
	}
	if !(Distro{ID: "ubuntu", Version: "24.10"}).ubuntuAtLeast(24, 4) || (Distro{ID: "ubuntu", Version: "23.10"}).ubuntuAtLeast(24, 4) {
		t.Error("ubuntu version comparison")
	}
	if readDistro("/nonexistent").String() != "unknown" {
		t.Error("missing os-release")
	}
}

func TestTextColour(t *testing.T) {
	r := Report{Distro: "debian 12", Kernel: "6.1", Checks: []Check{
		{Name: "kernel", Required: true, Status: StatusOK, Detail: "fine"},
		{Name: "user namespaces", Required: true, Status: StatusMissing, Detail: "no", Remedy: "line one\nline two"},
	}}
	var plain, colour bytes.Buffer
	r.Text(&plain, false)
	r.Text(&colour, true)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("escape codes without colour")
	}
	if !strings.Contains(colour.String(), "\x1b[31mmissing") {
		t.Errorf("no red for missing:\n%q", colour.String())
	}
	for _, want := range []string{"        line one\n        line two\n", "will not work"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, plain.String())
		}
	}
}

// TestTunCheck: a tun device that the probe could not use is reported missing with the cause and
// the command that fixes it; one it could use is ok.
func TestTunCheck(t *testing.T) {
	denied := sandbox.TunProblem("/dev/net/tun", unix.EACCES)
	for _, tc := range []struct {
		name           string
		probe, host    error
		status         Status
		detail, remedy string
	}{
		{"usable", nil, nil, StatusOK, "created a tap interface", ""},
		{"mode 0600", errors.New(denied.Error()), denied, StatusMissing, "may not", "sudo chmod 0666 /dev/net/tun\necho 'KERNEL==\"tun\", MODE=\"0666\"' | sudo tee /etc/udev/rules.d/60-tun.rules   # keeps it so across reboots"},
		{"absent", sandbox.TunProblem("/dev/net/tun", unix.ENOENT), sandbox.TunProblem("/dev/net/tun", unix.ENOENT), StatusMissing, "does not exist", "sudo modprobe tun (in a container, give it the device: docker run --device /dev/net/tun)"},
		{"no driver", sandbox.TunProblem("/dev/net/tun", unix.ENODEV), sandbox.TunProblem("/dev/net/tun", unix.ENODEV), StatusMissing, "no driver", "sudo modprobe tun"},
		{"ioctl denied", errors.New("TUNSETIFF: operation not permitted"), nil, StatusMissing, "TUNSETIFF", "check that no security module"},
	} {
		c := tunCheck(tc.probe, tc.host)
		if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) || !strings.HasPrefix(c.Remedy, tc.remedy) || (tc.remedy == "" && c.Remedy != "") {
			t.Errorf("%s: %s %q, fix %q; want %s with %q, fix %q", tc.name, c.Status, c.Detail, c.Remedy, tc.status, tc.detail, tc.remedy)
		}
		if c.Required {
			t.Errorf("%s: tun is required; only --allow-network needs it", tc.name)
		}
	}
}

// TestRunLayerCheck: on a kernel whose tmpfs keeps user.* attributes (6.6 and later) the run's
// layer is in memory; on an older one the check says what is lost, without blocking.
func TestRunLayerCheck(t *testing.T) {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	c := runLayerCheck(context.Background(), Options{Exe: "/proc/self/exe", ProbeDir: t.TempDir()}, nil)
	if c.Required {
		t.Error("the run layer check blocks runs")
	}
	if ma, mi, _ := parseVersion(unix.ByteSliceToString(uts.Release[:])); (ma > 6 || ma == 6 && mi >= 6) && c.Status != StatusOK {
		t.Errorf("run layer in memory on this kernel: %s: %s", c.Status, c.Detail)
	}
	if c := runLayerCheck(context.Background(), Options{}, errDenied); c.Status != StatusMissing {
		t.Errorf("without a user namespace: %s", c.Status)
	}
}
