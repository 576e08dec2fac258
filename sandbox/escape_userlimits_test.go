package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	// inotifyhold makes inotify instances until the kernel refuses one and
	// says how many, tries to raise each per-user limit of $P, then holds
	// the instances until its stdin closes.
	probes["inotifyhold"] = func() []string {
		n := 0
		var last error
		for ; n < 1<<16; n++ {
			if _, err := unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
				last = err
				break
			}
		}
		fmt.Printf("RESULT instances %d %s\n", n, errName(last))
		for _, name := range strings.Split(os.Getenv("P"), ":") {
			err := os.WriteFile(filepath.Join(userLimitsDir, name), []byte("2147483647\n"), 0)
			fmt.Printf("RESULT write %s %s\n", name, errName(err))
		}
		fmt.Println("RESULT held")
		io.Copy(io.Discard, os.Stdin)
		return nil
	}
}

// TestEscapeUserLimits: the jail cannot take its host user's share of the
// per-user kernel limits. In the jail, inotify instances run out at the
// jail's limit while the host user can still make one; every
// /proc/sys/user/max_* the kernel has is one shadow chose a value for,
// and the jail's user namespace (read from the host, in it) holds that
// value; the command can raise none of them.
func TestEscapeUserLimits(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(userLimitsDir, "max_*"))
	if len(paths) == 0 {
		t.Skip("this kernel has no per-user namespace limits")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Fatalf("nsenter (util-linux) reads the jail's limits from the host: %v", err)
	}
	var names []string
	for _, p := range paths {
		name := filepath.Base(p)
		names = append(names, name)
		if _, ok := userLimits[name]; !ok {
			t.Errorf("the kernel has a per-user limit %s that userLimits gives no value", name)
		}
	}
	want, err := jailUserLimits(userLimitsDir)
	if err != nil {
		t.Fatal(err)
	}

	j := newTestJail(t)
	p := j.policy()
	stdinR, stdinW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	p.Stdin, p.Stdout, p.Stderr = stdinR, outW, &stderr
	p.Env = append(append([]string{}, p.Env...), "SHADOW_TRY=inotifyhold", "P="+strings.Join(names, ":"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := runSetup(ctx, p, []string{j.probe})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("probe exited %d", res.ExitCode)
		}
		outW.Close()
		done <- err
	}()
	defer func() {
		stdinW.Close()
		if err := <-done; err != nil {
			t.Errorf("run: %v\nstderr: %s", err, stderr.String())
		}
	}()

	results := map[string]string{}
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		r, ok := strings.CutPrefix(sc.Text(), "RESULT ")
		if !ok {
			continue
		}
		if r == "held" {
			break
		}
		k, v, _ := strings.Cut(r, " ")
		if k == "write" {
			k, v, _ = strings.Cut(v, " ")
		}
		results[k] = v
	}
	go io.Copy(io.Discard, outR)
	if _, ok := results["instances"]; !ok {
		t.Fatalf("the probe held nothing; stderr: %s", stderr.String())
	}

	// While the jail holds all it may, the host user makes one more.
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
		t.Errorf("the host cannot create an inotify instance while the jail holds its limit: %v", err)
	} else {
		unix.Close(fd)
	}
	limit := want["max_inotify_instances"]
	if got := results["instances"]; got != fmt.Sprintf("%d EMFILE", limit) {
		t.Errorf("the jail made %s inotify instances, want %d then EMFILE", got, limit)
	}
	for _, name := range names {
		if r := results[name]; r == "ok" || r == "" {
			t.Errorf("the command set %s: %q", name, r)
		}
	}

	// The limits of the jail's user namespace, PID 1's, as read in it.
	pid1 := jailPID1(t)
	out, err := exec.Command(nsenter, append([]string{"--user", "--preserve-credentials",
		"--target", strconv.Itoa(pid1), "cat"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("read the jail's limits: %v: %s", err, out)
	}
	got := strings.Fields(string(out))
	if len(got) != len(names) {
		t.Fatalf("read the jail's limits: %q", out)
	}
	for i, name := range names {
		if got[i] != strconv.FormatInt(want[name], 10) {
			t.Errorf("the jail's %s is %s, want %d", name, got[i], want[name])
		}
	}
	t.Logf("limits %v; instances %s", want, results["instances"])
}

// jailPID1 finds, on the host, the PID 1 of the one jail this test process
// runs: its child running initArg.
func jailPID1(t *testing.T) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmdline, []byte(initArg)) {
			return pid
		}
	}
	t.Fatal("found no jail PID 1 among this process's children")
	return 0
}
