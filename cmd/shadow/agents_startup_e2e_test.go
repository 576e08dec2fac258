package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// measuredAgents is what a measurement of the agent CLIs runs, from the variable env: every
// agent and the floor for 1, else its comma-separated list; without it the test is skipped.
func measuredAgents(t *testing.T, env string) []string {
	only := os.Getenv(env)
	if only == "" {
		t.Skip("a measurement: set " + env + "=1 to run it")
	}
	if only != "1" {
		return strings.Split(only, ",")
	}
	return []string{"floor", "codex", "claude", "gemini", "opencode"}
}

// TestAgentStartup measures, for the four agent CLIs, the time from the agent's start to its
// first screen of its own (its ready screen or the first question it asks), run directly in a
// terminal and in `shadow tui` (from the Enter that starts it after the preflight), five times
// each, interleaved, and logs the medians. A shell that prints one line is the floor: what the
// jail's start costs before any agent runs. It is a measurement, run on demand
// (SHADOW_TEST_STARTUP=1, or a list of agents: SHADOW_TEST_STARTUP=floor,gemini): on a loaded
// machine its figures are as the machine allows.
func TestAgentStartup(t *testing.T) {
	agents := measuredAgents(t, "SHADOW_TEST_STARTUP")
	const rounds = 5
	times := map[string][]time.Duration{}
	n := 0
	// measure returns the time to the first screen and the CPU time the agent's processes
	// (all in the terminal's pane but shadow's own) took to it: on a loaded machine an agent
	// whose start is bound by its CPU (opencode's) waits for it as long as the load makes it.
	measure := func(name string, tui bool) (time.Duration, time.Duration) {
		n++
		r := newAgentRig(t, map[bool]string{true: "codex", false: name}[name == "floor"])
		it := interactive{ready: "SHELL-READY"}
		bin := []string{"sh", "-c", "printf 'SHELL-%s\\n' READY; read x"}
		if name != "floor" {
			it, bin = interactives[name], []string{r.bin}
		}
		socket := fmt.Sprintf("shadow-startup-%d-%d", os.Getpid(), n)
		var scr *tmuxScreen
		var start time.Time
		if tui {
			argv := append([]string{r.c.bin, "tui"}, r.shadowArgs()...)
			script := ""
			for _, a := range append(append(argv, "--"), bin...) {
				script += shellQuote(a) + " "
			}
			scr = newTmuxOn(t, socket, r.project, r.env, "sh", "-c", script)
			waitScreen(t, scr, time.Minute, "allowed")
			scr.send("Enter")
			start = time.Now()
		} else {
			args := bin
			if name != "floor" {
				args = append(args, it.directArgs...)
			}
			scr = newTmuxOn(t, socket, r.project, r.env, args...)
			start = time.Now()
		}
		d := firstScreen(t, scr, it).Sub(start)
		cpu := paneCPU(t, scr)
		exec.Command("tmux", "-L", socket, "kill-server").Run()
		return d, cpu
	}
	for i := 0; i < rounds; i++ {
		for _, a := range agents {
			direct, dcpu := measure(a, false)
			inTUI, ucpu := measure(a, true)
			times[a+" direct"] = append(times[a+" direct"], direct)
			times[a+" tui"] = append(times[a+" tui"], inTUI)
			times[a+" direct cpu"] = append(times[a+" direct cpu"], dcpu)
			times[a+" tui cpu"] = append(times[a+" tui cpu"], ucpu)
			t.Logf("round %d %-8s directly %6s (CPU %6s)   in shadow tui %6s (CPU %6s)", i+1, a, direct.Round(time.Millisecond),
				dcpu, inTUI.Round(time.Millisecond), ucpu)
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first screen, median of %d, interleaved (the agent's CPU to it):\n%-10s %10s %14s %10s %11s %11s\n", rounds,
		"agent", "directly", "in shadow tui", "extra", "CPU direct", "CPU in tui")
	for _, a := range agents {
		d, u := median(times[a+" direct"]), median(times[a+" tui"])
		fmt.Fprintf(&b, "%-10s %10s %14s %10s %11s %11s\n", a, d.Round(10*time.Millisecond), u.Round(10*time.Millisecond), (u - d).Round(10*time.Millisecond),
			median(times[a+" direct cpu"]), median(times[a+" tui cpu"]))
	}
	t.Log("\n" + b.String())
}

// firstScreen waits for the agent's first screen of its own: its ready screen, or one of the
// questions it asks first.
func firstScreen(t *testing.T, scr *tmuxScreen, it interactive) time.Time {
	t.Helper()
	marks := []string{it.ready}
	for _, a := range it.answers {
		marks = append(marks, a[0])
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out := scr.screen()
		for _, m := range marks {
			if strings.Contains(out, m) {
				return time.Now()
			}
		}
	}
	t.Fatalf("the agent never showed a screen of its own (%q):\n%s", marks, scr.screen())
	return time.Time{}
}

// paneCPU is the CPU time (user and system, with that of the children they reaped) of the
// processes under the pane's first one but shadow's own, from /proc.
func paneCPU(t *testing.T, scr *tmuxScreen) time.Duration {
	t.Helper()
	out, err := exec.Command("tmux", "-L", scr.socket, "display", "-p", "#{pane_pid}").Output()
	if err != nil {
		t.Fatalf("tmux display: %v", err)
	}
	root, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	type proc struct {
		ppid, ticks int
		shadow      bool
	}
	procs := map[int]proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		f := strings.Fields(st[i+1:])
		ppid, _ := strconv.Atoi(f[1])
		ticks := 0
		for _, k := range f[11:15] { // utime, stime, cutime, cstime
			n, _ := strconv.Atoi(k)
			ticks += n
		}
		procs[pid] = proc{ppid: ppid, ticks: ticks, shadow: strings.Contains(st[:i], "(shadow")}
	}
	total := 0
	for pid, p := range procs {
		for q := pid; q > 1; q = procs[q].ppid {
			if q == root {
				if !p.shadow {
					total += p.ticks
				}
				break
			}
			if _, ok := procs[q]; !ok {
				break
			}
		}
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(total) * 10 * time.Millisecond
}
