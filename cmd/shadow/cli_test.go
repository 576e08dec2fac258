package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// The test binary is also the shadow binary: with SHADOW_TEST_CLI=1, or with a first argument
// that is not a test flag, it runs main. The tests drive the real CLI as a user would, and the
// jail's stages, doctor's probes and the in-jail audits re-execute this binary with a scrubbed
// environment, so they are recognised by their arguments.
func TestMain(m *testing.M) {
	cliArgs := len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.")
	if cliArgs || os.Getenv("SHADOW_TEST_CLI") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// cli runs shadow commands with a private state and config directory.
type cli struct {
	t     *testing.T
	bin   string
	state string
	env   []string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &cli{t: t, bin: self, state: filepath.Join(dir, "state")}
	c.env = append(os.Environ(), "SHADOW_TEST_CLI=1",
		"XDG_STATE_HOME="+c.state, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	return c
}

// run runs shadow with args in dir and returns stdout, stderr and the exit status.
func (c *cli) run(dir string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = dir
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("shadow %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// must runs shadow and fails the test unless it exits 0.
func (c *cli) must(dir string, args ...string) string {
	c.t.Helper()
	out, errs, code := c.run(dir, args...)
	if code != 0 {
		c.t.Fatalf("shadow %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

// fixture writes a small git project and returns its path.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "project")
	for name, content := range files {
		path := filepath.Join(p, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, p, "init", "-q")
	git(t, p, "add", "-A")
	git(t, p, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
	return p
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const agentScript = `set -e
sed -i 's/two/TWO/' a.txt
echo new > b.txt
rm gone.txt
mkdir -p sub && echo deep > sub/c.txt
chmod +x run.sh
`

func TestRunDiffApplyRollback(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n", "run.sh": "echo hi\n"})

	_, errs, code := c.run(p, "run", "--", "sh", "-c", agentScript)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "2 added, 2 modified, 1 deleted") {
		t.Errorf("run summary does not count the changes:\n%s", errs)
	}
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Fatalf("the host project was written during the run:\n%s", st)
	}

	stat := c.must(p, "diff", "--stat")
	for _, want := range []string{"a.txt", "b.txt", "gone.txt", "sub/c.txt", "5 files changed"} {
		if !strings.Contains(stat, want) {
			t.Errorf("diff --stat lacks %q:\n%s", want, stat)
		}
	}
	names := c.must(p, "diff", "--name-only")
	if got := strings.Fields(names); len(got) != 5 {
		t.Errorf("--name-only = %q", names)
	}

	// The diff applies with git apply onto the project as it was, and gives the agent's tree.
	patch := c.must(p, "diff", "--binary")
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", p, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	apply := exec.Command("git", "apply", "-")
	apply.Dir = clone
	apply.Stdin = strings.NewReader(patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply of shadow diff: %v: %s\n%s", err, out, patch)
	}

	c.must(p, "apply", "--all", "--yes")
	if got := readFile(t, filepath.Join(p, "a.txt")); got != "one\nTWO\nthree\n" {
		t.Errorf("a.txt after apply = %q", got)
	}
	if _, err := os.Stat(filepath.Join(p, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt still there after apply: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(p, "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("run.sh mode after apply: %v %v", fi, err)
	}
	for _, f := range []string{"a.txt", "b.txt", "sub/c.txt", "run.sh"} {
		if got, want := readFile(t, filepath.Join(p, f)), readFile(t, filepath.Join(clone, f)); got != want {
			t.Errorf("%s: apply wrote %q, git apply of the diff %q", f, got, want)
		}
	}

	c.must(p, "apply", "--rollback", "--yes")
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Fatalf("rollback left changes:\n%s", st)
	}
	if fi, err := os.Stat(filepath.Join(p, "run.sh")); err != nil || fi.Mode()&0o111 != 0 {
		t.Errorf("run.sh mode after rollback: %v %v", fi, err)
	}
}

func TestRunContinuesSession(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 >> a.txt")
	out, _, code := c.run(p, "run", "--", "cat", "a.txt")
	if code != 0 || out != "1\n2\n" {
		t.Fatalf("second run saw %q (exit %d), want the first run's change", out, code)
	}
	_, errs, code := c.run(p, "run", "--new", "--", "true")
	if code != 1 || !strings.Contains(errs, "already has an open session") {
		t.Errorf("--new with an open session: exit %d: %s", code, errs)
	}
	list := c.must(p, "sessions", "--json")
	if !strings.Contains(list, `"runs": 2`) || !strings.Contains(list, `"state": "open"`) {
		t.Errorf("sessions --json:\n%s", list)
	}
	c.must(p, "discard", "--yes")
	c.must(p, "run", "--new", "--", "true")
}

func TestExitCodes(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"run", "--", "sh", "-c", "exit 7"}, 7},
		{[]string{"run", "--timeout", "500ms", "--", "sleep", "30"}, 124},
		{[]string{"run", "--", "sh", "-c", "kill -9 $$"}, 137},
		{[]string{"run", "--", "/no/such/command"}, 127},
		{[]string{"run"}, 2},
		{[]string{"run", "--bogus-flag", "--", "true"}, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"verify", "--trust", "yolo"}, 2},
	} {
		_, errs, code := c.run(p, tc.args...)
		if code != tc.want {
			t.Errorf("shadow %v: exit %d, want %d\n%s", tc.args, code, tc.want, errs)
		}
	}
}

// Bad input gets a clear one-line error and changes nothing.
func TestBadInput(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	file := filepath.Join(p, "a.txt")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing project", []string{"run", "--project", "/no/such/dir", "--", "true"}, "does not exist"},
		{"project is a file", []string{"run", "--project", file, "--", "true"}, "not a directory"},
		{"unknown session", []string{"diff", "--session", "20200101-000000-abcdef"}, "session"},
		{"no session", []string{"diff", "--project", p}, "no open session"},
		{"bad --ro", []string{"run", "--ro", "/no/such/path", "--", "true"}, "/no/such/path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := c.run(p, tc.args...)
			if code != 1 && code != 2 {
				t.Errorf("exit %d, want 1 or 2", code)
			}
			if lines := strings.Count(strings.TrimSpace(errs), "\n"); lines != 0 || !strings.Contains(errs, tc.want) {
				t.Errorf("error is not one line naming %q:\n%s%s", tc.want, out, errs)
			}
		})
	}
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Errorf("bad input changed the project:\n%s", st)
	}

	// A corrupt session.json is reported in one line, and nothing is written.
	c.must(p, "run", "--", "sh", "-c", "echo 2 > a.txt")
	matches, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "session.json"))
	if len(matches) != 1 {
		t.Fatalf("session.json files: %v", matches)
	}
	if err := os.WriteFile(matches[0], []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"diff"}, {"apply", "--all", "--yes"}} {
		_, errs, code := c.run(p, args...)
		if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "session.json") {
			t.Errorf("shadow %v with a corrupt session.json: exit %d: %s", args, code, errs)
		}
	}
	if got := readFile(t, file); got != "1\n" {
		t.Errorf("a.txt = %q after a failed apply", got)
	}
}

