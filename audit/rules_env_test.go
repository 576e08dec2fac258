package audit

import (
	"errors"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostRulesOnFixtures runs every ENV, FS and NET rule on three fixture
// roots: a correct jail (all pass), an exposed host (all fail) and an empty
// root where the probes find nothing (skipped where the rule needs a file).
func TestHostRulesOnFixtures(t *testing.T) {
	jail := verify(t, fixtureEnv(t, "jail"), copyProject(t, "clean"), ProfileUntrusted, DomainEnv, DomainFS, DomainNet)
	exposed := verify(t, fixtureEnv(t, "exposed"), copyProject(t, "npmrc-token"), ProfileUntrusted, DomainEnv, DomainFS, DomainNet)
	bareEnv := fixtureEnv(t, "bare")
	bare := verify(t, bareEnv, emptyProject(t), ProfileUntrusted, DomainEnv, DomainFS, DomainNet)

	want := map[string][3]Result{ // jail, exposed, bare
		"ENV001": {Pass, Fail, Skipped},
		"ENV002": {Pass, Fail, Skipped},
		"ENV003": {Pass, Fail, Skipped},
		"ENV004": {Pass, Fail, Skipped},
		"ENV005": {Pass, Fail, Skipped},
		"ENV006": {Pass, Fail, Pass},
		"ENV007": {Pass, Fail, Pass},
		"ENV008": {Pass, Fail, Skipped},
		"ENV009": {Pass, Fail, Skipped},
		"FS001":  {Pass, Fail, Pass},
		"FS002":  {Pass, Fail, Pass},
		"FS003":  {Pass, Fail, Pass},
		"FS004":  {Pass, Fail, Skipped},
		"FS005":  {Pass, Fail, Pass},
		"FS006":  {Pass, Fail, Pass},
		"FS007":  {Pass, Fail, Pass},
		"NET001": {Pass, Fail, Skipped},
		"NET002": {Pass, Fail, Skipped},
		"NET003": {Pass, Fail, Skipped},
		"NET004": {Pass, Fail, Pass},
	}
	for id, w := range want {
		for i, r := range []Report{jail, exposed, bare} {
			f := finding(t, r, id)
			if f.Result != w[i] {
				t.Errorf("%s on %s: got %s, want %s\nevidence:\n%sskip: %s", id, []string{"jail", "exposed", "bare"}[i], f.Result, w[i], evidenceText(f), f.SkipReason)
			}
			if f.Result == Skipped && f.SkipReason == "" {
				t.Errorf("%s skipped without a reason", id)
			}
			if f.Result != Skipped && len(f.Evidence) == 0 {
				t.Errorf("%s %s without evidence", id, f.Result)
			}
		}
	}
	if got := len(jail.Findings); got != 21 {
		t.Errorf("env+fs+net audit has %d findings, want 21", got)
	}
}

// TestInsideCorrectJailPassesUntrusted is the property the jail is built for:
// under untrusted, the in-jail verification has no failure and no skip.
func TestInsideCorrectJailPassesUntrusted(t *testing.T) {
	r := verify(t, fixtureEnv(t, "jail"), copyProject(t, "clean"), ProfileUntrusted)
	v := r.Verdict()
	if v.Failed != 0 || v.Skipped != 0 || v.Blocked || v.Result() != "PASSED" {
		for _, f := range r.Findings {
			if f.Result != Pass {
				t.Errorf("%s %s: %s%s", f.Rule.ID, f.Result, evidenceText(f), f.SkipReason)
			}
		}
		t.Fatalf("verdict %+v result %s, want PASSED", v, v.Result())
	}
	if len(r.Findings) != 38 {
		t.Fatalf("%d findings, want 38", len(r.Findings))
	}
}

func TestExposedHostEvidence(t *testing.T) {
	r := verify(t, fixtureEnv(t, "exposed"), copyProject(t, "npmrc-token"), ProfileUntrusted, DomainEnv, DomainFS, DomainNet)
	cases := map[string][]string{
		"ENV001": {"uid 0"},
		"ENV005": {"CAP_SYS_ADMIN", "privileged"},
		"ENV006": {"LD_PRELOAD is set", "/etc/ld.so.preload loads /usr/lib/x86_64-linux-gnu/libinject.so"},
		"ENV007": {"NODE_OPTIONS loads code with --require", "npm_config_registry overrides the registry"},
		"ENV009": {"core_pattern is writable", "release_agent is writable", "host block device /dev/vda"},
		"FS001":  {"/run/docker.sock is reachable"},
		"FS002":  {".ssh/id_ed25519 is readable", ".aws/credentials is readable"},
		"FS005":  {"serviceaccount/token present", "AWS_WEB_IDENTITY_TOKEN_FILE is set"},
		"FS006":  {".npmrc:2: //registry.npmjs.org/:_authToken holds a literal credential"},
		"FS007":  {"AWS_SECRET_ACCESS_KEY", "DEPLOY_CRED", "SOME_ID"},
		"NET001": {"0.0.0.0:22 (uid 0)", "[::]:8080 (uid 1000)"},
		"NET002": {"docker0", "/run/systemd/journal/stdout", "pid 1 systemd"},
		"NET003": {"default route via 192.168.1.1 dev eth0", "169.254.0.0/16", "default route via fe80::1 dev eth0"},
		"NET004": {"DOCKER_HOST points at tcp://10.1.2.3"},
	}
	for id, subs := range cases {
		ev := evidenceText(finding(t, r, id))
		for _, s := range subs {
			if !strings.Contains(ev, s) {
				t.Errorf("%s evidence lacks %q:\n%s", id, s, ev)
			}
		}
	}
	// Secret values never appear, only names.
	for _, f := range r.Findings {
		ev := evidenceText(f)
		for _, secret := range []string{fakeGitHubToken, fakeAWSKey, "placeholder0000notarealtoken"} {
			if strings.Contains(ev, secret) {
				t.Errorf("%s evidence leaks a secret value", f.Rule.ID)
			}
		}
	}
	if f := finding(t, r, "NET003"); f.Severity != High {
		t.Errorf("NET003 with a metadata route: severity %s, want high", f.Severity)
	}
	if f := finding(t, r, "ENV001"); f.Severity != High {
		t.Errorf("ENV001 privileged root: severity %s, want high", f.Severity)
	}
}

// fixtureRoot writes a small root of probe files for one test.
func fixtureRoot(t *testing.T, files map[string]string) Env {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		writeFile(t, filepath.Join(root, p), c)
	}
	return Env{Root: root, Home: "/home/u", Vars: []string{"PATH=/usr/bin"}}
}

