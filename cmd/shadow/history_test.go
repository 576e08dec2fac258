package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Three runs make three checkpoints: log lists them with their steps, diff --checkpoint shows one
// step alone, diff --since what came after one, revert goes back to one and --undo comes back.
func TestCheckpointHistory(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n2\n3\n"})
	for _, step := range []string{
		`sed -i s/1/one/ a.txt && echo b > b.txt`,
		`sed -i s/2/two/ a.txt && rm b.txt`,
		`sed -i s/3/three/ a.txt && echo c > c.txt`,
	} {
		c.must(p, "run", "--", "sh", "-c", step)
	}
	log := c.must(p, "log")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 3 {
		t.Fatalf("log:\n%s", log)
	}
	for i, l := range lines {
		f := strings.Fields(l)
		if f[0] != "c"+strconv.Itoa(i+1) || !strings.Contains(l, "run end") || !strings.Contains(l, "2 files") {
			t.Errorf("log line %d: %q", i+1, l)
		}
	}
	if !strings.Contains(lines[1], "+1 -2") { // a.txt: -2 +two; b.txt: -b
		t.Errorf("c2's line counts: %q", lines[1])
	}
	step := c.must(p, "diff", "--checkpoint", "c2")
	if !strings.Contains(step, "-2\n+two\n") || !strings.Contains(step, "deleted file mode 100644") ||
		strings.Contains(step, "+one") || strings.Contains(step, "three") || strings.Contains(step, "c.txt") {
		t.Errorf("diff --checkpoint c2:\n%s", step)
	}
	if got := c.must(p, "diff", "--since", "c2", "--name-only"); got != "a.txt\nc.txt\n" {
		t.Errorf("diff --since c2 --name-only = %q", got)
	}
	if got := c.must(p, "diff", "--checkpoint", "c1", "--name-only", "b.txt"); got != "b.txt\n" {
		t.Errorf("diff --checkpoint c1 b.txt = %q", got)
	}

	c.must(p, "revert", "--to", "c1", "--yes")
	if got := c.must(p, "diff", "--name-only"); got != "a.txt\nb.txt\n" {
		t.Errorf("after revert --to c1, staged: %q", got)
	}
	if d := c.must(p, "diff", "a.txt"); !strings.Contains(d, "+one\n 2\n 3\n") {
		t.Errorf("after revert --to c1, a.txt:\n%s", d)
	}
	if got := c.must(p, "log"); strings.Count(got, "\n") != 1 {
		t.Errorf("log after the revert:\n%s", got)
	}
	c.must(p, "revert", "--undo")
	if got := c.must(p, "diff", "--name-only"); got != "a.txt\nc.txt\n" {
		t.Errorf("after revert --undo, staged: %q", got)
	}
	c.must(p, "revert", "--to", "c2", "--yes")
	c.must(p, "run", "--", "true")
	if _, errs, code := c.run(p, "revert", "--undo"); code == 0 || !strings.Contains(errs, "nothing to undo") {
		t.Errorf("revert --undo after a run: exit %d: %s", code, errs)
	}
	if _, errs, code := c.run(p, "revert", "--to", "c9", "--yes"); code == 0 || !strings.Contains(errs, "no checkpoint") {
		t.Errorf("revert --to c9: exit %d: %s", code, errs)
	}
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Errorf("the project changed:\n%s", st)
	}
}

// A crash of shadow and of the jail's PID 1 alike (SIGKILL of both) loses no write made before
// the last checkpoint: the next command merges the checkpoints the run took.
func TestCheckpointSurvivesKill(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	// The script says on a host directory (--rw) when it wrote late.txt, so that the test kills
	// the jail before the quiet that would checkpoint it.
	marks := t.TempDir()
	script := `echo early > early.txt; while [ ! -e ` + marks + `/go ]; do sleep 0.1; done; echo late > late.txt; touch ` + marks + `/late; sleep 60`
	cmd := exec.Command(c.bin, "run", "--rw", marks, "--", "sh", "-c", script)
	cmd.Dir, cmd.Env = p, c.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The quiet checkpoint comes some 3 s after the write of early.txt.
	waitFor := func(what string, found func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if found() {
				return
			}
		}
		t.Fatalf("no %s after 30 s", what)
	}
	waitFor("quiet checkpoint", func() bool {
		cps, _ := filepath.Glob(filepath.Join(c.state, "shadow", "sessions", "*", "checkpoints", "c1"))
		return len(cps) > 0
	})
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("late.txt", func() bool { _, err := os.Stat(filepath.Join(marks, "late")); return err == nil })
	for _, pid := range childrenOf(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL) // PID 1 of the jail: it gets no chance to merge
	}
	cmd.Process.Kill()
	cmd.Wait()
	c.must(p, "run", "--", "true") // closes the dead run
	got := c.must(p, "diff", "--name-only")
	if got != "early.txt\n" {
		t.Errorf("staged after the crash: %q, want early.txt alone (written before the checkpoint)", got)
	}
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// An apply's commit names the session's checkpoints.
func TestCommitMessageNamesCheckpoints(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 >> a.txt")
	c.must(p, "run", "--", "sh", "-c", "echo b > b.txt")
	c.must(p, "apply", "--all", "--yes", "--commit")
	msg := git(t, p, "log", "-1", "--format=%B")
	for _, want := range []string{"Checkpoints:", "c1  ", "c2  ", "run end", "echo b > b.txt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
}
