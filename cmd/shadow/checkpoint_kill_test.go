package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/testuser"
)

// shadowAs runs the shadow CLI with a private state directory, as root or as the tests' ordinary
// account.
type shadowAs struct {
	t       *testing.T
	bin     string
	dir     string // holds the state and config directories, and the projects
	env     []string
	account *testuser.Account
}

func newShadowAs(t *testing.T, unprivileged bool) *shadowAs {
	t.Helper()
	if !unprivileged {
		c := newCLI(t)
		return &shadowAs{t: t, bin: c.bin, dir: filepath.Dir(c.state), env: c.env}
	}
	a := testuser.Get(t)
	dir, bin := testuser.BinaryDir(t, "shadow-kill-", "shadow")
	sh := &shadowAs{t: t, bin: bin, dir: dir, account: &a,
		env: []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home, "USER=" + a.Name, "SHADOW_TEST_CLI=1",
			"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}}
	sh.mkdir(filepath.Join(dir, "state"))
	return sh
}

// mkdir makes a directory the account owns.
func (sh *shadowAs) mkdir(dir string) {
	sh.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		sh.t.Fatal(err)
	}
	sh.chown(dir)
}

func (sh *shadowAs) chown(path string) {
	if sh.account != nil {
		filepath.Walk(path, func(p string, _ os.FileInfo, _ error) error {
			os.Lchown(p, sh.account.UID, sh.account.GID)
			return nil
		})
	}
}

func (sh *shadowAs) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(sh.bin, args...)
	if sh.account != nil {
		cmd = sh.account.Command(sh.bin, args...)
	}
	cmd.Dir, cmd.Env = dir, sh.env
	return cmd
}

// run runs shadow to its end and returns stdout, stderr and the exit status.
func (sh *shadowAs) run(dir string, args ...string) (string, string, int) {
	sh.t.Helper()
	cmd := sh.command(dir, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		sh.t.Fatalf("shadow %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// project makes a small git project, owned by the account, holding script w.sh.
func (sh *shadowAs) project(name, script string) string {
	sh.t.Helper()
	p := filepath.Join(sh.dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		sh.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "w.sh"), []byte(script), 0o644); err != nil {
		sh.t.Fatal(err)
	}
	git(sh.t, p, "init", "-q")
	git(sh.t, p, "add", "-A")
	git(sh.t, p, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
	sh.chown(p)
	return p
}

// checkpointDir is the checkpoint directory of the one session of the state directory.
func (sh *shadowAs) checkpointDir() string {
	m, _ := filepath.Glob(filepath.Join(sh.dir, "state", "shadow", "sessions", "*", "checkpoints"))
	if len(m) != 1 {
		return ""
	}
	return m[0]
}

// jailInit returns the jail's PID 1 among the children of process pid (0: none).
func jailInit(pid int) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		cmdline, _ := os.ReadFile(p + "/cmdline")
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && strings.Contains(string(cmdline), initArgForTest) {
			n, _ := strconv.Atoi(filepath.Base(p))
			return n
		}
	}
	return 0
}

// initArgForTest is how PID 1 of a jail is started: the binary with this argument.
const initArgForTest = "__shadow-init"

var filesChanged = regexp.MustCompile(`(\d+) files? changed`)

// A kill -9 of shadow or of its jail's PID 1 while a run ends, followed at once by the next
// commands, never leaves part of a step staged: every file the command wrote is staged, or the
// step is absent and the session says it is incomplete. The kill comes at each phase of a run's
// end (the command ending, the last checkpoint being written, published and being merged, all
// done), and at random moments after the command's last line, on shadow, on PID 1, and on both.
func TestKillDuringLastCheckpoint(t *testing.T) {
	for _, unprivileged := range []bool{false, true} {
		name := "root"
		if unprivileged {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) { killDuringLastCheckpoint(t, unprivileged) })
	}
}

