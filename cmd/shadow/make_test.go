package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the top of the repository, where the Makefile is.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Skipf("no Makefile above the package: %v", err)
	}
	return root
}

// TestReleaseBinary builds the release binaries with `make release` (or takes those named by
// SHADOW_RELEASE_BIN and SHADOW_RELEASE_INIT_BIN, as `make release-check` does) and checks both
// are static (no ELF interpreter, no shared library), that their checksum files match, that
// `version` names the commit it was built from, and that shadow runs a command in the jail
// alone (its own PID 1) and with shadow-init beside it (which is then PID 1).
func TestReleaseBinary(t *testing.T) {
	bin, initBin := os.Getenv("SHADOW_RELEASE_BIN"), os.Getenv("SHADOW_RELEASE_INIT_BIN")
	root := repoRoot(t)
	built := bin == ""
	if built {
		if testing.Short() {
			t.Skip("builds the release binary; skipped with -short")
		}
		if _, err := exec.LookPath("make"); err != nil {
			t.Skip("make is not installed (apt-get install make)")
		}
		if os.Getuid() != 0 {
			out, _ := exec.Command("pkg-config", "--variable=libdir", "libseccomp").Output()
			if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "libseccomp.a")); err != nil {
				t.Skip("libseccomp's static library is not installed (apt-get install libseccomp-dev; as root, make installs it)")
			}
		}
		dir := t.TempDir()
		mk := exec.Command("make", "-s", "-C", root, "release", "RELEASE_DIR="+dir,
			"GO="+filepath.Join(runtime.GOROOT(), "bin", "go"))
		if out, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("make release: %v\n%s", err, out)
		}
		bin = filepath.Join(dir, "shadow-linux-"+runtime.GOARCH)
		initBin = filepath.Join(dir, "shadow-init-linux-"+runtime.GOARCH)
	}
	if initBin == "" {
		initBin = filepath.Join(filepath.Dir(bin), "shadow-init-linux-"+runtime.GOARCH)
	}

	for _, bin := range []string{bin, initBin} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s has a %s program header: it is not static", bin, p.Type)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v (%v)", bin, libs, err)
		}
		f.Close()

		sum, err := os.ReadFile(bin + ".sha256")
		if err != nil {
			t.Fatalf("no checksum file: %v", err)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		if want := hex.EncodeToString(h[:]) + "  " + filepath.Base(bin) + "\n"; string(sum) != want {
			t.Errorf("%s.sha256 = %q, want %q (the format sha256sum -c reads)", bin, sum, want)
		}
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if built {
		if head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
			if want := "\ncommit:       " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
				t.Errorf("version of a build from a git checkout does not name its commit (%s):\n%s", want, out)
			}
		}
	}

	// A run in the jail, as a user would after copying the binary alone somewhere.
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "a.txt"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "run", "--project", project, "--", "sh", "-c", "echo 2 >> a.txt")
	run.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("%s run: %v\n%s", bin, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "0 added, 1 modified, 0 deleted") {
		t.Errorf("the release binary's run staged nothing:\n%s", stderr.String())
	}

	// Alone, shadow is its own PID 1; installed with shadow-init (as README says), shadow-init is.
	pair := t.TempDir()
	if err := copyExecutable(bin, filepath.Join(pair, "shadow")); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(initBin, filepath.Join(pair, "shadow-init")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ bin, want string }{{bin, "exe"}, {filepath.Join(pair, "shadow"), initComm()}} {
		cmd := exec.Command(c.bin, "run", "--project", project, "--", "cat", "/proc/1/comm")
		cmd.Env = run.Env
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("%s run: PID 1 of the jail is %q (%v), want %s", c.bin, strings.TrimSpace(string(out)), err, c.want)
		}
	}
}

// initComm is what /proc/1/comm says in a jail of a shadow installed with shadow-init:
// shadow-init, or exe (shadow re-executed as /proc/self/exe) where AppArmor lets only shadow
// make user namespaces.
func initComm() string {
	if b, _ := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); strings.TrimSpace(string(b)) == "1" {
		return "exe"
	}
	return "shadow-init"
}

