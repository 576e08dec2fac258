package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/testuser"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
)

// TestDebPackage installs the Debian package of `make deb` with apt-get, as `make deb-check`
// does (it names the package in SHADOW_DEB): the files are where Debian puts them, shadow doctor
// passes and a jailed command runs as an ordinary user (with /usr/libexec/shadow/shadow-init as
// its PID 1), `man shadow-run` renders, bash completes
// a subcommand and every preset after --preset; then `apt-get remove --purge` leaves none of the
// package's files. It installs /usr/bin/shadow on this machine for its length, so it runs only
// when asked, as root.
func TestDebPackage(t *testing.T) {
	deb := os.Getenv("SHADOW_DEB")
	if deb == "" {
		t.Skip("installs a package on this machine: make deb-check runs it (as root)")
	}
	if os.Getuid() != 0 {
		t.Skip("not root: installing a package needs root")
	}
	for _, tool := range []string{"apt-get", "dpkg", "man"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (apt-get install -y man-db for man)", tool)
		}
	}
	if err := exec.Command("dpkg-query", "-W", "shadow").Run(); err == nil {
		t.Skip("a shadow package is installed already: this test installs and purges its own")
	}
	if _, err := os.Lstat("/usr/bin/shadow"); err == nil {
		t.Skip("/usr/bin/shadow exists and belongs to no package: not overwriting it")
	}
	sh := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	abs, err := filepath.Abs(deb)
	if err != nil {
		t.Fatal(err)
	}
	sh("apt-get", "install", "-y", "-qq", abs)
	purged := false
	t.Cleanup(func() {
		if !purged {
			exec.Command("apt-get", "remove", "--purge", "-y", "-qq", "shadow").Run()
		}
	})

	listed := strings.Fields(sh("dpkg", "-L", "shadow"))
	has := map[string]bool{}
	for _, p := range listed {
		has[p] = true
	}
	want := []string{"/usr/bin/shadow", "/usr/libexec/shadow/shadow-init", "/etc/apparmor.d/shadow",
		"/usr/share/bash-completion/completions/shadow", "/usr/share/zsh/vendor-completions/_shadow",
		"/usr/share/fish/vendor_completions.d/shadow.fish", "/usr/share/doc/shadow/copyright",
		"/usr/share/doc/shadow/changelog.Debian.gz", "/usr/share/doc/shadow/README.md.gz"}
	for _, page := range manPages(newRootCmd()) {
		want = append(want, "/usr/share/man/man1/"+page+".gz")
	}
	for _, p := range want {
		if !has[p] {
			t.Errorf("the package has no %s", p)
		}
	}
	if b, err := os.ReadFile("/etc/apparmor.d/shadow"); err != nil || !strings.Contains(string(b), "profile shadow /usr/bin/shadow ") {
		t.Errorf("/etc/apparmor.d/shadow does not name /usr/bin/shadow (%v):\n%s", err, b)
	}

	// As an ordinary user, the way the package is meant to be used.
	a := testuser.Get(t)
	// Not under t.TempDir(), which only root may enter.
	dir, err := os.MkdirTemp("", "shadow-deb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	project := filepath.Join(dir, "project")
	os.Mkdir(project, 0o755)
	os.Chown(dir, a.UID, a.GID)
	os.Chown(project, a.UID, a.GID)
	userCmd := func(args ...string) *exec.Cmd {
		cmd := a.Command(args[0], args[1:]...)
		cmd.Dir = project
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home, "USER=" + a.Name, "LANG=C.UTF-8",
			"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
		return cmd
	}
	asUser := func(args ...string) (string, error) {
		out, err := userCmd(args...).CombinedOutput()
		return string(out), err
	}
	if out, err := asUser("shadow", "doctor"); err != nil {
		t.Errorf("shadow doctor as %s: %v\n%s", a.Name, err, out)
	}
	if out, err := asUser("shadow", "run", "--", "sh", "-c", "echo hi > f"); err != nil || !strings.Contains(out, "1 added") {
		t.Errorf("shadow run as %s: %v\n%s", a.Name, err, out)
	}
	if out, err := userCmd("shadow", "run", "--", "cat", "/proc/1/comm").Output(); err != nil || strings.TrimSpace(string(out)) != initComm() {
		t.Errorf("shadow run as %s: PID 1 of the jail is %q (%v), want %s", a.Name, strings.TrimSpace(string(out)), err, initComm())
	}
	if out, err := asUser("man", "-P", "cat", "shadow-run"); err != nil || !strings.Contains(out, "SHADOW-RUN(1)") || !strings.Contains(out, "shadow run [flags] -- CMD") ||
		!strings.Contains(out, "--preset") {
		t.Errorf("man shadow-run: %v\n%s", err, out)
	}

	// bash-completion's loader finds the file by the command's name; cobra's function answers.
	complete := func(line string) []string {
		t.Helper()
		script := `. /usr/share/bash-completion/completions/shadow
COMP_LINE="` + line + `"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<<"$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); __start_shadow; printf '%s\n' "${COMPREPLY[@]}"`
		if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err == nil {
			script = `. /usr/share/bash-completion/bash_completion; __load_completion shadow || exit 9; ` +
				strings.TrimPrefix(script, ". /usr/share/bash-completion/completions/shadow\n")
		}
		// Outside an interactive completion, bash's compopt complains on stderr; COMPREPLY is the answer.
		cmd := userCmd("bash", "-c", script)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash completion of %q: %v\n%s%s", line, err, out, stderr.String())
		}
		return strings.Fields(string(out))
	}
	if got := complete("shadow ru"); strings.Join(got, " ") != "run" {
		t.Errorf("shadow ru<TAB> completes to %q, want run", got)
	}
	got := strings.Join(complete("shadow run --preset "), " ")
	if want := strings.Join(preset.Names(), " "); got != want {
		t.Errorf("shadow run --preset <TAB> offers %q, want the presets %q", got, want)
	}

	sh("apt-get", "remove", "--purge", "-y", "-qq", "shadow")
	purged = true
	for _, p := range listed {
		if fi, err := os.Lstat(p); err == nil && (!fi.IsDir() || strings.HasSuffix(p, "/shadow")) {
			t.Errorf("apt-get remove --purge left %s", p)
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Status}", "shadow").CombinedOutput(); err == nil && !strings.Contains(string(out), "not-installed") {
		t.Errorf("dpkg still knows the package after the purge: %s", out)
	}
}