func killDuringLastCheckpoint(t *testing.T, unprivileged bool) {
	const files = 1500
	script := fmt.Sprintf("mkdir d; i=0; while [ $i -lt %d ]; do echo $i > d/f$i; i=$((i+1)); done; echo LAST\n", files)
	type phase struct {
		name  string
		at    func(cps string) bool // nil: delay after the command's last line
		delay time.Duration
	}
	phases := []phase{
		{"the command ending", func(string) bool { return true }, 0},
		{"c1 being written", func(cps string) bool { return exists(filepath.Join(cps, "c1.tmp")) }, 0},
		{"c1 published, being merged", func(cps string) bool { return exists(filepath.Join(cps, "c1")) }, 0},
		{"all merged", func(cps string) bool { return exists(filepath.Join(cps, "merged")) }, 0},
	}
	// Random moments within the end of a run (a second or more under load), each its own.
	for range 3 {
		delay := time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))
		phases = append(phases, phase{name: fmt.Sprintf("%v after the last line", delay.Round(time.Millisecond)), delay: delay})
	}
	for _, phase := range phases {
		for _, victim := range []string{"shadow", "PID 1", "both"} {
			t.Run(phase.name+"/"+victim, func(t *testing.T) {
				sh := newShadowAs(t, unprivileged)
				proj := sh.project("project", script)
				cmd := sh.command(proj, "run", "--", "sh", "w.sh")
				// A pipe of the test's own: shadow is reaped the moment it is killed, as a
				// shell would, while PID 1 may still write to it.
				stdout, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				// Files, not buffers: Wait would wait for PID 1 too, which holds them.
				stderr, err := os.CreateTemp(t.TempDir(), "stderr")
				if err != nil {
					t.Fatal(err)
				}
				defer stderr.Close()
				cmd.Stdout, cmd.Stderr = w, stderr
				err = cmd.Start()
				w.Close()
				if err != nil {
					t.Fatal(err)
				}
				exited := make(chan struct{})
				go func() {
					cmd.Wait()
					close(exited)
				}()
				last := make(chan struct{})
				drained := make(chan struct{})
				go func() {
					defer close(drained)
					sc := bufio.NewScanner(stdout)
					for sc.Scan() {
						if sc.Text() == "LAST" {
							close(last)
						}
					}
					io.Copy(io.Discard, stdout)
				}()
				// PID 1 and the checkpoint directory are found while the command runs, so that
				// the kill follows the last line at once.
				var init int
				var cps string
				for deadline := time.Now().Add(60 * time.Second); init == 0 || cps == ""; time.Sleep(time.Millisecond) {
					init, cps = jailInit(cmd.Process.Pid), sh.checkpointDir()
					if time.Now().After(deadline) {
						cmd.Process.Kill()
						t.Fatal("no PID 1 under shadow")
					}
				}
				select {
				case <-last:
				case <-time.After(60 * time.Second):
					cmd.Process.Kill()
					t.Fatal("the command never printed its last line")
				}
				hit := true
				deadline := time.Now().Add(60 * time.Second)
				printed := time.Now()
				reached := func() bool {
					if phase.at == nil {
						return time.Since(printed) >= phase.delay
					}
					return phase.at(cps)
				}
				for !reached() {
					if !exists(fmt.Sprintf("/proc/%d", init)) || time.Now().After(deadline) {
						hit = false // the phase passed between two looks
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
				switch victim {
				case "shadow":
					syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
				case "PID 1":
					syscall.Kill(init, syscall.SIGKILL)
				case "both":
					syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
					syscall.Kill(init, syscall.SIGKILL)
				}
				// The next command comes once the shadow that ran the command is gone: at once
				// when it was killed.
				<-exited
				t.Logf("killed %s at %s (reached: %v)", victim, phase.name, hit)

				// The obvious next commands, both at once.
				var diffOut, diffErr string
				var dcode int
				diffDone := make(chan struct{})
				go func() {
					defer close(diffDone)
					diffOut, diffErr, dcode = sh.run(proj, "diff", "--stat")
				}()
				runOut, runErr, code := sh.run(proj, "run", "--wait", "--", "true")
				<-diffDone
				if dcode != 0 {
					t.Fatalf("diff --stat right after the kill: exit %d\n%s%s", dcode, diffOut, diffErr)
				}
				if code != 0 {
					t.Fatalf("run -- true right after the kill: exit %d\n%s%s", code, runOut, runErr)
				}
				<-drained
				logOut, _, _ := sh.run(proj, "log")
				afterOut, afterErr, _ := sh.run(proj, "diff", "--stat")
				report := fmt.Sprintf("first shadow's stderr:\n%s\ndiff --stat at once:\n%s%s\nrun -- true:\n%s%s\nlog:\n%s\ndiff --stat after:\n%s%s",
					readFile(t, stderr.Name()), diffErr, lastLine(diffOut), runOut, runErr, logOut, afterErr, lastLine(afterOut))
				for _, out := range []string{diffOut, afterOut} {
					staged := 0
					if m := filesChanged.FindStringSubmatch(out); m != nil {
						staged, _ = strconv.Atoi(m[1])
					}
					step := regexp.MustCompile(`(?m)^c1 .*\b(\d+) files\b`).FindStringSubmatch(logOut)
					incomplete := strings.Contains(afterErr, "is incomplete")
					whole := staged == files && step != nil && step[1] == strconv.Itoa(files)
					absent := staged == 0 && step == nil && incomplete
					if !whole && !absent {
						t.Fatalf("%d of %d files staged: a partial step\n%s", staged, files, report)
					}
				}
				t.Logf("\n%s", report)
			})
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:] + "\n"
}
