package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewMergeInTmux drives `shadow review` on a file both the agent (in `shadow run`) and the
// developer (on the host, afterwards) changed: the review shows the developer's change and the
// conflict on the line both changed; keeping the developer's line there and taking the agent's
// other change, the apply writes both sides' changes.
func TestReviewMergeInTmux(t *testing.T) {
	c := newCLI(t)
	var a strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&a, "line %d\n", i)
	}
	p := fixture(t, map[string]string{"a.txt": a.String()})
	c.must(p, "run", "--", "sh", "-c", `sed -i 's/^line 5$/AGENT FIVE/; s/^line 40$/AGENT FORTY/' a.txt`)
	host := strings.NewReplacer("line 2\n", "HOST TWO\n", "line 5\n", "HOST FIVE\n").Replace(a.String())
	if err := os.WriteFile(filepath.Join(p, "a.txt"), []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}

	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	scr := newTmux(t, p, env, c.bin, "review")
	first := scr.waitFor("0✓0✗2·")
	for _, want := range []string{"C 0✓0✗2·", "your change since the pre-image", "+HOST TWO", "! CONFLICT", "= line 5"} {
		if !strings.Contains(first, want) {
			t.Fatalf("the review does not show %q:\n%s", want, first)
		}
	}
	scr.keys(
		"r", "0✓1✗1·", // the conflict on line 5: keep the developer's line
		"a", "1✓1✗0·", // the agent's line 40, on the developer's file
		"w", "Apply to the project?",
		"y", "apply done",
	)
	got, err := os.ReadFile(filepath.Join(p, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(host, "line 40\n", "AGENT FORTY\n", 1); string(got) != want {
		t.Errorf("a.txt after the merged apply:\n%s\nwant the developer's lines 2 and 5 and the agent's 40:\n%s", got, want)
	}
	scr.keys("Escape", "", "q", "")
}