func ruleOn(t *testing.T, env Env, id string) Finding {
	t.Helper()
	r := verify(t, env, emptyProject(t), ProfileUntrusted, RuleByID(id).Domain)
	return finding(t, r, id)
}

func TestENV001MitigatedRootIsLow(t *testing.T) {
	env := fixtureRoot(t, map[string]string{
		"proc/self/status":  "Uid:\t0\t0\t0\t0\nCapEff:\t0000000000000000\n",
		"proc/self/uid_map": "         0       1000          1\n",
	})
	f := ruleOn(t, env, "ENV001")
	if f.Result != Fail || f.Severity != Low {
		t.Fatalf("got %s/%s, want fail/low", f.Result, f.Severity)
	}
	if !strings.Contains(evidenceText(f), "maps to unprivileged uid 1000") {
		t.Errorf("evidence: %s", evidenceText(f))
	}
	if f.Blocks(ProfileUntrusted) {
		t.Error("mitigated root blocks untrusted")
	}
}

func TestENV008Paths(t *testing.T) {
	confined := fixtureRoot(t, map[string]string{"proc/self/attr/current": "docker-default (enforce)\n"})
	if f := ruleOn(t, confined, "ENV008"); f.Result != Pass {
		t.Errorf("AppArmor-confined: %s", f.Result)
	}
	unreadable := fixtureRoot(t, map[string]string{"README": "no attr"})
	unreadable.LandlockProbe = allowedProbe
	if f := ruleOn(t, unreadable, "ENV008"); f.Result != Skipped {
		t.Errorf("label unreadable and no Landlock: %s, want skipped (unreadable is not unconfined)", f.Result)
	}
	unreadable.LandlockProbe = deniedProbe
	if f := ruleOn(t, unreadable, "ENV008"); f.Result != Pass || !strings.Contains(evidenceText(f), "Landlock in effect") {
		t.Errorf("Landlock by effect: %s %s", f.Result, evidenceText(f))
	}
	complain := fixtureRoot(t, map[string]string{"proc/self/attr/current": "myprofile (complain)\n"})
	complain.LandlockProbe = allowedProbe
	if f := ruleOn(t, complain, "ENV008"); f.Result != Fail {
		t.Errorf("complain mode: %s, want fail", f.Result)
	}
}