// A hostile .shadow.toml cannot widen the policy until the user trusts it.
func TestHostileProjectConfig(t *testing.T) {
	c := newCLI(t)
	home := t.TempDir()
	c.env = append(c.env, "HOME="+home)
	secret := filepath.Join(home, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := fixture(t, map[string]string{".shadow.toml": "allow-network = true\nrw = [\"~\"]\n"})

	out, errs, code := c.run(p, "run", "--", "sh", "-c", "cat /proc/net/dev; echo ---; cat ~/secret.txt 2>&1; echo leak > ~/planted")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	for _, key := range []string{`"allow-network"`, `"rw"`} {
		if !strings.Contains(errs, "ignored "+key) {
			t.Errorf("no warning about %s:\n%s", key, errs)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Error("the jail read the home directory through an untrusted rw = [\"~\"]")
	}
	if _, err := os.Stat(filepath.Join(home, "planted")); !os.IsNotExist(err) {
		t.Error("the jail wrote the host home through an untrusted rw = [\"~\"]")
	}
	if ifaces := netDevices(out); len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("network devices in the jail = %v, want only lo", ifaces)
	}

	c.must(p, "trust-config")
	out, errs, code = c.run(p, "run", "--", "sh", "-c", "cat ~/secret.txt")
	if code != 0 || !strings.Contains(out, "s3cret") {
		t.Errorf("trusted rw = [\"~\"] not applied: exit %d %q %s", code, out, errs)
	}
}

// netDevices lists the interface names of /proc/net/dev text.
func netDevices(procNetDev string) []string {
	var out []string
	procNetDev, _, _ = strings.Cut(procNetDev, "---")
	for _, line := range strings.Split(procNetDev, "\n") {
		name, _, ok := strings.Cut(line, ":")
		if !ok || strings.Contains(name, "|") {
			continue
		}
		out = append(out, strings.TrimSpace(name))
	}
	return out
}

func TestVersionAndDoctor(t *testing.T) {
	c := newCLI(t)
	out := c.must(".", "version")
	for _, want := range []string{"shadow ", "libseccomp:", "landlock ABI:"} {
		if !strings.Contains(out, want) {
			t.Errorf("version lacks %q:\n%s", want, out)
		}
	}
	out, errs, code := c.run(".", "doctor", "--json")
	if code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Errorf("doctor on this host: exit %d\n%s%s", code, out, errs)
	}
	out = c.must(".", "completion", "bash")
	if !strings.Contains(out, "__start_shadow") {
		t.Error("bash completion script missing")
	}
}

