package diffview

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// The review screen says why a protected file is protected, whole at 80 columns, and so does the
// apply confirmation that leaves it out.
func TestProtectedWhyShown(t *testing.T) {
	const why = "VS Code runs its tasks and applies its settings (terminal env, interpreters) on open"
	src := fixture()
	ci := src.meta[".github/ci.yml"]
	ci.ProtectedWhy = why
	src.meta[".github/ci.yml"] = ci

	m := open(t, src, 80, 24)
	m = selectPath(t, m, ".github/ci.yml")
	v := m.View()
	checkScreen(t, v, 80, 24)
	plain := ansi.Strip(v)
	if !strings.Contains(plain, "PROTECTED path: not applied without --allow-protected") {
		t.Errorf("no protected note:\n%s", plain)
	}
	// Wrapped to fit the diff pane: every word of the reason is on screen, none cut.
	var shown []string
	for _, l := range strings.Split(plain, "\n") {
		if i := strings.Index(l, "why: "); i >= 0 {
			shown = append(shown, strings.Fields(l[i+len("why: "):])...)
			continue
		}
		if len(shown) > 0 && strings.Contains(l, "│") {
			rest := l[strings.LastIndex(l, "│")+len("│"):]
			if f := strings.Fields(rest); len(f) > 0 && strings.HasPrefix(rest, "       ") {
				shown = append(shown, f...)
			}
		}
	}
	if got := strings.Join(shown, " "); got != why {
		t.Errorf("reason on screen %q, want %q:\n%s", got, why, plain)
	}
	golden.RequireEqual(t, v)

	// Accepting everything skips protected files; accepting this one, apply leaves it out.
	m = press(t, selectPath(t, open(t, src, 160, 48), ".github/ci.yml"), "A", "w")
	if plain := ansi.Strip(m.View()); !strings.Contains(plain, ".github/ci.yml  protected path, apply it with shadow apply --allow-protected: VS Code runs") {
		t.Errorf("the confirmation does not say why .github/ci.yml is left out:\n%s", plain)
	}
}

func TestWhyNotesFit(t *testing.T) {
	for _, why := range []string{
		"direnv runs it on cd",
		"VS Code runs its tasks and applies its settings (terminal env, interpreters) on open",
		strings.Repeat("word ", 40),
	} {
		lines := whyNotes(why)
		var words []string
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > whyWidth {
				t.Errorf("%q: line %d is %d cells, more than %d", why, i, w, whyWidth)
			}
			lead := "     "
			if i == 0 {
				lead = "why: "
			}
			if !strings.HasPrefix(l, lead) {
				t.Errorf("%q: line %d %q does not start with %q", why, i, l, lead)
			}
			words = append(words, strings.Fields(l[len(lead):])...)
		}
		if strings.Join(words, " ") != strings.Join(strings.Fields(why), " ") {
			t.Errorf("%q wrapped to %q", why, lines)
		}
	}
}