// readErrorTarget returns a regular file of the live system whose read fails
// with errno (the fixture's attr/current is linked to it), or skips.
func readErrorTarget(t *testing.T, errno unix.Errno, candidates ...string) string {
	t.Helper()
	for _, p := range candidates {
		if _, err := readRegular(p, 16); errors.Is(err, errno) {
			return p
		}
	}
	t.Skipf("no file here whose read gives %v (tried %v)", errno, candidates)
	return ""
}

// TestENV008ReadErrors: a read error of attr/current is printed once, and
// EINVAL (no LSM keeps a label) is a skip that says so, under both probes
// that leave confinement unknown.
func TestENV008ReadErrors(t *testing.T) {
	cases := []struct {
		name   string
		target string
		want   string
	}{
		{"EINVAL", readErrorTarget(t, unix.EINVAL, "/proc/self/attr/current", "/proc/self/clear_refs"),
			"no LSM keeps a process label (reading /proc/self/attr/current gives EINVAL) and Landlock was not detected by a probe"},
		{"EIO", readErrorTarget(t, unix.EIO, "/proc/self/mem"),
			"LSM label unreadable (read %ROOT%/proc/self/attr/current: input/output error) and Landlock not detected by a probe"},
	}
	for _, c := range cases {
		for _, probe := range []func() ProbeResult{allowedProbe, func() ProbeResult { return ProbeResult{Err: errors.New("no probe")} }} {
			env := fixtureRoot(t, map[string]string{"README": "attr/current links to " + c.target})
			attr := filepath.Join(env.Root, "proc/self/attr")
			if err := os.MkdirAll(attr, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(c.target, filepath.Join(attr, "current")); err != nil {
				t.Fatal(err)
			}
			env.LandlockProbe = probe
			f := ruleOn(t, env, "ENV008")
			want := strings.ReplaceAll(c.want, "%ROOT%", env.Root)
			if f.Result != Skipped || !strings.Contains(f.SkipReason, want) || strings.Count(f.SkipReason, "attr/current") != 1 {
				t.Errorf("%s: %s %q\nwant a skip with %q", c.name, f.Result, f.SkipReason, want)
			}
		}
	}
	// The control: Landlock by effect still passes without a label.
	env := fixtureRoot(t, map[string]string{"README": "x"})
	if err := os.MkdirAll(filepath.Join(env.Root, "proc/self/attr"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cases[0].target, filepath.Join(env.Root, "proc/self/attr/current")); err != nil {
		t.Fatal(err)
	}
	env.LandlockProbe = deniedProbe
	if f := ruleOn(t, env, "ENV008"); f.Result != Pass || !strings.Contains(evidenceText(f), "no LSM keeps a process label (/proc/self/attr/current: invalid argument)") {
		t.Errorf("Landlock without a label: %s\n%s", f.Result, evidenceText(f))
	}
}

func TestNET001ListenerInLoopbackOnlyNamespace(t *testing.T) {
	env := fixtureRoot(t, map[string]string{
		"proc/net/tcp": "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
			"   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0\n",
		"proc/net/dev": "Inter-|   Receive\n face |bytes\n    lo: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	})
	f := ruleOn(t, env, "NET001")
	if f.Result != Pass || !strings.Contains(evidenceText(f), "only lo") {
		t.Fatalf("got %s: %s", f.Result, evidenceText(f))
	}
}

func TestNET001NamesOwningProcess(t *testing.T) {
	env := fixtureRoot(t, map[string]string{
		"proc/net/tcp": "  sl  local_address rem_address   st\n" +
			"   0: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000  33        0 777 1\n",
		"proc/net/dev": "Inter-|\n face |\n    lo: 0\n  eth0: 0\n",
		"proc/42/comm": "nginx\n",
	})
	if err := os.MkdirAll(filepath.Join(env.Root, "proc/42/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[777]", filepath.Join(env.Root, "proc/42/fd/3")); err != nil {
		t.Fatal(err)
	}
	f := ruleOn(t, env, "NET001")
	if f.Result != Fail || !strings.Contains(evidenceText(f), "pid 42 nginx") {
		t.Fatalf("got %s: %s", f.Result, evidenceText(f))
	}
}

func TestFS007GrantedVariable(t *testing.T) {
	env := fixtureEnv(t, "jail")
	env.Vars = append(env.Vars, "ANTHROPIC_API_KEY=sk-ant-"+strings.Repeat("x", 30))
	if f := ruleOn(t, env, "FS007"); f.Result != Fail {
		t.Fatalf("ungranted key: %s", f.Result)
	}
	env.Granted = []string{"ANTHROPIC_API_KEY"}
	f := ruleOn(t, env, "FS007")
	if f.Result != Pass || !strings.Contains(evidenceText(f), "ANTHROPIC_API_KEY granted deliberately") {
		t.Fatalf("granted key: %s %s", f.Result, evidenceText(f))
	}
}

// A secret the proxy holds reaches the jail as its placeholder (SPEC §14): FS007 says so and
// passes; the same name holding anything else still fails.
func TestFS007SecretPlaceholder(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  Result
	}{
		{proxy.NewPlaceholder("ANTHROPIC_API_KEY"), Pass},
		{proxy.NewPlaceholder("OPENAI_API_KEY"), Fail},          // another variable's placeholder
		{"shadow-secret-ANTHROPIC_API_KEY-notahexvalue!", Fail}, // shaped like one, but is not
		{"sk-ant-" + strings.Repeat("x", 30), Fail},
	} {
		env := fixtureEnv(t, "jail")
		env.Vars = append(env.Vars, "ANTHROPIC_API_KEY="+tc.value)
		f := ruleOn(t, env, "FS007")
		if f.Result != tc.want {
			t.Errorf("ANTHROPIC_API_KEY=%s: %s, want %s: %s", tc.value, f.Result, tc.want, evidenceText(f))
		}
		if tc.want == Pass && !strings.Contains(evidenceText(f), "holds only a placeholder") {
			t.Errorf("the placeholder is not named as one: %s", evidenceText(f))
		}
	}
}

func TestFS004ReadOnlyMountWins(t *testing.T) {
	// As root every access check allows writing; only the mount flag tells.
	env := fixtureRoot(t, map[string]string{
		"usr/.keep":           "",
		"proc/self/mountinfo": "1 0 8:1 / / ro,relatime - ext4 /dev/sda1 rw\n",
	})
	if f := ruleOn(t, env, "FS004"); f.Result != Pass {
		t.Fatalf("ro root: %s %s", f.Result, evidenceText(f))
	}
}

func TestFS008ControlSurfaces(t *testing.T) {
	clean := copyProject(t, "clean")
	r := verify(t, fixtureEnv(t, "jail"), clean, ProfileUntrusted, DomainFS)
	if f := finding(t, r, "FS008"); f.Result != Pass {
		t.Fatalf("clean project: %s %s", f.Result, evidenceText(f))
	}
	hooks := copyProject(t, "fs008-agent-hooks")
	r = verify(t, fixtureEnv(t, "jail"), hooks, ProfileUntrusted, DomainFS)
	f := finding(t, r, "FS008")
	if f.Result != Fail || !strings.Contains(evidenceText(f), ".claude/settings.json:3: defines hooks") ||
		!strings.Contains(evidenceText(f), ".claude/commands") {
		t.Fatalf("agent hooks: %s\n%s", f.Result, evidenceText(f))
	}
	// git hooks and core.hooksPath, made at test time (a .git cannot be committed).
	gitProject := copyProject(t, "clean")
	writeFile(t, filepath.Join(gitProject, ".git/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(gitProject, ".git/config"), "[core]\n\tbare = false\n\thooksPath = .githooks\n")
	writeFile(t, filepath.Join(gitProject, ".git/hooks/pre-commit.sample"), "#!/bin/sh\n")
	writeFile(t, filepath.Join(gitProject, ".git/hooks/post-checkout"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(gitProject, ".git/hooks/post-checkout"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = verify(t, fixtureEnv(t, "jail"), gitProject, ProfileUntrusted, DomainFS)
	f = finding(t, r, "FS008")
	ev := evidenceText(f)
	if f.Result != Fail || !strings.Contains(ev, ".git/hooks/post-checkout") || !strings.Contains(ev, ".git/config:3: core.hooksPath") || strings.Contains(ev, "sample") {
		t.Fatalf("git hooks: %s\n%s", f.Result, ev)
	}
}

// TestLiveEnvironment audits the machine the test runs on. Results depend on
// the machine, so it checks only what holds everywhere: every rule reports,
// a skip says why, a result has evidence, and secret values never appear.
func TestLiveEnvironment(t *testing.T) {
	r, err := Verify(t.Context(), Options{Env: LiveEnv(), Project: copyProject(t, "clean"), Profile: ProfileUntrusted, Domains: []Domain{DomainEnv, DomainFS, DomainNet}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 21 {
		t.Fatalf("%d findings", len(r.Findings))
	}
	for _, f := range r.Findings {
		if f.Result == Skipped && f.SkipReason == "" || f.Result != Skipped && len(f.Evidence) == 0 {
			t.Errorf("%s %s without reason or evidence", f.Rule.ID, f.Result)
		}
		for _, kv := range os.Environ() {
			if _, v, _ := strings.Cut(kv, "="); len(v) >= 12 && secretValue().MatchString(v) && strings.Contains(evidenceText(f), v) {
				t.Errorf("%s leaks a secret value", f.Rule.ID)
			}
		}
	}
	if testing.Verbose() {
		r.WriteText(os.Stdout, false)
	}
}

// TestPlantedFIFONeverBlocks: a FIFO where a file is expected is refused, not read.
func TestPlantedFIFONeverBlocks(t *testing.T) {
	project := copyProject(t, "clean")
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(project, ".claude/settings.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := fixtureRoot(t, map[string]string{"README": ""})
	if err := unix.Mkfifo(filepath.Join(env.Root, "proc-status-fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(env.Root, "proc/self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(env.Root, "proc-status-fifo"), filepath.Join(env.Root, "proc/self/status")); err != nil {
		t.Fatal(err)
	}
	done := make(chan Report, 1)
	go func() { done <- verify(t, env, project, ProfileUntrusted, DomainEnv, DomainFS) }()
	select {
	case r := <-done:
		if f := finding(t, r, "ENV001"); f.Result != Skipped || !strings.Contains(f.SkipReason, "not a regular file") {
			t.Errorf("ENV001 on a FIFO: %s %q", f.Result, f.SkipReason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("audit blocked on a FIFO")
	}
	// A hook target that is a FIFO: the hook code cannot be read, so the
	// rules over it are skipped, and the audit does not hang.
	hook := copyProject(t, "shai-hulud")
	bundle := filepath.Join(hook, "node_modules/tinycolor-kit/bundle.js")
	if err := os.Remove(bundle); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() { done <- verify(t, fixtureEnv(t, "jail"), hook, ProfileUntrusted, DomainDep) }()
	select {
	case r := <-done:
		if f := finding(t, r, "DEP013"); f.Result != Skipped || !strings.Contains(f.SkipReason, "could not be read") {
			t.Errorf("DEP013 over a FIFO hook target: %s %q", f.Result, f.SkipReason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("audit blocked on a FIFO hook target")
	}
}

func TestPartialEnvIsLive(t *testing.T) {
	t.Setenv("SHADOW_TEST_API_KEY", "sk-"+strings.Repeat("z", 30))
	r := verify(t, Env{Granted: []string{"SHADOW_TEST_API_KEY"}}, emptyProject(t), ProfileUntrusted, DomainFS)
	if ev := evidenceText(finding(t, r, "FS007")); !strings.Contains(ev, "SHADOW_TEST_API_KEY granted deliberately") {
		t.Fatalf("granted variable of the live environment not seen:\n%s", ev)
	}
}

func TestFS008EmptyHooks(t *testing.T) {
	for content, want := range map[string]Result{
		`{"hooks": null}`: Pass,
		`{"hooks": {}}`:   Pass,
		`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}`: Fail,
	} {
		project := emptyProject(t)
		writeFile(t, filepath.Join(project, ".claude/settings.json"), content)
		r := verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted, DomainFS)
		if f := finding(t, r, "FS008"); f.Result != want {
			t.Errorf("%s: %s, want %s", content, f.Result, want)
		}
	}
}

func TestGrantedThroughEnvironment(t *testing.T) {
	t.Setenv("SHADOW_TEST_PRESET_KEY", "sk-"+strings.Repeat("p", 30))
	t.Setenv("SHADOW_TEST_WIDENED_TOKEN", "x"+strings.Repeat("w", 30))
	t.Setenv(GrantedEnvVar, "SHADOW_TEST_PRESET_KEY")
	live := LiveEnv()
	if !live.granted("SHADOW_TEST_PRESET_KEY") {
		t.Fatalf("granted %v", live.Granted)
	}
	if _, ok := live.Getenv(GrantedEnvVar); ok {
		t.Error("the grant list itself is part of the audited environment")
	}
	r := verify(t, live, emptyProject(t), ProfileUntrusted, DomainFS)
	f := finding(t, r, "FS007")
	ev := evidenceText(f)
	if f.Result != Fail || !strings.Contains(ev, "SHADOW_TEST_PRESET_KEY granted deliberately") || !strings.Contains(ev, "SHADOW_TEST_WIDENED_TOKEN looks secret") {
		t.Fatalf("%s\n%s", f.Result, ev)
	}
}
