package diff

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"bell\x07 nul\x00 del\x7f", `bell\x07 nul\x00 del\x7f`},
		{"cr\r\n", `cr\r\n`},
		{"c1 \u009b31m", `c1 <U+009B>31m`},
		{"admin\u202e\u2066 // comment\u2069\u2066", `admin<U+202E><U+2066> // comment<U+2069><U+2066>`},
		{"lrm\u200e rlm\u200f alm\u061c", `lrm<U+200E> rlm<U+200F> alm<U+061C>`},
		{"zw\u200b\u200c\u200d\u2060\ufeff", `zw<U+200B><U+200C><U+200D><U+2060><U+FEFF>`},
		{"tag\U000E0041", `tag<U+E0041>`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"a\tb", "a   b"},
		{"abcd\tb", "abcd    b"},
		{"héllo wörld 日本", "héllo wörld 日本"},
		{"ls\u2028ps\u2029", `ls<U+2028>ps<U+2029>`},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEscapePieces(t *testing.T) {
	got := EscapePieces("a\x1b\x1bb\u202e")
	want := []Piece{{"a", false}, {`\x1b\x1b`, true}, {"b", false}, {"<U+202E>", true}}
	if len(got) != len(want) {
		t.Fatalf("pieces = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("piece %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("\x1b[2J\u202e\xff\t\u200b")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) is not valid UTF-8", s)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || invisible(r) {
				t.Fatalf("Escape(%q) = %q keeps %U", s, out, r)
			}
		}
		if !strings.ContainsAny(s, "\t\\<") && len(out) < len(s) {
			t.Fatalf("Escape(%q) = %q lost bytes", s, out)
		}
	})
}

func TestWordDiff(t *testing.T) {
	o, n := WordDiff("return foo(bar, baz)", "return foo(bar, qux)")
	if joined(o) != "return foo(bar, baz)" || joined(n) != "return foo(bar, qux)" {
		t.Fatalf("segments do not rebuild the lines: %+v %+v", o, n)
	}
	var changedOld, changedNew string
	for _, s := range o {
		if s.Changed {
			changedOld += s.Text
		}
	}
	for _, s := range n {
		if s.Changed {
			changedNew += s.Text
		}
	}
	if changedOld != "baz" || changedNew != "qux" {
		t.Errorf("changed = %q / %q, want baz / qux", changedOld, changedNew)
	}
	o, n = WordDiff("bad \xff", "bad \xfe")
	if joined(o) != "bad \xff" || joined(n) != "bad \xfe" {
		t.Errorf("invalid UTF-8 not kept: %+v %+v", o, n)
	}
}

func TestPairs(t *testing.T) {
	lines := []Line{{Context, "x\n"}, {Delete, "a\n"}, {Delete, "b\n"}, {Insert, "A\n"}, {Context, "y\n"}, {Delete, "c\n"}, {Insert, "C\n"}, {Insert, "D\n"}}
	got := Pairs(lines)
	want := [][2]int{{1, 3}, {5, 6}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Pairs = %v, want %v", got, want)
	}
}
