package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitBinaryLayouts: shadow finds shadow-init in every layout it is installed in (a build's
// bin/, a release copied beside shadow, make install and the Debian package's libexec), prefers
// the one beside it, and is its own PID 1 when none is there, the one there cannot be run, or
// someone other than root and the invoker could have put it there or replace it.
func TestInitBinaryLayouts(t *testing.T) {
	if appArmorRestrictsUserns() {
		t.Skip("AppArmor restricts user namespaces here: PID 1 is shadow itself, whatever is installed")
	}
	file := func(p string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		files map[string]os.FileMode // under the prefix
		want  string                 // "": shadow itself
		dir   os.FileMode            // of bin/, when not 0755
		owner int                    // of bin/shadow-init, when not the invoker (root only)
	}{
		{"beside", map[string]os.FileMode{"bin/shadow-init": 0o755}, "bin/shadow-init", 0, 0},
		{"libexec", map[string]os.FileMode{"libexec/shadow/shadow-init": 0o755}, "libexec/shadow/shadow-init", 0, 0},
		{"beside first", map[string]os.FileMode{"bin/shadow-init": 0o755, "libexec/shadow/shadow-init": 0o755}, "bin/shadow-init", 0, 0},
		{"none", nil, "", 0, 0},
		{"not executable", map[string]os.FileMode{"bin/shadow-init": 0o644}, "", 0, 0},
		{"a directory", map[string]os.FileMode{"bin/shadow-init/x": 0o755}, "", 0, 0},
		{"other name", map[string]os.FileMode{"bin/shadow-init-linux-amd64": 0o755}, "", 0, 0},
		{"group-writable", map[string]os.FileMode{"bin/shadow-init": 0o775}, "", 0, 0},
		{"world-writable", map[string]os.FileMode{"bin/shadow-init": 0o757}, "", 0, 0},
		{"in a directory anyone may write to", map[string]os.FileMode{"bin/shadow-init": 0o755}, "", 0o777, 0},
		{"in a sticky directory like /tmp", map[string]os.FileMode{"bin/shadow-init": 0o755}, "bin/shadow-init", os.ModeSticky | 0o777, 0},
		{"owned by another user", map[string]os.FileMode{"bin/shadow-init": 0o755}, "", 0, 1001},
		{"owned by another user in /tmp", map[string]os.FileMode{"bin/shadow-init": 0o755}, "", os.ModeSticky | 0o777, 1001},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := t.TempDir()
			exe := filepath.Join(prefix, "bin", "shadow")
			file(exe, 0o755)
			for p, mode := range c.files {
				file(filepath.Join(prefix, p), mode)
				// WriteFile's mode passes through the umask.
				if err := os.Chmod(filepath.Join(prefix, p), mode); err != nil {
					t.Fatal(err)
				}
			}
			if c.dir != 0 {
				if err := os.Chmod(filepath.Join(prefix, "bin"), c.dir); err != nil {
					t.Fatal(err)
				}
			}
			if c.owner != 0 {
				if os.Geteuid() != 0 {
					t.Skip("only root can give a file to another user")
				}
				if err := os.Chown(filepath.Join(prefix, "bin", "shadow-init"), c.owner, c.owner); err != nil {
					t.Fatal(err)
				}
			}
			got, self := initBinary(exe)
			want := exe
			if c.want != "" {
				want = filepath.Join(prefix, c.want)
			}
			if got != want || self != (c.want == "") {
				t.Errorf("initBinary = %s (self %v), want %s (self %v)", got, self, want, c.want == "")
			}
		})
	}
}

// TestRunTrueInitProgram: the jail's PID 1 is the program initBinary chooses: shadow-init where
// it is installed beside the running binary (TestUnprivileged puts one beside its copy of the
// tests, so that the jail tests run again with it as PID 1), this binary re-executed otherwise.
func TestRunTrueInitProgram(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := "exe" // /proc/self/exe re-executed
	if _, self := initBinary(exe); !self {
		want = InitProgram
	}
	j := newTestJail(t)
	res, out, errOut := j.run(t, j.policy(), "cat", "/proc/1/comm")
	if res.ExitCode != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("PID 1 of the jail is %q (exit %d, stderr %q), want %s", strings.TrimSpace(out), res.ExitCode, errOut, want)
	}
	t.Logf("PID 1 of the jail: %s", want)
}

// TestEscapeInitThreadsFiltered: every thread of the jail's PID 1 runs under the seccomp filter
// with no_new_privs (PID 1 loads the host's program on all its threads at once, TSYNC), so that
// no thread of it is a way around the filter.
func TestEscapeInitThreadsFiltered(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c",
		`for f in /proc/1/task/*/status; do echo "$f $(grep -E '^(Seccomp|NoNewPrivs):' "$f" | tr -s '\t\n' '  ')"; done`)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		t.Fatalf("PID 1 has %d threads, want the Go runtime's several:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !strings.Contains(l, "NoNewPrivs: 1") || !strings.Contains(l, "Seccomp: 2") {
			t.Errorf("a thread of PID 1 is not filtered: %s", l)
		}
	}
}
