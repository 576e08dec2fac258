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
