package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The jail's PID 1 and its exec stage are the small shadow-init program (cmd/shadow-init), which
// links none of the app, when it is installed with shadow: beside the executable (a build's bin/,
// a copied release) or in ../libexec/shadow (make install, the Debian package). Without it shadow
// re-executes itself, as a binary installed alone must.
//
// shadow-init is built with the shadowinit tag (make build), which leaves out of the package the
// files only the host runs: they start `//go:build !shadowinit`. With them go libseccomp (the
// host compiles the seccomp program, jailSpec.Seccomp), the allow-list proxy and its TLS, and the
// host's planning: PID 1 links what it runs and no more.

// InitProgram is the name of the jail's PID 1 program.
const InitProgram = "shadow-init"

// initBinary returns the program that is the jail's PID 1 and exec stage, for the shadow
// executable exe: shadow-init where it is installed with exe, else exe itself (self).
func initBinary(exe string) (path string, self bool) {
	if appArmorRestrictsUserns() {
		// The AppArmor profile that lets shadow make user namespaces attaches to shadow's
		// path: PID 1, which makes the command's, must be shadow itself.
		return exe, true
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{
		filepath.Join(dir, InitProgram),
		filepath.Join(dir, "..", "libexec", "shadow", InitProgram),
	} {
		if p = filepath.Clean(p); isTrustedProgram(p) {
			return p, false
		}
	}
	return exe, true
}

// isTrustedProgram reports whether p is a regular file this process may execute that only root
// or the invoker can have put there: owned by one of them, writable by no one else, in a
// directory no one else may write to (or a sticky one, where no one else can replace it). A
// shadow copied into /tmp must not run another user's /tmp/shadow-init as the jail's PID 1.
func isTrustedProgram(p string) bool {
	var st, dir unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || unix.Access(p, unix.X_OK) != nil {
		return false
	}
	if unix.Stat(filepath.Dir(p), &dir) != nil {
		return false
	}
	euid := uint32(os.Geteuid())
	ownedWell := func(st unix.Stat_t) bool { return st.Uid == 0 || st.Uid == euid }
	return ownedWell(st) && st.Mode&0o022 == 0 &&
		ownedWell(dir) && (dir.Mode&0o022 == 0 || dir.Mode&unix.S_ISVTX != 0)
}

// appArmorRestrictsUserns reports whether AppArmor lets only the programs of a profile make user
// namespaces (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 24.04 and later).
func appArmorRestrictsUserns() bool {
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}
