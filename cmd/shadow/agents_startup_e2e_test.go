package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAgentStartup measures, for the four agent CLIs, the time from the agent's start to its
// first screen of its own (its ready screen or the first question it asks), run directly in a
// terminal and in `shadow tui` (from the Enter that starts it after the preflight), five times
// each, interleaved, and logs the medians. A shell that prints one line is the floor: what the
// jail's start costs before any agent runs. It is a measurement, run on demand
// (SHADOW_TEST_STARTUP=1, or a list of agents: SHADOW_TEST_STARTUP=floor,gemini): on a loaded
// machine its figures are as the machine allows.
func TestAgentStartup(t *testing.T) {
	only := os.Getenv("SHADOW_TEST_STARTUP")
	if only == "" {
		t.Skip("a measurement: set SHADOW_TEST_STARTUP=1 to run it")
	}
	const rounds = 5
	agents := []string{"floor", "codex", "claude", "gemini", "opencode"}
	if only != "1" {
		agents = strings.Split(only, ",")
	}
	times := map[string][]time.Duration{}
	n := 0
	measure := func(name string, tui bool) time.Duration {
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
		exec.Command("tmux", "-L", socket, "kill-server").Run()
		return d
	}
	for i := 0; i < rounds; i++ {
		for _, a := range agents {
			direct := measure(a, false)
			inTUI := measure(a, true)
			times[a+" direct"] = append(times[a+" direct"], direct)
			times[a+" tui"] = append(times[a+" tui"], inTUI)
			t.Logf("round %d %-8s directly %6s   in shadow tui %6s", i+1, a, direct.Round(time.Millisecond), inTUI.Round(time.Millisecond))
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first screen, median of %d, interleaved:\n%-10s %10s %14s %10s\n", rounds, "agent", "directly", "in shadow tui", "extra")
	for _, a := range agents {
		d, u := median(times[a+" direct"]), median(times[a+" tui"])
		fmt.Fprintf(&b, "%-10s %10s %14s %10s\n", a, d.Round(10*time.Millisecond), u.Round(10*time.Millisecond), (u - d).Round(10*time.Millisecond))
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
