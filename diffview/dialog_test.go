package diffview

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// The confirmations show their title and their keys at every size the
// review accepts, whichever pane has the focus.
func TestConfirmGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{40, 12}, {60, 15}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			for _, c := range []struct {
				name, title, prompt string
				keys                []string
			}{
				{"apply", "Apply to the project?", "y apply · n/esc cancel", []string{"ctrl+a", "w"}},
				{"apply-from-tree", "Apply to the project?", "y apply · n/esc cancel", []string{"ctrl+a", "tab", "w"}},
				{"rollback", "Roll back the last apply?", "y roll back · n/esc cancel", []string{"b"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					m := open(t, fixture(), size.w, size.h)
					m = press(t, m, c.keys...)
					v := m.View()
					checkScreen(t, v, size.w, size.h)
					plain := ansi.Strip(v)
					if !strings.Contains(plain, c.title) || !strings.Contains(plain, c.prompt) {
						t.Errorf("the dialog's title or keys are not on screen:\n%s", plain)
					}
					golden.RequireEqual(t, v)
				})
			}
		})
	}
}

// Down to MinWidth×MinHeight a long plan keeps its title, says how many
// files it leaves unlisted, and ends with its keys.
func TestConfirmAtMinimumSize(t *testing.T) {
	src := fixture()
	for i := 0; i < 30; i++ {
		p := fmt.Sprintf("gen/file%02d.txt", i)
		src.base[p], src.staged[p] = "a\n", "b\n"
		src.meta[p] = File{Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile}
	}
	m := open(t, src, MinWidth, MinHeight)
	m = press(t, m, "ctrl+a", "w")
	v := m.View()
	checkScreen(t, v, MinWidth, MinHeight)
	plain := ansi.Strip(v)
	for _, want := range []string{"Apply to the project?", "more", "y apply · n/esc cancel"} {
		if !strings.Contains(plain, want) {
			t.Errorf("%q is not on screen at %dx%d:\n%s", want, MinWidth, MinHeight, plain)
		}
	}
}

// Below MinWidth×MinHeight the screen says it is too small and no key but
// quit does anything: y never confirms a dialog that cannot be seen, and a
// dialog opened before the screen shrank waits for it to grow.
func TestNoConfirmWithoutVisibleDialog(t *testing.T) {
	src := fixture()
	m := open(t, src, 20, 5)
	v := ansi.Strip(m.View())
	checkScreen(t, m.View(), 20, 5)
	if !strings.Contains(strings.ReplaceAll(v, "\n", " "), "too small") {
		t.Errorf("a screen below the minimum does not say it is too small:\n%s", v)
	}
	m = press(t, m, "ctrl+a", "w", "y", "b", "y")
	if len(src.saved) != 0 || m.mode != modeNormal || src.project[mainGo] != src.base[mainGo] {
		t.Fatalf("keys acted on a screen too small to show them: saved %v, mode %d", src.saved, m.mode)
	}

	m = open(t, src, 80, 24)
	m = press(t, m, "ctrl+a", "w")
	if m.mode != modeConfirmApply {
		t.Fatalf("w did not ask")
	}
	m, _ = m.Update(tea.WindowSizeMsg{Width: 40, Height: 6})
	m = press(t, m, "y")
	if src.project[mainGo] != src.base[mainGo] || m.mode != modeConfirmApply {
		t.Fatalf("y applied while the dialog was not on screen (mode %d)", m.mode)
	}
	m, _ = m.Update(tea.WindowSizeMsg{Width: 40, Height: 12})
	if !strings.Contains(ansi.Strip(m.View()), "y apply · n/esc cancel") {
		t.Fatalf("the dialog did not come back with the screen:\n%s", ansi.Strip(m.View()))
	}
	m = press(t, m, "y")
	if src.project[mainGo] != src.staged[mainGo] {
		t.Errorf("y on the visible dialog did not apply: main.go = %q", src.project[mainGo])
	}
}

// A dialog's text wraps instead of being cut, and a list is shortened with
// a count of what it leaves out.
func TestDialogLayout(t *testing.T) {
	m := New()
	d := dialog{
		title:  "Title",
		blocks: []dialogBlock{{text: "one two three four five six seven eight nine ten"}, {head: "List:", items: []string{"  a", "  b", "  c", "  d", "  e"}}},
		prompt: "y yes · n no",
	}
	for _, c := range []struct {
		w, h int
		want string
	}{
		{20, 20, "Title||one two three four|five six seven eight|nine ten||List:|  a|  b|  c|  d|  e||y yes · n no"},
		{20, 10, "Title|one two three four|five six seven eight|nine ten|List:|  a|  b|  c|  … and 2 more|y yes · n no"},
		{20, 5, "Title|one two three four|five six seven eight|…|y yes · n no"},
		{12, 2, "Title|y yes · n no"},
		{12, 1, "y yes · n no"},
	} {
		got := strings.Join(d.lines(&m, c.w, c.h), "|")
		if ansi.Strip(got) != c.want {
			t.Errorf("%dx%d:\n got %q\nwant %q", c.w, c.h, ansi.Strip(got), c.want)
		}
	}
}

