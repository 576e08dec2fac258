package diffview

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// A file too large to diff says so, with its size and the command that
// shows it, instead of "+0 -0" and an empty body, and is decided whole.
func TestTooLargeFile(t *testing.T) {
	src := &memSource{
		base:   map[string]string{"logs/big.log": ""},
		staged: map[string]string{"logs/big.log": ""},
		meta: map[string]File{"logs/big.log": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile,
			TooLarge: true, OldSize: 1500, NewSize: 70 << 20, ShowCommand: "shadow diff -- /p/logs/big.log | less"}},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{},
	}
	m := open(t, src, 80, 24)
	v := m.View()
	checkScreen(t, v, 80, 24)
	plain := ansi.Strip(v)
	for _, want := range []string{"70.0 MiB  0✓ 0✗ 1·", "too large to show here (1.5 KiB → 70.0 MiB)",
		"reject it as a whole", "see its diff with: shadow diff -- /p/logs/big.log | less", "whole file · undecided"} {
		if !strings.Contains(plain, want) {
			t.Errorf("screen lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "+0 -0") {
		t.Errorf("a file too large to show reads as an empty change:\n%s", plain)
	}
	golden.RequireEqual(t, v)
	m = press(t, m, "a")
	if d := src.decisions["logs/big.log"][WholeFileID("logs/big.log")]; d.Verdict != diff.Accepted {
		t.Errorf("a did not accept the file whole: %v", src.decisions["logs/big.log"])
	}
	if !strings.Contains(ansi.Strip(m.View()), "whole file ✓ accepted") {
		t.Errorf("the whole-file decision is not shown:\n%s", ansi.Strip(m.View()))
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 70 << 20: "70.0 MiB", 3 << 40: "3.0 TiB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
