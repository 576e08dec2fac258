package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// checkpointAgent is a scripted agent: it reads a prompt from its terminal and edits a.txt in
// response, twice (the second time it also adds b.txt), then reads a last line and ends. Its
// words are printed with printf so that its command line, which the preflight shows, never
// matches them. It waits a little after each edit: a file changed within a clock tick of a
// checkpoint is copied again at the next, which would blur the steps this test tells apart.
const checkpointAgent = `printf 'agent-%s\n' ready
printf 'prompt-%s> ' one; read first
sed -i "s/^alpha 2\$/$first/" a.txt; sleep 0.2; printf 'agent-did-%s\n' one
printf 'prompt-%s> ' two; read second
sed -i "s/^alpha 18\$/$second/" a.txt; echo beta > b.txt; sleep 0.2; printf 'agent-did-%s\n' two
printf 'prompt-%s> ' end; read last; printf 'agent-%s\n' bye`

// TestPromptCheckpointsInTmux drives `shadow tui` over a scripted agent in a real terminal: two
// prompts typed into its pane, each answered by an edit. A prompt's checkpoint holds what came
// before the prompt, so:
//
//	the first prompt  finds nothing staged: no checkpoint
//	the second prompt takes c1: the first edit (a.txt: alpha 2 → fix the cart total)
//	the third line    takes c2: the second edit (a.txt: alpha 18 → EIGHTEEN, and b.txt)
//	the run's end     finds nothing new: no checkpoint
//
// The status bar counts them; `shadow log` lists c1 and c2 as prompt checkpoints with their
// files and the prompt each answered, as typed after the agent's own `prompt-one> `; the review
// narrowed to the second step (c2) shows its hunks and not the first's; and `shadow revert --to
// c1` leaves the first step's staged tree.
func TestPromptCheckpointsInTmux(t *testing.T) {
	c := newCLI(t)
	var a strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&a, "alpha %d\n", i)
	}
	p := fixture(t, map[string]string{"a.txt": a.String()})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	scr := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui -- sh -c "+shellQuote(checkpointAgent)+"; echo SHADOW-EXIT=$?")
	if first := scr.waitFor("allowed"); !strings.Contains(first, "Inside the jail") {
		t.Fatalf("no preflight screen:\n%s", first)
	}
	scr.keys("Enter", "prompt-one>")
	scr.typeText("fix the  cart total")
	scr.keys("Enter", "agent-did-one")
	scr.typeText("EIGHTEEN")
	scr.keys("Enter", "agent-did-two")
	// The status bar (100 columns: its narrow form) names the latest checkpoint.
	scr.waitFor("net c1 ")
	scr.keys("Enter", "exited with status 0")
	scr.waitFor("net c2 ")

	// The review, narrowed to the last step (<), then to the one before.
	scr.keys("Enter", "file 1/")
	scr.keys("<", "c2 2/2 prompt")
	step2 := scr.waitFor("+EIGHTEEN")
	if strings.Contains(step2, "cart") || !strings.Contains(step2, "b.txt") {
		t.Errorf("the review narrowed to c2 shows more, or less, than the second step:\n%s", step2)
	}
	scr.keys("<", "c1 1/2 prompt")
	step1 := scr.waitFor(`step c1 "fix the cart total" (prompt at`)
	if strings.Contains(step1, "EIGHTEEN") || strings.Contains(step1, "b.txt") {
		t.Errorf("the review narrowed to c1 shows more than the first step:\n%s", step1)
	}
	scr.keys("=", "the whole change set")
	if all := scr.screen(); !strings.Contains(all, "b.txt") {
		t.Errorf("= does not show every step again:\n%s", all)
	}
	scr.keys("q", "SHADOW-EXIT=")
	if end := scr.screen(); !strings.Contains(end, "SHADOW-EXIT=0") {
		t.Fatalf("shadow tui did not exit 0:\n%s", end)
	}

	// shadow log: two prompt checkpoints, each with the files of its step.
	log := c.must(p, "log")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	// id, date and time, trigger, command, files, lines.
	if len(lines) != 2 || !regexp.MustCompile(`^c1 +\S+ \S+ +prompt "fix the cart total" +sh -c .* 1 file +\+1 -1$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^c2 +\S+ \S+ +prompt "EIGHTEEN" +sh -c .* 2 files +\+2 -1$`).MatchString(lines[1]) {
		t.Fatalf("shadow log:\n%s", log)
	}
	var steps []struct {
		ID      string   `json:"id"`
		Trigger string   `json:"trigger"`
		Paths   []string `json:"paths"`
		Prompt  string   `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(c.must(p, "log", "--json")), &steps); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(steps); got != "[{c1 prompt [a.txt] fix the cart total} {c2 prompt [a.txt b.txt] EIGHTEEN}]" {
		t.Errorf("shadow log --json: %s", got)
	}

	// Revert to the first prompt's step: the staged tree is the first edit alone.
	c.must(p, "revert", "--to", "c1", "--yes")
	if got := c.must(p, "diff", "--name-only"); got != "a.txt\n" {
		t.Errorf("after revert --to c1, staged: %q", got)
	}
	if d := c.must(p, "diff", "a.txt"); !strings.Contains(d, "-alpha 2\n+fix the  cart total\n") || strings.Contains(d, "EIGHTEEN") {
		t.Errorf("after revert --to c1, a.txt:\n%s", d)
	}
	// The commit of an apply names the step by its prompt.
	c.must(p, "apply", "--all", "--yes", "--commit")
	if msg := git(t, p, "log", "-1", "--format=%B"); !regexp.MustCompile(`\n +c1 .* prompt "fix the cart total"  "sh -c `).MatchString(msg) {
		t.Errorf("the commit message does not name c1 by its prompt:\n%s", msg)
	}
}

// typeText types text literally into the tmux pane, as a user would.
func (s *tmuxScreen) typeText(text string) {
	s.t.Helper()
	if out, err := exec.Command("tmux", "-L", s.socket, "send-keys", "-l", text).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys -l %q: %v: %s", text, err, out)
	}
}