// With nothing accepted, or only hunks in files apply leaves out, the apply
// confirmation says so and offers no apply: y applies nothing.
func TestApplyConfirmWithNothingAccepted(t *testing.T) {
	for _, c := range []struct {
		name, says string
		keys       []string
	}{
		{"nothing-accepted", "Nothing is accepted: accept a hunk (a)", []string{"w"}},
		{"only-left-out", "Nothing can be written: every accepted hunk", []string{"A", "w"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fixture()
			m := open(t, src, 80, 24)
			if c.name == "only-left-out" {
				m = selectPath(t, m, ".github/ci.yml")
			}
			m = press(t, m, c.keys...)
			v := m.View()
			checkScreen(t, v, 80, 24)
			plain := ansi.Strip(v)
			if !strings.Contains(plain, c.says) || strings.Contains(plain, "y apply") || !strings.Contains(plain, "n/esc back") {
				t.Errorf("the confirmation with nothing to write offers an apply or does not say why:\n%s", plain)
			}
			m = press(t, m, "y")
			if len(src.undo) != 0 {
				t.Errorf("y applied with nothing accepted")
			}
			if got := ansi.Strip(m.View()); !strings.Contains(got, "nothing applied: nothing is accepted") {
				t.Errorf("y does not say nothing was applied:\n%s", got)
			}
		})
	}
}

// The result of an apply lists written and deleted paths apart; the result
// of a rollback says what it put back and what it removed, and offers
// another rollback only while an earlier apply is left.
func TestResultBoxes(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 30)
	m = press(t, m, "ctrl+a", "w", "y")
	plain := ansi.Strip(m.View())
	written, deleted := section(plain, "Written (4):"), section(plain, "Deleted (1):")
	if !strings.Contains(deleted, "old.txt") || strings.Contains(written, "old.txt") || !strings.Contains(written, "README.md") {
		t.Errorf("the apply's result does not list written and deleted paths apart:\n%s", plain)
	}
	if !strings.Contains(plain, "b rolls back the last apply") {
		t.Errorf("the apply's result does not offer its rollback:\n%s", plain)
	}
	m = press(t, m, "esc", "b", "y")
	v := m.View()
	checkScreen(t, v, 80, 30)
	plain = ansi.Strip(v)
	for _, want := range []string{"rollback done", "Put back as before the apply (4):", "Created by the apply, removed (1):", "No apply is left to roll back.",
		"rollback done: 5 paths restored (4 put back, 1 removed)"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the rollback's result lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "rolls back") || strings.Contains(plain, "written") || strings.Contains(plain, "Written") {
		t.Errorf("the rollback's result offers another rollback or speaks of writing:\n%s", plain)
	}
	if !strings.Contains(section(plain, "Put back"), "old.txt") || !strings.Contains(section(plain, "Created by the apply"), "link") {
		t.Errorf("the rollback's result does not name its paths:\n%s", plain)
	}
	golden.RequireEqual(t, v)
	if m = press(t, m, "b"); m.mode != modeNormal {
		t.Errorf("b on a rollback's result with no apply left opens mode %v", m.mode)
	}

	// Two applies: rolling back the second offers rolling back the first.
	src = fixture()
	m = open(t, src, 80, 30)
	m = selectPath(t, m, "README.md")
	m = press(t, m, "A", "w", "y", "esc")
	m = selectPath(t, m, "old.txt")
	m = press(t, m, "A", "w", "y", "esc", "b", "y")
	if plain := ansi.Strip(m.View()); !strings.Contains(plain, "b rolls back the last apply") || strings.Contains(plain, "No apply is left") {
		t.Errorf("the rollback's result with an earlier apply left does not offer it:\n%s", plain)
	}
}

// section is the text of a dialog from the line holding head to the next
// blank line of the dialog's column.
func section(screen, head string) string {
	var out []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, "│"); i >= 0 {
			l = l[i+len("│"):]
		}
		switch {
		case strings.Contains(l, head):
			in = true
		case in && strings.TrimSpace(l) == "":
			return strings.Join(out, "\n")
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
