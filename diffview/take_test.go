package diffview

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// takerSource is a memSource reviewed beside another session whose versions it can take.
type takerSource struct {
	*memSource
	other map[string]string
	took  []string
}

func (s *takerSource) Other() string { return "codex" }

func (s *takerSource) TakeOther(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged[path] = s.other[path]
	s.took = append(s.took, path)
	return nil
}

// Beside another session, T takes its version of the selected file: the source stages it, the
// files load again showing it, and the status line says what happened; the help lists T. A review
// of one session lists no T, and T there says how to open one beside another.
func TestTakeFromTheOtherSession(t *testing.T) {
	src := &takerSource{memSource: fixture(), other: map[string]string{"README.md": "# Demo\n\nCodex's text.\n"}}
	m := open(t, src, 200, 50)
	m = selectPath(t, m, "README.md")
	m = press(t, m, "T")
	if strings.Join(src.took, ",") != "README.md" {
		t.Fatalf("TakeOther got %v", src.took)
	}
	if !strings.Contains(m.status, "took codex's version of README.md") {
		t.Errorf("status %q", m.status)
	}
	if got := ansi.Strip(m.View()); !strings.Contains(got, "Codex's text.") {
		t.Errorf("the review does not show the version taken:\n%s", got)
	}
	if help := ansi.Strip(press(t, m, "?").View()); !strings.Contains(help, "take the other session's version") {
		t.Errorf("help beside another session lacks T:\n%s", help)
	}
	plain := open(t, fixture(), 200, 50)
	if help := ansi.Strip(press(t, plain, "?").View()); strings.Contains(help, "take the other session's version") {
		t.Error("the help of a review of one session lists T")
	}
	if plain = press(t, plain, "T"); !strings.Contains(plain.status, "--with OTHER") {
		t.Errorf("T in a review of one session: status %q", plain.status)
	}
}
