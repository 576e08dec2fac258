package diffview

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// failingApply is a source whose apply fails with a long reason.
type failingApply struct {
	*memSource
	err error
}

func (s failingApply) Apply(Plan) (Outcome, error) { return Outcome{}, s.err }

// TestLongErrorShownWhole: an error longer than the status line is wrapped onto the rows above
// it and read whole, at every width, never cut with "…"; the screen keeps its height.
func TestLongErrorShownWhole(t *testing.T) {
	why := "the project is held by another shadow (pid 4242, `shadow tui --attach`, since 14:02): " +
		"wait for it to end, or review again once it has; nothing was applied"
	for _, size := range [][2]int{{40, 12}, {80, 24}, {160, 48}} {
		src := failingApply{memSource: fixture(), err: errors.New(why)}
		m := open(t, src, size[0], size[1])
		m = selectPath(t, m, mainGo)
		m = press(t, m, "a", "w", "y")
		v := ansi.Strip(m.View())
		lines := strings.Split(v, "\n")
		if len(lines) != size[1] {
			t.Errorf("%dx%d: the view has %d rows", size[0], size[1], len(lines))
		}
		for _, l := range lines {
			if ansi.StringWidth(l) > size[0] {
				t.Errorf("%dx%d: a row is %d cells wide: %q", size[0], size[1], ansi.StringWidth(l), l)
			}
		}
		var text []string
		for _, l := range lines {
			text = append(text, strings.TrimSpace(l))
		}
		if joined := strings.Join(text, " "); !strings.Contains(joined, "apply: "+why) {
			t.Errorf("%dx%d: the error is not shown whole:\n%s", size[0], size[1], v)
		}
	}
}