// The whole CLI flow as an ordinary user: run, diff, apply.
func TestCLIUnprivileged(t *testing.T) {
	a := testuser.Get(t)
	uid, gid := a.UID, a.GID
	dir, bin := testuser.BinaryDir(t, "shadow-cli-unpriv-", "shadow")
	project := filepath.Join(dir, "project")
	os.Mkdir(project, 0o755)
	os.WriteFile(filepath.Join(project, "a.txt"), []byte("1\n"), 0o644)
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		if p != bin && p != dir {
			os.Lchown(p, uid, gid)
		}
		return nil
	})
	sh := func(args ...string) (string, int) {
		cmd := a.Command(bin, args...)
		cmd.Dir = project
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home, "USER=" + a.Name, "SHADOW_TEST_CLI=1",
			"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	os.Chown(filepath.Join(dir, "state"), uid, gid)
	if out, code := sh("run", "--project", project, "--", "sh", "-c", "id -u; echo 2 >> a.txt"); code != 0 || !strings.HasPrefix(out, strconv.Itoa(uid)+"\n") {
		t.Fatalf("run as shadowtest: exit %d, want uid %d first:\n%s", code, uid, out)
	}
	if got := readFile(t, filepath.Join(project, "a.txt")); got != "1\n" {
		t.Fatalf("host project written during the run: %q", got)
	}
	if out, code := sh("apply", "--project", project, "--all", "--yes"); code != 0 {
		t.Fatalf("apply as shadowtest: exit %d\n%s", code, out)
	}
	if got := readFile(t, filepath.Join(project, "a.txt")); got != "1\n2\n" {
		t.Errorf("a.txt after apply = %q", got)
	}
}

// A jail that cannot be built exits 125 with doctor's advice, and the command never runs.
func TestJailErrorExits125(t *testing.T) {
	c := newCLI(t)
	home := fixture(t, map[string]string{"a.txt": "1\n"})
	c.env = append(c.env, "HOME="+home)
	marker := filepath.Join(t.TempDir(), "ran")
	_, errs, code := c.run(home, "run", "--project", home, "--", "sh", "-c", "touch "+marker)
	if code != 125 {
		t.Fatalf("run with the home directory as project: exit %d, want 125\n%s", code, errs)
	}
	// One line: doctor finds nothing missing on this host, so its checks are not printed.
	if !strings.HasPrefix(errs, "shadow: cannot build the jail: project: ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("the jail error is not one line:\n%s", errs)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Error("the command ran although the jail could not be built")
	}
}

// A 2 GB file and names carrying escape sequences and newlines in the change set: listed, shown
// escaped or quoted, never sent raw; a binary patch of the huge file is refused in one line.
func TestHugeFileAndHostileNames(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	_, errs, code := c.run(p, "run", "--", "sh", "-c",
		`truncate -s 2G big.bin && printf 'x\n' > "$(printf 'evil\033]52;c;aGk=\007\nname')"`)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if strings.ContainsRune(errs, 0x1b) {
		t.Errorf("the run summary sent an escape sequence raw: %q", errs)
	}
	names := c.must(p, "diff", "--name-only")
	if want := "\"evil\\033]52;c;aGk=\\a\\nname\"\n"; !strings.Contains(names, want) {
		t.Errorf("--name-only = %q, want the name quoted as %q", names, want)
	}
	stat := c.must(p, "diff", "--stat")
	if !strings.Contains(stat, "Bin 0 -> 2147483648 bytes") || strings.ContainsRune(stat, 0x1b) {
		t.Errorf("--stat = %q", stat)
	}
	_, errs, code = c.run(p, "diff", "--binary")
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "too large") {
		t.Errorf("diff --binary with a 2 GB file: exit %d: %q", code, errs)
	}
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Errorf("the project changed:\n%s", st)
	}
}

// The in-jail preflight passes a plain policy under untrusted, and a widened one fails the rule
// that names what was widened; a blocked preflight never starts the command.
func TestPreflightInsideJail(t *testing.T) {
	c := newCLI(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("-----BEGIN KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = append(c.env, "HOME="+home, "AWS_SECRET_ACCESS_KEY=abc123abc123")
	p := fixture(t, map[string]string{"package.json": `{"name":"x","version":"1.0.0"}` + "\n",
		"package-lock.json": `{"name":"x","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"x","version":"1.0.0"}}}` + "\n"})

	out, errs, code := c.run(p, "run", "--trust", "untrusted", "--", "echo", "started")
	if code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("plain policy under untrusted: exit %d\n%s%s", code, out, errs)
	}
	for _, tc := range []struct {
		flags []string
		rule  string
	}{
		{[]string{"--rw", filepath.Join(home, ".ssh")}, "FS002"},
		{[]string{"--env", "AWS_SECRET_ACCESS_KEY"}, "FS007"},
	} {
		args := append(append([]string{"run", "--trust", "untrusted"}, tc.flags...), "--", "echo", "started")
		out, errs, code := c.run(p, args...)
		if code != 3 || strings.Contains(out, "started") {
			t.Errorf("%v: exit %d, want 3 and the command never started\n%s", tc.flags, code, out)
		}
		if !strings.Contains(errs, tc.rule) {
			t.Errorf("%v: the block does not name %s:\n%s", tc.flags, tc.rule, errs)
		}
	}
}