// copyExecutable copies the program src to dst, mode 0755.
func copyExecutable(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// fakeTools makes a directory to be the whole PATH, holding the tools .ci/deps itself uses and
// those of have; the others are missing.
func fakeTools(t *testing.T, have ...string) string {
	t.Helper()
	// Not under t.TempDir(), which only this user may enter: the tools run as shadowtest too.
	dir, err := os.MkdirTemp("", "shadow-deps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, name := range append([]string{"bash", "sh", "awk", "sort", "tr", "sed", "id", "cat", "chmod", "pkg-config"}, have...) {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s is not installed", name)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDepsInstallsOrSays: as root, `.ci/deps test` (run by `make test`) installs what the tests
// need with apt-get; as another user it names what is missing and that the tests needing it are
// skipped, and `.ci/deps report` ends `make test` with a line that says so.
func TestDepsInstallsOrSays(t *testing.T) {
	root := repoRoot(t)
	deps := filepath.Join(root, ".ci", "deps")

	if os.Getuid() == 0 {
		dir := fakeTools(t, "git", "patch")
		log := filepath.Join(t.TempDir(), "apt.log")
		// apt-get as it looks from here: it logs what it is asked and "installs" the commands.
		fake := `#!/bin/bash
echo "$*" >> ` + log + `
[ "$1" = install ] || exit 0
for pkg in "$@"; do
  case $pkg in
    tmux) cmds=tmux ;; passt) cmds=pasta ;; slirp4netns) cmds=slirp4netns ;;
    util-linux) cmds="setpriv unshare" ;; passwd) cmds=useradd ;; curl) cmds=curl ;; *) cmds= ;;
  esac
  for c in $cmds; do printf '#!/bin/sh\n' > ` + dir + `/$c; chmod +x ` + dir + `/$c; done
done
`
		if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", deps, "test")
		cmd.Env = []string{"PATH=" + dir}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf(".ci/deps test as root: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(log)
		if !strings.Contains(string(b), "update") || !strings.Contains(string(b), "install -y -qq curl passt slirp4netns tmux util-linux") {
			t.Errorf("apt-get was asked:\n%s\nwant an update and an install of curl passt slirp4netns tmux util-linux\n%s", b, out)
		}
	}

	// As a user who may not install: run as shadowtest when this is root, else as this user.
	dir := fakeTools(t, "git", "patch", "setpriv", "unshare")
	sh := func(arg string) (string, int) {
		args := []string{"bash", deps, arg}
		if os.Getuid() == 0 {
			if _, err := exec.LookPath("setpriv"); err != nil {
				t.Skip("setpriv (util-linux) is not installed")
			}
			if _, err := user.Lookup("shadowtest"); err != nil {
				if out, err := exec.Command("useradd", "-m", "shadowtest").CombinedOutput(); err != nil {
					t.Fatalf("useradd: %v: %s", err, out)
				}
			}
			args = append([]string{"setpriv", "--reuid=shadowtest", "--regid=shadowtest", "--init-groups"}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = []string{"PATH=" + dir}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := sh("test"); code != 0 || out != "deps: missing tmux, pasta, slirp4netns, curl: the tests that need them will be skipped (sudo apt-get install -y curl passt slirp4netns tmux, or run make test as root, which installs them)\n" {
		t.Errorf(".ci/deps test as a user: exit %d\n%s", code, out)
	}
	want := "make test: skipped the tests that need tmux, pasta, slirp4netns, curl (not installed: sudo apt-get install -y curl passt slirp4netns tmux), and the jail tests' second run as an unprivileged user (it needs root to create that user); as root, make test installs what it needs and runs every test.\n"
	if out, code := sh("report"); code != 0 || out != want {
		t.Errorf(".ci/deps report as a user: exit %d\n got %q\nwant %q", code, out, want)
	}

	// The Makefile and .ci/run install through .ci/deps, and name no package of their own.
	for _, f := range []string{"Makefile", ".ci/run"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "libseccomp-dev") || strings.Contains(string(b), "slirp4netns") {
			t.Errorf("%s keeps a package list of its own; .ci/deps is the one list", f)
		}
	}
}
