package termseq

import "testing"

// TestIntroEveryForm checks every C1 control in each of its three forms.
func TestIntroEveryForm(t *testing.T) {
	for c := byte(0x80); c <= 0x9f; c++ {
		forms := map[string]int{string([]byte{c}): 1, string([]byte{ESC, c - 0x40}): 2, string([]byte{0xc2, c}): 2}
		for in, n := range forms {
			if got, gotN := Intro([]byte(in + "x")); got != c || gotN != n {
				t.Errorf("Intro(%q) = %#x, %d, want %#x, %d", in, got, gotN, c, n)
			}
		}
	}
	for _, in := range []string{"", "a", "\x1b", "\x1ba", "\xc2", "\xc2\xa0", "\xe2\x80\x9b"} {
		if c, n := Intro([]byte(in)); n != 0 {
			t.Errorf("Intro(%q) = %#x, %d, want none", in, c, n)
		}
	}
	if KindOf(CSI) != Control || KindOf(OSC) != Command || KindOf(DCS) != Device || KindOf(APC) != Private || KindOf(0x85) != Single {
		t.Error("KindOf misreads an introducer")
	}
}

func TestParseHeader(t *testing.T) {
	h, ok := ParseHeader([]byte("?1;2 qrest"))
	if !ok || h.Prefix != '?' || string(h.Params) != "1;2" || string(h.Inter) != " " || h.Final != 'q' {
		t.Errorf("ParseHeader = %+v, %v", h, ok)
	}
	if h, _ := ParseHeader([]byte("20<0b")); !h.StrayMarker() {
		t.Error("a marker past the first is not seen")
	}
}

func TestStrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"a\x1b[31mred\x1b[0m b", "ared b"},
		{"a\x9b31mred\x9b0m b", "ared b"},
		{"a\xc2\x9b31mred b", "ared b"},
		{"\x1b]0;title\x07fix it", "fix it"},
		{"\x1b]0;title\x1b\\fix it", "fix it"},
		{"\x9d0;title\x9cfix it", "fix it"},
		{"\x1b]52;c;aGk=\x07\x1b[6nfix", "fix"},
		{"\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"x\x1b7y\x1b8z", "xyz"},
		{"cut \x1b[12", "cut "},
		{"cut \x1b]0;never ended", "cut "},
		{"✋ fix the cart total", "✋ fix the cart total"},
	} {
		if got := Strip(tc.in); got != tc.want {
			t.Errorf("Strip(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
