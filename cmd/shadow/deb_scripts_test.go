package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebAppArmorScripts runs the package's postinst and prerm in a private mount namespace
// whose /proc/sys/kernel and /sys/kernel/security are fixtures, with an apparmor_parser that
// logs its arguments: postinst loads /etc/apparmor.d/shadow only when AppArmor restricts
// unprivileged user namespaces and apparmor_parser exists, prerm unloads it only when loaded,
// and neither fails the install in any case.
func TestDebAppArmorScripts(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: the scripts run in a private mount namespace with fixture sysctls")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	root := repoRoot(t)
	for _, c := range []struct {
		restrict string // kernel.apparmor_restrict_unprivileged_userns; "" when the kernel has none
		parser   bool   // apparmor_parser installed
		loaded   bool   // the profile is loaded when prerm runs
		load     bool   // postinst must load it
	}{
		{"1", true, true, true},
		{"1", false, false, false},
		{"0", true, false, false},
		{"", true, false, false},
		{"", false, false, false},
	} {
		dir := t.TempDir()
		bin, log := filepath.Join(dir, "bin"), filepath.Join(dir, "parser.log")
		os.Mkdir(bin, 0o755)
		if c.parser {
			os.WriteFile(filepath.Join(bin, "apparmor_parser"), []byte("#!/bin/sh\necho \"$*\" >> "+log+"\n"), 0o755)
		}
		sysctl := ""
		if c.restrict != "" {
			sysctl = "echo " + c.restrict + " > /proc/sys/kernel/apparmor_restrict_unprivileged_userns; "
		}
		profiles := ""
		if c.loaded {
			profiles = "echo 'shadow (unconfined)' > /sys/kernel/security/apparmor/profiles; "
		}
		script := "set -e; mount -t tmpfs none /proc/sys/kernel; " + sysctl +
			"mount -t tmpfs none /sys/kernel/security; mkdir -p /sys/kernel/security/apparmor; " + profiles +
			"PATH=" + bin + ":/usr/bin:/bin; export PATH; " +
			"sh " + filepath.Join(root, "packaging/deb/postinst") + " configure; echo postinst=$?; " +
			"sh " + filepath.Join(root, "packaging/deb/prerm") + " remove; echo prerm=$?"
		out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "postinst=0") || !strings.Contains(string(out), "prerm=0") {
			t.Fatalf("%+v: %v\n%s", c, err, out)
		}
		calls, _ := os.ReadFile(log)
		var want string
		if c.load {
			want += "-r -T -W /etc/apparmor.d/shadow\n"
		}
		if c.loaded && c.parser {
			want += "-R /etc/apparmor.d/shadow\n"
		}
		if string(calls) != want {
			t.Errorf("restrict=%q parser=%v loaded=%v: apparmor_parser ran with\n%s\nwant\n%s", c.restrict, c.parser, c.loaded, calls, want)
		}
	}
}
