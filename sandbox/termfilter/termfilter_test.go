package termfilter

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const (
	esc = "\x1b"
	st  = "\x1b\\"
	bel = "\x07"
)

var cases = []struct {
	name, in, want string
}{
	{"plain text", "hello, world\r\n", "hello, world\r\n"},
	{"utf-8 text", "héllo ✓ 日本 🚀", "héllo ✓ 日本 🚀"},
	{"utf-8 with C1-range continuation bytes", "\u2702\u271c", "\u2702\u271c"}, // ✂ ✜: E2 9C 82, E2 9C 9C
	{"sgr colours", esc + "[1;31mred" + esc + "[0m", esc + "[1;31mred" + esc + "[0m"},
	{"truecolor", esc + "[38;2;10;20;30mx", esc + "[38;2;10;20;30mx"},
	{"cursor movement", esc + "[H" + esc + "[2J" + esc + "[10;5H" + esc + "[A", esc + "[H" + esc + "[2J" + esc + "[10;5H" + esc + "[A"},
	{"alt screen and bracketed paste", esc + "[?1049h" + esc + "[?2004h", esc + "[?1049h" + esc + "[?2004h"},
	{"cursor style DECSCUSR", esc + "[2 q", esc + "[2 q"},
	{"save restore cursor", esc + "7x" + esc + "8", esc + "7x" + esc + "8"},
	{"charset", esc + "(0q" + esc + "(B", esc + "(0q" + esc + "(B"},
	{"title BEL", esc + "]0;my title" + bel + "x", esc + "]0;my title" + bel + "x"},
	{"title ST", esc + "]2;t" + st, esc + "]2;t" + st},
	{"hyperlink", esc + "]8;;https://example.com" + st + "link" + esc + "]8;;" + st, esc + "]8;;https://example.com" + st + "link" + esc + "]8;;" + st},
	{"set colour", esc + "]4;1;rgb:ff/00/00" + bel, esc + "]4;1;rgb:ff/00/00" + bel},
	{"title stack", esc + "[22;0t" + esc + "[23;0t", esc + "[22;0t" + esc + "[23;0t"},
	{"sixel passes", esc + "Pq#0;2;0;0;0#0~~" + st + "x", esc + "Pq#0;2;0;0;0#0~~" + st + "x"},
	{"synchronized update", esc + "P=1s" + st + "x" + esc + "P=2s" + st, esc + "P=1s" + st + "x" + esc + "P=2s" + st},

	{"OSC 52 clipboard BEL", "a" + esc + "]52;c;ZWNobyBldmls" + bel + "b", "ab"},
	{"OSC 52 clipboard ST", "a" + esc + "]52;c;ZWNobyBldmls" + st + "b", "ab"},
	{"OSC 52 query", esc + "]52;c;?" + bel, ""},
	{"OSC 50 font", esc + "]50;?" + bel + esc + "]50;fixed" + st, ""},
	{"OSC 4 colour query", esc + "]4;1;?" + bel, ""},
	{"OSC 10 foreground query", esc + "]10;?" + bel, ""},
	{"OSC 11 background query", esc + "]11;?" + st, ""},
	{"OSC 12 cursor colour query", esc + "]12;?" + bel, ""},
	{"OSC 1337 iTerm2", esc + "]1337;File=name=eA==:AAAA" + bel, ""},
	{"DA1", esc + "[c" + esc + "[0c", ""},
	{"DA2", esc + "[>c" + esc + "[>0c", ""},
	{"DA3", esc + "[=c", ""},
	{"DSR status", esc + "[5n", ""},
	{"CPR", esc + "[6n", ""},
	{"DEC CPR", esc + "[?6n", ""},
	{"DECRQSS", esc + "P$qm" + st, ""},
	{"XTGETTCAP", esc + "P+q544e" + st, ""},
	{"DECUDK", esc + "P0;1|17/6563686f" + st, ""},
	{"tmux passthrough", esc + "Ptmux;" + esc + esc + "]52;c;eA==" + bel + st, ""},
	{"DECRQM ANSI", esc + "[4$p", ""},
	{"DECRQM DEC", esc + "[?2026$p", ""},
	{"XTVERSION", esc + "[>q" + esc + "[>0q", ""},
	{"window report size px", esc + "[14t", ""},
	{"window report size chars", esc + "[18t", ""},
	{"window report title", esc + "[21t", ""},
	{"window resize", esc + "[8;100;200t", ""},
	{"window move", esc + "[3;0;0t", ""},
	{"kitty keyboard query", esc + "[?u", ""},
	{"DECID", esc + "Z", ""},
	{"APC kitty graphics", esc + "_Ga=q,i=1;AAAA" + st, ""},
	{"PM", esc + "^private" + st, ""},
	{"DECRQCRA screen checksum", esc + "[1;1;1;1;10;10*y", ""},
	{"DECREQTPARM", esc + "[x", ""},
	{"C1 8-bit CSI DA1", "\x9bc", ""},
	{"C1 UTF-8 CSI DSR", "\xc2\x9b6n", ""},
	{"C1 UTF-8 OSC 52", "\xc2\x9d52;c;eA==\xc2\x9cok", "ok"},
	{"C1 UTF-8 CSI colour passes", "\xc2\x9b31mx", "\xc2\x9b31mx"},
	{"lone C2 before text", "\xc2A", "\xc2A"},
	{"control in CSI acts", esc + "[3\r1m", "\r" + esc + "[31m"},
	{"CAN aborts", esc + "]52;c;eA==\x18after", "after"},
	{"ESC aborts string", esc + "]52;c;eA==" + esc + "[1mbold", esc + "[1mbold"},
	{"ESC aborts CSI", esc + "[6" + esc + "[1m", esc + "[1m"},
	{"mixed", "$ ls" + esc + "[6n\r\n" + esc + "[32mok" + esc + "[0m" + esc + "]52;c;eA==" + bel + "\r\n", "$ ls\r\n" + esc + "[32mok" + esc + "[0m\r\n"},
}

