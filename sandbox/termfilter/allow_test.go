package termfilter

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The three forms of each C1 introducer: 7-bit (ESC x), 8-bit (a raw byte),
// UTF-8 encoded (0xC2 byte).
func forms(c1 byte) []string {
	return []string{esc + string(rune(c1-0x40)), string([]byte{c1}), string([]byte{0xc2, c1})}
}

// terminators of a control string: ST in its three forms, and BEL.
var terminators = []string{st, "\x9c", "\xc2\x9c", bel}

// Allowed by this test, written out apart from the code's lists: what the
// enumeration finds passing must be exactly these.
var (
	testDECModes  = []int{1, 5, 6, 7, 9, 12, 25, 47, 66, 69, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 1016, 1047, 1048, 1049, 2004, 2026, 2031, 2048}
	testANSIModes = []int{4}
	testOSC       = []int{0, 1, 2, 4, 8, 10, 11, 12, 104, 110, 111, 112}
	testC1        = []byte{0x84, 0x85, 0x88, 0x8d}
)

// checkWhole filters "a"+seq+"b" whole and byte by byte and returns whether
// seq passed; anything but seq whole or nothing of it fails the test.
func checkWhole(t *testing.T, seq string) bool {
	t.Helper()
	in := "a" + seq + "b"
	got := filter(t, in)
	var bytewise []string
	for i := range len(in) {
		bytewise = append(bytewise, in[i:i+1])
	}
	if split := filter(t, bytewise...); split != got {
		t.Errorf("%q: byte by byte %q, whole %q", seq, split, got)
	}
	switch got {
	case "ab":
		return false
	case in:
		return true
	}
	t.Errorf("%q: partly passed: %q", seq, got)
	return false
}

// TestEveryControlSequence enumerates control sequences: every final byte
// 0x40 to 0x7E, with each private marker or none, with no intermediate or
// one of 0x20 to 0x2F (and two), over a set of parameters, in the three
// introducer forms. Each is dropped, or passes whole and is in csiAllowed
// with its parameters accepted.
func TestEveryControlSequence(t *testing.T) {
	paramSets := []string{"", "0", "1", "2", "3", "4", "5", "6", "12", "20", "22", "23", "1;2", "4;20", "5;1;1;1;1", "1:2", "1?"}
	inters := []string{""}
	for i := byte(0x20); i <= 0x2f; i++ {
		inters = append(inters, string([]byte{i}))
	}
	inters = append(inters, " !", "$$")
	passed := 0
	for _, intro := range forms(0x9b) {
		for _, prefix := range []string{"", "<", "=", ">", "?"} {
			for _, p := range paramSets {
				for _, in := range inters {
					for final := byte(0x40); final <= 0x7e; final++ {
						body := prefix + p + in + string([]byte{final})
						ok := checkWhole(t, intro+body)
						want := false
						if len(in) <= 1 {
							var pb, ib byte
							if prefix != "" {
								pb = prefix[0]
							}
							if in != "" {
								ib = in[0]
							}
							rule, listed := csiAllowed[csiKey(pb, ib, final)]
							want = listed && !strings.ContainsAny(p, "<=>?") && (rule == nil || rule([]byte(p)))
						}
						if ok != want {
							t.Errorf("%q: passed %v, allow-list says %v", intro+body, ok, want)
						}
						if ok {
							passed++
						}
					}
				}
			}
		}
	}
	if passed == 0 {
		t.Fatal("nothing passed: the enumeration tests nothing")
	}
}

