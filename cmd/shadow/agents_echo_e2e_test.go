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

// TestAgentKeyEcho measures, for the four agent CLIs, the time from a key typed at the agent's
// ready prompt to the key on the terminal's screen, run directly in a terminal and in `shadow tui`,
// ten keys each, the two interleaved key by key, and logs the medians. A shell reading a line (the
// terminal's own echo) is the floor: what the pane adds with no agent's drawing in it. Both sides
// are read the same way (the terminal's screen every 2 ms), so what that costs is in both. Then, with
// the agent idle, it logs the CPU time the app's processes take in 10 s. It is a measurement, run on
// demand (SHADOW_TEST_ECHO=1, or a list of agents: SHADOW_TEST_ECHO=floor,codex).
func TestAgentKeyEcho(t *testing.T) {
	agents := measuredAgents(t, "SHADOW_TEST_ECHO")
	const keys = 10
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "key to echo, median of %d, interleaved:\n%-10s %10s %14s %10s %12s\n", keys, "agent", "directly", "in shadow tui", "extra", "app idle CPU")
	for n, name := range agents {
		start := func(tui bool) (*tmuxScreen, interactive) {
			r := newAgentRig(t, map[bool]string{true: "codex", false: name}[name == "floor"])
			it := interactive{ready: "SHELL-READY"}
			bin := []string{"sh", "-c", "printf 'SHELL-%s\\n' READY; read x"}
			if name != "floor" {
				it, bin = interactives[name], []string{r.bin}
			}
			socket := fmt.Sprintf("shadow-echo-%d-%d-%t", os.Getpid(), n, tui)
			if !tui {
				if name != "floor" {
					bin = append(bin, it.directArgs...)
				}
				return newTmuxOn(t, socket, r.project, r.env, bin...), it
			}
			argv := append([]string{r.c.bin, "tui"}, r.shadowArgs()...)
			script := ""
			for _, a := range append(append(argv, "--"), bin...) {
				script += shellQuote(a) + " "
			}
			scr := newTmuxOn(t, socket, r.project, r.env, "sh", "-c", script)
			waitScreen(t, scr, time.Minute, "allowed")
			scr.send("Enter")
			return scr, it
		}
		direct, it := start(false)
		inTUI, _ := start(true)
		for _, scr := range []*tmuxScreen{direct, inTUI} {
			if name == "floor" {
				waitScreen(t, scr, time.Minute, it.ready)
			} else {
				// As the prompts are typed (rig.prompt): a first question the agent puts up
				// late, over its prompt (Gemini CLI's folder trust), is answered first.
				(&agentRig{}).awaitReady(t, scr, it)
				settledScreen(scr)
				time.Sleep(2 * time.Second)
				if asks(settledScreen(scr), it) {
					(&agentRig{}).awaitReady(t, scr, it)
				}
			}
			settledScreen(scr)
			// A marker first, unmeasured: each key measured then extends a string the screen
			// shows nowhere else.
			scr.sendText("ZQ")
			waitScreen(t, scr, screenDeadline, "ZQ")
		}
		var dd, du []time.Duration
		typed := "ZQ"
		for i := 0; i < keys; i++ {
			k := string(rune('a' + i))
			typed += k
			dd = append(dd, keyToEcho(t, direct, k, typed))
			du = append(du, keyToEcho(t, inTUI, k, typed))
			t.Logf("%-8s key %2d directly %7s   in shadow tui %7s", name, i+1, dd[i].Round(100*time.Microsecond), du[i].Round(100*time.Microsecond))
		}
		cpu := idleCPU(t, inTUI, 10*time.Second)
		exec.Command("tmux", "-L", direct.socket, "kill-server").Run()
		exec.Command("tmux", "-L", inTUI.socket, "kill-server").Run()
		d, u := median(dd), median(du)
		t.Logf("%-8s median directly %7s   in shadow tui %7s   app idle CPU %s in 10 s", name, d.Round(100*time.Microsecond), u.Round(100*time.Microsecond), cpu)
		fmt.Fprintf(&b, "%-10s %10s %14s %10s %12s\n", name, d.Round(100*time.Microsecond), u.Round(100*time.Microsecond), (u - d).Round(100*time.Microsecond), cpu)
	}
	t.Log("\n" + b.String())
}

// keyToEcho types key once the agent's screen is still, and returns the time until the screen
// shows want, polled every 2 ms.
func keyToEcho(t *testing.T, scr *tmuxScreen, key, want string) time.Duration {
	t.Helper()
	quietScreen(scr, 300*time.Millisecond)
	start := time.Now()
	scr.sendText(key)
	for deadline := start.Add(screenDeadline); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if strings.Contains(scr.screen(), want) {
			return time.Since(start)
		}
	}
	t.Fatalf("the key %q never showed (%q):\n%s", key, want, scr.screen())
	return 0
}

// quietScreen waits until the agent's screen (the status bar's clock left out) has not changed for
// quiet, for at most 10 s.
func quietScreen(scr *tmuxScreen, quiet time.Duration) {
	last, since := agentScreen(scr.screen()), time.Now()
	for start := time.Now(); time.Since(start) < 10*time.Second && time.Since(since) < quiet; time.Sleep(20 * time.Millisecond) {
		if cur := agentScreen(scr.screen()); cur != last {
			last, since = cur, time.Now()
		}
	}
}

// idleCPU is the CPU time (user and system) the processes of the pane's session named shadow
// take in d: the app, its agent host and the jail's own, with the agent idle.
func idleCPU(t *testing.T, scr *tmuxScreen, d time.Duration) time.Duration {
	t.Helper()
	out, err := exec.Command("tmux", "-L", scr.socket, "display", "-p", "#{pane_pid}").Output()
	if err != nil {
		t.Fatalf("tmux display: %v", err)
	}
	sid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	ticks := func() map[int]int {
		m := map[int]int{}
		for _, pid := range sessionProcesses(sid) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				continue
			}
			st := string(b)
			if !strings.Contains(st[:strings.LastIndexByte(st, ')')+1], "(shadow") {
				continue
			}
			f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
			u, _ := strconv.Atoi(f[11])
			s, _ := strconv.Atoi(f[12])
			m[pid] = u + s
		}
		return m
	}
	before := ticks()
	time.Sleep(d)
	after := ticks()
	total := 0
	for pid, n := range after {
		total += n - before[pid]
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(total) * 10 * time.Millisecond
}
