package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session"
)

// TestInvocationCommand: the command a hint prints names the binary by path when the shell's
// `shadow` is another (or none), the state directory when it is a private one, and the project
// when the working directory is not in it.
func TestInvocationCommand(t *testing.T) {
	for _, tc := range []struct {
		in   invocation
		want string
	}{
		{invocation{exe: "/usr/local/bin/shadow", onPath: true, here: "/p", project: "/p"}, "shadow review"},
		{invocation{exe: "/work/shadow/bin/shadow", here: "/p", project: "/p"}, "/work/shadow/bin/shadow review"},
		{invocation{exe: "/work/shadow/bin/shadow", stateHome: "/tmp/shadow-demo.x/state", here: "/work/shadow", project: "/tmp/shadow-demo.x/demo-shop"},
			"XDG_STATE_HOME=/tmp/shadow-demo.x/state /work/shadow/bin/shadow review --project /tmp/shadow-demo.x/demo-shop"},
		{invocation{exe: "/opt/my tools/shadow", onPath: false, stateHome: "/tmp/it's", here: "", project: "/src/a b"},
			`XDG_STATE_HOME='/tmp/it'\''s' '/opt/my tools/shadow' review --project '/src/a b'`},
	} {
		if got := tc.in.command("review"); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestComeBackHint: when the app ends, the hint is a command that works as printed (private
// state directory, binary off the PATH, another working directory, as after `make demo`), and
// once everything is applied it no longer sends the user back to review.
func TestComeBackHint(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n", "b.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 >> a.txt; echo 2 >> b.txt")

	t.Setenv("XDG_STATE_HOME", c.state)
	t.Setenv("PATH", "/usr/bin:/bin")
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	st, err := session.Open(filepath.Join(c.state, "shadow"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Current(p)
	if err != nil {
		t.Fatal(err)
	}
	in := currentInvocation(p)
	line := comeBackLine(st, s, in)
	self, _ := os.Executable()
	want := "session " + s.ID() + ": `XDG_STATE_HOME=" + c.state + " " + self + " review --project " + p + "` to come back to it"
	if line != want {
		t.Fatalf("hint with staged changes:\n got %s\nwant %s", line, want)
	}

	// The printed command works from anywhere, in a shell that knows nothing of this state:
	// the same command with diff --stat for review, which needs a terminal.
	cmdline := strings.TrimSuffix(strings.TrimPrefix(line, "session "+s.ID()+": `"), "` to come back to it")
	cmdline = strings.Replace(cmdline, " review ", " diff --stat ", 1)
	sh := exec.Command("sh", "-c", cmdline)
	sh.Dir = t.TempDir()
	sh.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "SHADOW_TEST_CLI=1"}
	if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), "a.txt") {
		t.Errorf("the hint's command (%s) does not reach the session: %v\n%s", cmdline, err, out)
	}

	// Applied whole, the session is closed: the hint says so, and how to undo it.
	c.must(p, "apply", "--all", "--yes")
	line = comeBackLine(st, s, in)
	want = "session " + s.ID() + " is applied: nothing is pending (`XDG_STATE_HOME=" + c.state + " " + self + " apply --rollback --project " + p + "` undoes the apply)"
	if line != want {
		t.Errorf("hint once everything is applied:\n got %s\nwant %s", line, want)
	}
}
