package diffview

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

func TestSearchMatches(t *testing.T) {
	got := searchMatches("Foo foo", "FOO")
	want := []bool{true, true, true, false, true, true, true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("searchMatches = %v, want %v", got, want)
	}
	if searchMatches("abc", "x") != nil || searchMatches("abc", "") != nil {
		t.Errorf("marks without a match")
	}
}

func TestContainsFold(t *testing.T) {
	tests := []struct {
		hay, needle string
		want        bool
	}{
		{"Hello World", "world", true},
		{"Hello World", "o w", true},
		{"Hello", "hello!", false},
		{"abc", "", true},
		{"ABC", "bd", false},
		{"xxAbC", "abc", true},
	}
	for _, tt := range tests {
		if got := containsFold(tt.hay, tt.needle); got != tt.want {
			t.Errorf("containsFold(%q, %q) = %v", tt.hay, tt.needle, got)
		}
	}
}

func FuzzContainsFold(f *testing.F) {
	f.Add("Hello World", "o w")
	f.Fuzz(func(t *testing.T, hay, needle string) {
		n := asciiLower(needle)
		if got, want := containsFold(hay, n), strings.Contains(asciiLower(hay), n); got != want {
			t.Fatalf("containsFold(%q, %q) = %v, want %v", hay, n, got, want)
		}
	})
}

// TestEscapeBackslashName shows a file named with a literal `\x1b[31mred`
// and one whose name holds a real ESC side by side: the tree, the title and
// the apply dialog must tell them apart.
func TestEscapeBackslashName(t *testing.T) {
	literal, real := `\x1b[31mred`, "\x1b[31mred"
	if diff.Escape(literal) == diff.Escape(real) {
		t.Fatalf("Escape shows %q and %q alike: %q", literal, real, diff.Escape(real))
	}
	for _, tt := range []struct{ in, want string }{
		{literal, `\\x1b[31mred`},
		{real, `\x1b[31mred`},
		{`\e[31mred`, `\\e[31mred`},
		{`a\`, `a\\`},
	} {
		if got := diff.Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := diff.EscapeLine(`printf("\n")`); got != `printf("\n")` {
		t.Errorf("EscapeLine changes a line's backslash: %q", got)
	}
	src := &memSource{
		base:      map[string]string{},
		staged:    map[string]string{literal: "a\n", real: "b\n"},
		meta:      map[string]File{literal: {Status: StatusAdded, NewMode: diff.ModeFile}, real: {Status: StatusAdded, NewMode: diff.ModeFile}},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{},
	}
	m := open(t, src, 100, 20)
	for _, name := range []string{literal, real} {
		m = selectPath(t, m, name)
		v := m.View()
		checkScreen(t, v, 100, 20)
		plain := ansi.Strip(v)
		if !strings.Contains(plain, `\\x1b[31mred`) || !strings.Contains(strings.ReplaceAll(plain, `\\x1b[31mred`, ""), `\x1b[31mred`) {
			t.Errorf("with %q selected, the tree does not show both names apart:\n%s", name, plain)
		}
		if title := strings.SplitN(strings.SplitN(plain, "\n", 2)[0], "│", 2)[1]; !strings.HasPrefix(title, diff.Escape(name)+" ") {
			t.Errorf("with %q selected, the title reads %q", name, title)
		}
	}
	m = press(t, m, "ctrl+a", "w")
	plain := ansi.Strip(m.View())
	if !strings.Contains(plain, `\\x1b[31mred`) || !strings.Contains(strings.ReplaceAll(plain, `\\x1b[31mred`, ""), `\x1b[31mred`) {
		t.Errorf("the apply dialog does not show both names apart:\n%s", plain)
	}
}