func filter(t testing.TB, chunks ...string) string {
	t.Helper()
	var out bytes.Buffer
	f := New(&out)
	for _, c := range chunks {
		n, err := f.Write([]byte(c))
		if err != nil || n != len(c) {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestFilter(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := filter(t, c.in); got != c.want {
				t.Errorf("filter(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// TestSplitWrites feeds every case byte by byte and split in two at every
// offset: the output must not depend on where writes end.
func TestSplitWrites(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var bytewise []string
			for i := range len(c.in) {
				bytewise = append(bytewise, c.in[i:i+1])
			}
			if got := filter(t, bytewise...); got != c.want {
				t.Errorf("byte by byte: %q, want %q", got, c.want)
			}
			for i := 1; i < len(c.in); i++ {
				if got := filter(t, c.in[:i], c.in[i:]); got != c.want {
					t.Errorf("split at %d: %q, want %q", i, got, c.want)
				}
			}
		})
	}
}

// TestHeldUntilComplete: nothing of a sequence is written before it is known
// to be harmless.
func TestHeldUntilComplete(t *testing.T) {
	var out bytes.Buffer
	f := New(&out)
	f.Write([]byte("ok" + esc + "]52;c;"))
	if out.String() != "ok" {
		t.Fatalf("wrote %q before the sequence ended", out.String())
	}
	f.Write([]byte("eA==" + bel + esc + "[3"))
	if out.String() != "ok" {
		t.Fatalf("wrote %q", out.String())
	}
	f.Write([]byte("1m"))
	if out.String() != "ok"+esc+"[31m" {
		t.Fatalf("got %q", out.String())
	}
}

// TestBoundedMemory writes huge unterminated sequences: they are dropped as
// they stream by, the held state stays small, and text after their end
// passes.
func TestBoundedMemory(t *testing.T) {
	for _, intro := range []string{esc + "]52;c;", esc + "]0;", esc + "P$q", esc + "_G", esc + "["} {
		var out bytes.Buffer
		f := New(&out)
		f.Write([]byte(intro))
		chunk := bytes.Repeat([]byte("A1"), 32<<10)
		if intro == esc+"[" {
			chunk = bytes.Repeat([]byte("1;"), 32<<10)
		}
		for range 64 { // 4 MiB
			f.Write(chunk)
			if cap(f.seq) > 2*maxStringSeq {
				t.Fatalf("%q: holds %d bytes", intro, cap(f.seq))
			}
		}
		if out.Len() != 0 {
			t.Fatalf("%q: wrote %d bytes of an over-long sequence", intro, out.Len())
		}
		term := st
		if intro == esc+"[" {
			term = "m"
		}
		f.Write([]byte(term + "after"))
		if out.String() != "after" {
			t.Fatalf("%q: after the end got %q", intro, out.String())
		}
	}
}

// TestSixelStreams: a large image passes while it is written, without being
// held.
func TestSixelStreams(t *testing.T) {
	var out bytes.Buffer
	f := New(&out)
	f.Write([]byte(esc + "Pq"))
	body := bytes.Repeat([]byte("#0~~~~"), 100<<10)
	f.Write(body)
	if out.Len() != 3+len(body) {
		t.Fatalf("streamed %d bytes, want %d", out.Len(), 3+len(body))
	}
	if cap(f.seq) > 2*maxStringSeq {
		t.Fatalf("holds %d bytes", cap(f.seq))
	}
	f.Write([]byte(st))
	if !strings.HasSuffix(out.String(), st) {
		t.Fatal("terminator not passed")
	}
}

func TestFlushDropsOpenSequence(t *testing.T) {
	var out bytes.Buffer
	f := New(&out)
	f.Write([]byte("x" + esc + "]52;c;eA=="))
	f.Flush()
	f.Write([]byte("y"))
	if out.String() != "xy" {
		t.Fatalf("got %q", out.String())
	}
	// A passed sixel cut off by Flush is closed in the terminal.
	out.Reset()
	f.Write([]byte(esc + "Pq#0"))
	f.Flush()
	if out.String() != esc+"Pq#0"+st {
		t.Fatalf("got %q", out.String())
	}
}

func TestCloseThenWrite(t *testing.T) {
	var out bytes.Buffer
	f := New(&out)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

type failWriter struct{}

var errBroken = errors.New("broken")

func (failWriter) Write([]byte) (int, error) { return 0, errBroken }

func TestWriteError(t *testing.T) {
	f := New(failWriter{})
	if _, err := f.Write([]byte("x")); !errors.Is(err, errBroken) {
		t.Fatalf("got %v", err)
	}
	// Nothing to write: no error.
	if n, err := f.Write([]byte(esc + "[6n")); err != nil || n != 4 {
		t.Fatalf("got %d, %v", n, err)
	}
}

// forbidden are byte strings that must never reach the terminal.
var forbidden = []string{
	esc + "]52;", esc + "]50;", esc + "[6n", esc + "[5n", esc + "[c", esc + "[>c", esc + "[=c", esc + "P$q", esc + "P+q",
	esc + "[14t", esc + "[18t", esc + "[21t", esc + "[>q", esc + "Z", esc + "_", "\xc2\x9d52;",
}

// FuzzFilter checks, for any input and any split point, that the filter does
// not panic, that its output does not depend on how the input is split, that
// filtering its output again changes nothing (it passed nothing it would
// drop), and that no forbidden sequence appears.
func FuzzFilter(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c.in), uint16(len(c.in)/2))
	}
	f.Add([]byte(esc+"]52;c;"+strings.Repeat("A", 5000)+bel+"x"), uint16(3))
	f.Add([]byte(esc+"Pq#0~~"+esc+"[6n"), uint16(4))
	f.Fuzz(func(t *testing.T, in []byte, split uint16) {
		whole := filter(t, string(in))
		i := int(split) % (len(in) + 1)
		if parts := filter(t, string(in[:i]), string(in[i:])); parts != whole {
			t.Fatalf("split at %d: %q, whole: %q", i, parts, whole)
		}
		if again := filter(t, whole); again != whole {
			t.Fatalf("output is not stable under the filter:\n in   %q\n out  %q\n out2 %q", in, whole, again)
		}
		for _, bad := range forbidden {
			if strings.Contains(whole, bad) {
				t.Fatalf("output %q of %q contains %q", whole, in, bad)
			}
		}
	})
}
