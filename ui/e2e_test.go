package ui

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxSession drives the real shadow binary in a detached tmux session on
// a private socket.
type tmuxSession struct {
	t    *testing.T
	sock string
	name string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", s.name) }

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// typeText types literally, a character at a time, as a user would.
func (s *tmuxSession) typeText(text string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", s.name, "-l", text)
}

// wait polls the screen until it contains any of want, and returns the
// screen and which one matched.
func (s *tmuxSession) wait(d time.Duration, what string, want ...string) (string, string) {
	s.t.Helper()
	// A busy machine may take many times d; a wait that is met returns at once.
	deadline := time.Now().Add(max(3*d, time.Minute))
	for {
		scr := s.screen()
		for _, w := range want {
			if strings.Contains(scr, w) {
				return scr, w
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %s waiting for %s; screen:\n%s", d, what, scr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", src, err, out)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=shadow", "-c", "user.email=shadow@example.invalid"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestEndToEndInTmux runs `shadow tui` with the demo agent on the demo
// project in a real terminal (tmux): it reads the preflight from the
// screen, types a request into the agent through the pane, lets it finish,
// accepts README.md's hunk and rejects src/cart.js's with the default keys,
// applies, and checks that the project holds exactly the accepted change.
func TestEndToEndInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shadow binary; skipped with -short")
	}
	for _, tool := range []string{"tmux", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (apt install %s)", tool, tool)
		}
	}
	tmp := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// SHADOW_E2E_BIN runs a shadow binary built elsewhere instead.
	bin := os.Getenv("SHADOW_E2E_BIN")
	if bin == "" {
		bin = filepath.Join(tmp, "shadow")
		build := exec.Command("go", "build", "-o", bin, "./cmd/shadow")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/shadow: %v\n%s", err, out)
		}
	}
	if out, err := exec.Command(bin, "tui", "--help").CombinedOutput(); err != nil {
		t.Skipf("shadow tui is not available in this build (shadow tui --help: %v): %s", err, bytes.TrimSpace(out))
	}

	project := filepath.Join(tmp, "project")
	copyTree(t, filepath.Join(root, "assets/demo/project"), project)
	git(t, project, "init", "-q")
	git(t, project, "add", "-A")
	git(t, project, "commit", "-qm", "demo")
	agentDir := filepath.Join(tmp, "agent")
	if err := os.Mkdir(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	agentSrc, err := os.ReadFile(filepath.Join(root, "assets/demo/agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(agentDir, "demo-agent")
	if err := os.WriteFile(agent, agentSrc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("chmod", "-R", "a+rX", tmp).Run(); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{"README.md", "src/cart.js", "src/format.js", "src/legacy.js"} {
		b, err := os.ReadFile(filepath.Join(project, p))
		if err != nil {
			t.Fatal(err)
		}
		before[p] = b
	}

	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock"), name: "shadow-e2e"}
	script := "cd " + project + " && env XDG_STATE_HOME=" + filepath.Join(tmp, "state") +
		" XDG_CONFIG_HOME=" + filepath.Join(tmp, "config") + " DEMO_AGENT_DELAY=0.05 " +
		bin + " tui --project " + project + " --ro " + agentDir + " -- " + agent +
		"; echo SHADOW-EXIT=$?; sleep 600"
	s.tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", s.name, "bash", "-c", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() })

	// Preflight: wait for the verdict on the screen.
	scr, got := s.wait(180*time.Second, "the preflight's verdict", "allowed", "BLOCKED", "could not run", "SHADOW-EXIT=")
	if got != "allowed" {
		t.Fatalf("the preflight did not allow the demo agent:\n%s", scr)
	}
	for _, stage := range []string{"Host: can the jail be built", "Project dependencies (DEP)", "Inside the jail (ENV, FS, NET)"} {
		if !strings.Contains(scr, stage) {
			t.Errorf("the preflight screen lacks %q", stage)
		}
	}
	s.keys("Enter")

	// Agent: type the request through the pane.
	s.wait(60*time.Second, "the demo agent's prompt", "What should I work on?")
	s.typeText("fix the cart total")
	s.keys("Enter")
	s.wait(60*time.Second, "the request echoed by the agent", "Task: fix the cart total")
	scr, _ = s.wait(120*time.Second, "the end of the agent", "exited with status")
	if !strings.Contains(scr, "exited with status 0") {
		t.Fatalf("the demo agent failed:\n%s", scr)
	}
	s.keys("Enter")

	// Review: README.md comes first; accept its hunk, then reject the hunk
	// of the next file (src/cart.js), then apply.
	// "file 1/" is the review's status line: the files are loaded.
	s.wait(30*time.Second, "the review", "file 1/")
	s.keys("a")
	s.wait(10*time.Second, "README.md's hunk accepted", "1✓")
	s.keys("}")
	s.wait(10*time.Second, "src/cart.js selected", "src/cart.js")
	s.keys("r")
	s.wait(10*time.Second, "cart.js's hunk rejected", "1✗")
	s.keys("w")
	s.wait(10*time.Second, "the apply confirmation", "y apply")
	s.keys("y")
	s.wait(30*time.Second, "the apply's result", "apply done")
	s.keys("q")
	scr, _ = s.wait(30*time.Second, "shadow to exit", "SHADOW-EXIT=")
	if !strings.Contains(scr, "SHADOW-EXIT=0") {
		t.Errorf("shadow tui did not exit 0:\n%s", scr)
	}

	// The project holds exactly the accepted change.
	readme, err := os.ReadFile(filepath.Join(project, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantReadme := string(before["README.md"]) + "\n## Discounts\n\n`applyDiscount(total, percent)` in `src/discount.js` takes a percentage off a total.\n"
	if string(readme) != wantReadme {
		t.Errorf("README.md = %q, want the accepted hunk: %q", readme, wantReadme)
	}
	for _, p := range []string{"src/cart.js", "src/format.js", "src/legacy.js"} {
		b, err := os.ReadFile(filepath.Join(project, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !bytes.Equal(b, before[p]) {
			t.Errorf("%s changed although its hunk was rejected or left undecided:\n%s", p, b)
		}
	}
	if _, err := os.Stat(filepath.Join(project, "src/discount.js")); !os.IsNotExist(err) {
		t.Errorf("src/discount.js exists although it was never accepted (%v)", err)
	}
}
