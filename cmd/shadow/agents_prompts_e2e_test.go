package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/internal/agenttest"
)

// Gemini CLI and opencode in `shadow tui`, driven as a person drives them: two prompts, each
// answered by one edit of the scripted model. Each prompt makes one checkpoint holding only its
// edit, named for it (shadow log --json), and the review applies both.

func init() {
	interactives["gemini"] = interactive{
		answers: [][2]string{{"Do you trust the files in this folder?", "Enter"}},
		ready:   "Type your message or @path/to/file",
		quit:    []string{"/quit", "Enter"},
		approve: [][2]string{{"Apply this change?", "Enter"}},
	}
	interactives["opencode"] = interactive{
		ready:   "Ask anything",
		quit:    []string{"/exit", "Enter"},
		approve: [][2]string{{"Permission required", "Enter"}},
	}
}

// secondEdit is the second prompt's edit: the line the first made, made again.
const secondPrompt = "now make it newer"

func notesSecond(agent string) string { return "newer line by " + agent + "\n" }

// secondCalls are the scripted model's calls for the second prompt.
func secondCalls(name, project string) []agenttest.Call {
	f := filepath.Join(project, "notes.txt")
	from, to := strings.TrimSuffix(notesAfter(name), "\n"), strings.TrimSuffix(notesSecond(name), "\n")
	switch name {
	case "gemini":
		return []agenttest.Call{{Tool: "replace", Args: map[string]any{"file_path": f,
			"instruction": "make it newer", "old_string": from, "new_string": to}}}
	case "opencode":
		return []agenttest.Call{
			{Tool: "read", Args: map[string]any{"filePath": f}},
			{Tool: "edit", Args: map[string]any{"filePath": f, "oldString": from, "newString": to}},
		}
	}
	return nil
}

func testTUIPrompts(t *testing.T, name string) {
	r := newAgentRig(t, name)
	it := interactives[name]
	argv := append([]string{r.c.bin, "tui"}, r.shadowArgs()...)
	argv = append(argv, "--", r.bin)
	script := ""
	for _, a := range argv {
		script += shellQuote(a) + " "
	}
	scr := newTmux(t, r.project, r.env, "sh", "-c", script+"; echo SHADOW-EXIT=$?")
	tuiStart := time.Now()
	waitScreen(t, scr, time.Minute, "allowed")
	scr.keys("Enter", "")
	agentStart := time.Now()
	first := r.awaitReady(t, scr, it)
	t.Logf("%s in shadow tui: first screen %s after the agent started, %s after shadow tui started",
		name, first.Sub(agentStart).Round(time.Millisecond), first.Sub(tuiStart).Round(time.Millisecond))
	r.prompt(t, scr, it, editPrompt)
	r.model.Next("DONE-"+name+"-SECOND", secondCalls(name, r.project)...)
	r.prompt(t, scr, it, secondPrompt)
	r.quitAgent(scr, it)
	waitScreen(t, scr, time.Minute, "exited with status")
	// One checkpoint per prompt (read while the app shows the end box), each holding its edit alone, named for its prompt.
	var steps []struct {
		ID, Trigger, Prompt string
		Paths               []string
	}
	if err := json.Unmarshal([]byte(r.c.must(r.project, "log", "--json")), &steps); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range steps {
		got = append(got, fmt.Sprintf("%s %v", st.Prompt, st.Paths))
	}
	if want := []string{editPrompt + " [notes.txt]", secondPrompt + " [notes.txt]"}; !slices.Equal(got, want) {
		t.Fatalf("the session's steps are %q (%+v), want %q", got, steps, want)
	}
	for i, want := range []string{"+" + notesAfter(name), "+" + notesSecond(name)} {
		d := r.c.must(r.project, "diff", "--checkpoint", steps[i].ID)
		if !strings.Contains(d, want) || strings.Count(d, "\n+") != 2 {
			t.Errorf("step %s is not its prompt's edit alone:\n%s", steps[i].ID, d)
		}
	}
	scr.keys("Enter", "file 1/", "a", "1✓", "w", "y apply", "y", "apply done", "q", "SHADOW-EXIT=")
	if out := scr.screen(); !strings.Contains(out, "SHADOW-EXIT=0") {
		t.Errorf("shadow tui did not exit 0:\n%s", out)
	}
	if got := readFile(t, filepath.Join(r.project, "notes.txt")); got != notesSecond(name) {
		t.Fatalf("host notes.txt = %q, want %q", got, notesSecond(name))
	}
	r.checkModel(t)
	r.checkNetLog(t)
}

func TestAgentTUIGemini(t *testing.T)   { testTUIPrompts(t, "gemini") }
func TestAgentTUIOpencode(t *testing.T) { testTUIPrompts(t, "opencode") }
