package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/internal/quote"
)

// A project moved or renamed after its session started is recognised at its new path: every
// command says which session was its and the command that brings it along, no second session is
// started behind the user's back, and `shadow sessions move` re-attaches it with its staged work.
func TestMovedProjectKeepsItsSession(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	c.must(p, "run", "--", "sh", "-c", "echo agent > a.txt")
	moved := p + "-renamed"
	if err := os.Rename(p, moved); err != nil {
		t.Fatal(err)
	}
	sessions := func() []string {
		ents, _ := os.ReadDir(filepath.Join(c.state, "shadow", "sessions"))
		var ids []string
		for _, e := range ents {
			ids = append(ids, e.Name())
		}
		return ids
	}
	ids := sessions()
	if len(ids) != 1 {
		t.Fatalf("sessions before: %v", ids)
	}
	id := ids[0]
	for _, args := range [][]string{{"run", "--", "true"}, {"diff", "--stat"}, {"log"}, {"apply", "--all", "--yes"}} {
		_, errs, code := c.run(moved, args...)
		if code != 1 || !strings.Contains(errs, "sessions move "+id+" "+moved) || !strings.Contains(errs, "was "+quote.Path(p)+" ") {
			t.Errorf("shadow %v in the moved project: exit %d, want 1 naming session %s and the move command:\n%s", args, code, id, errs)
		}
	}
	if got := sessions(); len(got) != 1 {
		t.Fatalf("a second session was started: %v", got)
	}
	out := c.must(moved, "sessions")
	if !strings.Contains(out, "project gone from this path") || strings.Contains(out, "unreadable") {
		t.Errorf("sessions with the project moved:\n%s", out)
	}

	// A copy is not the same directory: refused without --force.
	cp := p + "-copy"
	if out, err := exec.Command("cp", "-a", moved, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if _, errs, code := c.run(cp, "sessions", "move", id, cp); code != 1 || !strings.Contains(errs, "--force") {
		t.Errorf("move to a copy without --force: exit %d: %s", code, errs)
	}

	out = c.must(moved, "sessions", "move", id, moved)
	if !strings.Contains(out, "is now the session of "+moved) {
		t.Errorf("sessions move: %s", out)
	}
	if out := c.must(moved, "diff", "--name-only"); out != "a.txt\n" {
		t.Errorf("diff after the move: %q", out)
	}
	c.must(moved, "apply", "--all", "--yes")
	if got := readFile(t, filepath.Join(moved, "a.txt")); got != "agent\n" {
		t.Errorf("a.txt after apply = %q", got)
	}
}

// `shadow run --new` in a moved project starts its own session: the user chose not to bring
// the old one along.
func TestMovedProjectNewSession(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	c.must(p, "run", "--", "sh", "-c", "echo agent > a.txt")
	moved := p + "2"
	if err := os.Rename(p, moved); err != nil {
		t.Fatal(err)
	}
	c.must(moved, "run", "--new", "--", "sh", "-c", "echo other > b.txt")
	if out := c.must(moved, "diff", "--name-only"); out != "b.txt\n" {
		t.Errorf("diff of the new session: %q", out)
	}
}