// TestEveryMode enumerates DEC private modes 0 to 10000 and ANSI modes 0 to
// 100, set and reset, in the three forms: exactly the test's lists pass, and
// every mode that passes is undone by Restore when left changed.
func TestEveryMode(t *testing.T) {
	for _, c := range []struct {
		prefix string
		max    int
		want   []int
	}{{"?", 10000, testDECModes}, {"", 100, testANSIModes}} {
		var got []int
		for m := 0; m <= c.max; m++ {
			on := esc + "[" + c.prefix + strconv.Itoa(m) + "h"
			off := esc + "[" + c.prefix + strconv.Itoa(m) + "l"
			pon, poff := checkWhole(t, on), checkWhole(t, off)
			if pon != poff {
				t.Errorf("mode %s%d: set passes %v, reset %v", c.prefix, m, pon, poff)
			}
			for _, intro := range forms(0x9b)[1:] {
				if checkWhole(t, intro+c.prefix+strconv.Itoa(m)+"h") != pon {
					t.Errorf("mode %s%d: the %q form differs", c.prefix, m, intro)
				}
			}
			if !pon {
				continue
			}
			got = append(got, m)
			if m == 1048 {
				continue // saves the cursor: nothing to undo
			}
			prompt := off // the value at a shell prompt, as Restore sends it
			if i := decIndex(m); c.prefix == "?" && i >= 0 && decModes[i].set {
				prompt = on
			}
			left := off
			if prompt == off {
				left = on
			}
			f := New(&bytes.Buffer{})
			f.Write([]byte(left))
			if r := string(f.Restore()); !strings.Contains(r, prompt) {
				t.Errorf("mode %s%d left changed: Restore = %q, want it to send %q", c.prefix, m, r, prompt)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("modes %q that pass: %v, want %v", c.prefix, got, c.want)
		}
	}
}

// TestKeyboardAndEchoModesNeverStaySet: KAM, SRM and LNM never reach the
// terminal, so nothing of them outlives shadow; IRM does and Restore
// resets it.
func TestKeyboardAndEchoModesNeverStaySet(t *testing.T) {
	for _, m := range []string{"2", "12", "20", "2;4", "4;12", "4;20"} {
		for _, hl := range []string{"h", "l"} {
			var out bytes.Buffer
			f := New(&out)
			f.Write([]byte("a" + esc + "[" + m + hl + "b"))
			f.Flush()
			if out.String() != "ab" || len(f.Restore()) != 0 {
				t.Errorf("CSI %s%s: wrote %q, Restore %q", m, hl, out.String(), f.Restore())
			}
		}
	}
	for _, intro := range forms(0x9b) {
		f := New(&bytes.Buffer{})
		f.Write([]byte(intro + "4h"))
		if r := string(f.Restore()); r != esc+"[4l" {
			t.Errorf("%q4h: Restore = %q, want ESC[4l", intro, r)
		}
		f.Write([]byte(intro + "4l"))
		if r := f.Restore(); len(r) != 0 {
			t.Errorf("%q4h then 4l: Restore = %q", intro, r)
		}
	}
}

// TestEveryOSC enumerates OSC commands 0 to 1100 and a few past it, with an
// argument, a query and none, in every introducer form and terminator: only
// the test's list passes, with the arguments its check accepts, and never
// with a raw 0x9C terminator (a terminal may or may not end the string
// there: the filter keeps neither reading's string).
func TestEveryOSC(t *testing.T) {
	nums := []int{1337, 5113, 5522, 7777, 9999, 100000}
	for n := 0; n <= 1100; n++ {
		nums = append(nums, n)
	}
	var got []int
	for _, n := range nums {
		passedAny := false
		for _, intro := range forms(0x9d) {
			for _, term := range terminators {
				for _, body := range []string{strconv.Itoa(n) + ";x", strconv.Itoa(n) + ";?", strconv.Itoa(n), strconv.Itoa(n) + ";;"} {
					ok := checkWhole(t, intro+body+term)
					want := keepOSC([]byte(body)) && term != "\x9c"
					if ok != want {
						t.Errorf("%q: passed %v, allow-list says %v", intro+body+term, ok, want)
					}
					if ok && body == strconv.Itoa(n)+";?" && n > 2 { // a title may be "?"
						t.Errorf("%q: a query passed", intro+body+term)
					}
					passedAny = passedAny || ok
				}
			}
		}
		if passedAny {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, testOSC) {
		t.Errorf("OSC commands that pass: %v, want %v", got, testOSC)
	}
	for _, uri := range []string{"file:///etc/passwd", "ssh://h/", "FILE://x", "javascript:alert(1)", "x-man-page://ls", "vscode://x", "http:", "https://a b", "mailto:a@b"} {
		if checkWhole(t, esc+"]8;;"+uri+st) {
			t.Errorf("OSC 8 to %q passed", uri)
		}
	}
	for _, uri := range []string{"", "http://example.com/", "HTTPS://example.com/a?b=c"} {
		if !checkWhole(t, esc+"]8;id=1;"+uri+st) {
			t.Errorf("OSC 8 to %q dropped", uri)
		}
	}
}

// TestEveryControlString enumerates DCS, SOS, PM and APC strings in every
// form and terminator: SOS, PM and APC never pass; DCS only as keepDCS says.
func TestEveryControlString(t *testing.T) {
	bodies := []string{"", "x", "q#0~~", "0;1;0q#0~", "$qm", "+q544e", "+p544e", "=1s", "=2s", "=3s", "1;2|17/6563", "tmux;x", "1$r0m", "{x"}
	for _, c1 := range []byte{0x90, 0x98, 0x9e, 0x9f} {
		for _, intro := range forms(c1) {
			for _, term := range terminators[:3] {
				for _, body := range bodies {
					seq := intro + body + term
					h, ok := parseControl([]byte(body))
					sixel := c1 == 0x90 && ok && streamDCS(h)
					if sixel && term != st {
						// Passed as it streams, then ended at the first byte
						// past ASCII, with ST, in the terminal too.
						if got, want := filter(t, "a"+seq+"b"), "a"+intro+body+st+"b"; got != want {
							t.Errorf("%q: %q, want %q", seq, got, want)
						}
						continue
					}
					want := c1 == 0x90 && ok && keepDCS(h) && term != "\x9c"
					if got := checkWhole(t, seq); got != want {
						t.Errorf("%q: passed %v, want %v", seq, got, want)
					}
				}
			}
		}
	}
}

// TestEveryEscapeAndC1 enumerates ESC followed by every byte 0x20 to 0x7E
// (with each intermediate for the nF ones), and every C1 control raw and
// UTF-8 encoded: each is dropped or allowed by keepEsc or the test's C1 list.
func TestEveryEscapeAndC1(t *testing.T) {
	introducers := "P[]X^_" // strings and CSI: enumerated above
	for b := byte(0x30); b <= 0x7e; b++ {
		if strings.IndexByte(introducers, b) >= 0 {
			continue
		}
		seq := esc + string([]byte{b})
		want := keepEsc([]byte(seq))
		if b >= 0x40 && b <= 0x5f {
			want = slices.Contains(testC1, b+0x40)
		}
		if got := checkWhole(t, seq); got != want {
			t.Errorf("%q: passed %v, want %v", seq, got, want)
		}
	}
	for i := byte(0x20); i <= 0x2f; i++ {
		for b := byte(0x30); b <= 0x7e; b++ {
			seq := esc + string([]byte{i, b})
			if got, want := checkWhole(t, seq), keepEsc([]byte(seq)); got != want {
				t.Errorf("%q: passed %v, want %v", seq, got, want)
			}
		}
	}
	for b := byte(0x80); b <= 0x9f; b++ {
		if strings.IndexByte(introducers, b-0x40) >= 0 {
			continue
		}
		for _, seq := range forms(b)[1:] {
			if got, want := checkWhole(t, seq), slices.Contains(testC1, b); got != want {
				t.Errorf("%q: passed %v, want %v", seq, got, want)
			}
		}
	}
}

// TestRawSTEndsStrings: a raw 0x9C inside an OSC string, a sixel image or a
// dropped string ends it for the filter as some terminal ends it, so what
// follows is filtered as plain text, never passed as the string's content.
func TestRawSTEndsStrings(t *testing.T) {
	payloads := []string{
		esc + "]52;c;ZWNobyBldmls" + bel,
		"\x9d52;c;ZWNobyBldmls\x9c",
		"\xc2\x9d52;c;ZWNobyBldmls\xc2\x9c",
		esc + "[6n",
		"\x9b6n",
		"\x9d8;;file:///etc/passwd\x9c",
	}
	for _, open := range []string{esc + "]0;title", "\x9d2;title", "\xc2\x9d0;title", esc + "Pq#0~~", "\x90q#0~~",
		esc + "]52;c;", esc + "_Ga=q", "\x9f", "\x98", esc + "P$q", esc + "]7;file://h/", "\x9d633;A"} {
		for _, p := range payloads {
			in := open + "\x9c" + p + "after"
			out := filter(t, in)
			for _, bad := range []string{"]52", "\x9d52", "[6n", "\x9b6n", "file://"} {
				if strings.Contains(out, bad) {
					t.Errorf("%q: %q reached the terminal: %q", in, bad, out)
				}
			}
			if !strings.HasSuffix(out, "after") {
				t.Errorf("%q: the text after the string is lost: %q", in, out)
			}
		}
	}
	// A title with a UTF-8 character whose continuation byte is 0x9C is
	// no terminator.
	if got := filter(t, esc+"]0;✜ done"+bel); got != esc+"]0;✜ done"+bel {
		t.Errorf("title with ✜: %q", got)
	}
}

// TestColourRestore: a palette, foreground, background or cursor colour, a
// character set or a scrolling region left set is reset by Restore.
func TestColourRestore(t *testing.T) {
	for _, c := range []struct{ set, reset string }{
		{"4;1;rgb:ff/00/00", "104"}, {"10;#ffffff", "110"}, {"11;#000000", "111"}, {"12;red", "112"},
	} {
		f := New(&bytes.Buffer{})
		f.Write([]byte(esc + "]" + c.set + bel))
		want := esc + "]" + c.reset + st
		if r := string(f.Restore()); r != want {
			t.Errorf("after OSC %s: Restore = %q, want %q", c.set, r, want)
		}
		f.Write([]byte(want))
		if r := f.Restore(); len(r) != 0 {
			t.Errorf("after OSC %s and %s: Restore = %q", c.set, c.reset, r)
		}
	}
	f := New(&bytes.Buffer{})
	f.Write([]byte(esc + "(0\x0eq"))
	if r := string(f.Restore()); r != "\x0f"+esc+"(B" {
		t.Errorf("line drawing left on: Restore = %q", r)
	}
	for _, c := range []struct{ in, want string }{
		{esc + "[2;20r", esc + "7" + esc + "[r" + esc + "8"},
		{esc + "[2;20r" + esc + "[r", ""},
		{esc + "[2;20r" + esc + "[;r", ""},
		{esc + "[2;20r" + esc + "[!p", ""},
	} {
		f := New(&bytes.Buffer{})
		f.Write([]byte(c.in))
		if r := string(f.Restore()); r != c.want {
			t.Errorf("after %q: Restore = %q, want %q", c.in, r, c.want)
		}
	}
}

func ExampleWriter_allowList() {
	var out bytes.Buffer
	f := New(&out)
	f.Write([]byte("\x1b]8;;file:///etc/passwd\x1b\\x\x1b[12l\x1b[31mred\x9d0;t\x9c\x9d52;c;eA==\x07ok"))
	fmt.Printf("%q\n", out.String())
	// Output: "x\x1b[31mredok"
}
