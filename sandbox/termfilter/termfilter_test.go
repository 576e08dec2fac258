package termfilter

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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

// queries are sequences that make some terminal answer, one case each:
// every one must be dropped whole, with the text around it kept.
var queries = []struct{ name, seq string }{
	{"ENQ answerback", "\x05"},
	{"DA1", esc + "[c"},
	{"DA1 with 0", esc + "[0c"},
	{"DA2", esc + "[>c"},
	{"DA2 with 0", esc + "[>0c"},
	{"DA3", esc + "[=c"},
	{"DECID", esc + "Z"},
	{"DECID 8-bit", "\x9a"},
	{"DSR status", esc + "[5n"},
	{"CPR", esc + "[6n"},
	{"DECXCPR", esc + "[?6n"},
	{"DSR printer", esc + "[?15n"},
	{"DSR UDK", esc + "[?25n"},
	{"DSR keyboard", esc + "[?26n"},
	{"DSR locator", esc + "[?55n"},
	{"DSR colour scheme", esc + "[?996n"},
	{"DECREQTPARM", esc + "[x"},
	{"DECREQTPARM 1", esc + "[1x"},
	{"DECRQSS", esc + "P$qm" + st},
	{"DECRQSS UTF-8 C1", "\xc2\x90$q\"p\xc2\x9c"},
	{"XTGETTCAP", esc + "P+q544e" + st},
	{"DECRQM ANSI", esc + "[4$p"},
	{"DECRQM DEC", esc + "[?2026$p"},
	{"DECRQPSR", esc + "[1$w"},
	{"DECRQTSR", esc + "[1$u"},
	{"DECRQUPSS", esc + "[&u"},
	{"DECRQDE", esc + "[\"v"},
	{"DECRQKT", esc + "[2;1,w"},
	{"DECRQPKFM", esc + "[+x"},
	{"DECSR", esc + "[1+p"},
	{"DECRQCRA", esc + "[1;1;1;1;10;10*y"},
	{"DECRQLP", esc + "[1'|"},
	{"DECELR locator reports", esc + "[1;1'z"},
	{"XTVERSION", esc + "[>q"},
	{"XTVERSION 0", esc + "[>0q"},
	{"XTREPORTSGR", esc + "[1;1;2;2#|"},
	{"XTREPORTCOLORS", esc + "[#R"},
	{"XTSMGRAPHICS", esc + "[?1;1S"},
	{"XTQMODKEYS", esc + "[?4m"},
	{"XTWINOPS state", esc + "[11t"},
	{"XTWINOPS position", esc + "[13t"},
	{"XTWINOPS text area position", esc + "[13;2t"},
	{"XTWINOPS size px", esc + "[14t"},
	{"XTWINOPS window size px", esc + "[14;2t"},
	{"XTWINOPS screen size px", esc + "[15t"},
	{"XTWINOPS cell size", esc + "[16t"},
	{"XTWINOPS size chars", esc + "[18t"},
	{"XTWINOPS screen chars", esc + "[19t"},
	{"XTWINOPS icon label", esc + "[20t"},
	{"XTWINOPS title", esc + "[21t"},
	{"OSC 4 colour query", esc + "]4;1;?" + bel},
	{"OSC 4 two colours", esc + "]4;1;?;2;?" + st},
	{"OSC 5 special colour", esc + "]5;0;?" + bel},
	{"OSC 10 foreground", esc + "]10;?" + bel},
	{"OSC 11 background", esc + "]11;?" + st},
	{"OSC 12 cursor", esc + "]12;?" + bel},
	{"OSC 13 pointer fg", esc + "]13;?" + bel},
	{"OSC 17 highlight", esc + "]17;?" + bel},
	{"OSC 19 highlight fg", esc + "]19;?" + bel},
	{"OSC 10 and 11 at once", esc + "]10;?;?" + bel},
	{"OSC 52 read", esc + "]52;c;?" + bel},
	{"OSC 50 font query", esc + "]50;?" + bel},
	{"OSC 60 allowed ops", esc + "]60" + bel},
	{"OSC 61 disallowed ops", esc + "]61" + bel},
	{"OSC 21 kitty colour query", esc + "]21;foreground=?" + st},
	{"OSC 21 query among sets", esc + "]21;background=red;cursor=?" + st},
	{"OSC 22 pointer shape query", esc + "]22;?__current__" + st},
	{"OSC 22 shapes supported", esc + "]22;?pointer,text" + bel},
	{"OSC 99 capabilities", esc + "]99;i=q:p=?;" + st},
	{"OSC 99 alive", esc + "]99;i=q:p=alive;" + st},
	{"OSC 99 report on click", esc + "]99;i=1:a=report;Done" + st},
	{"OSC 99 focus and report", esc + "]99;i=1:a=focus,report;Done" + st},
	{"OSC 99 report on close", esc + "]99;i=1:c=1;Done" + st},
	{"OSC 1337 iTerm2 report", esc + "]1337;ReportCellSize" + bel},
	{"kitty keyboard query", esc + "[?u"},
	{"kitty graphics query", esc + "_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA" + st},
	{"DECUDK", esc + "P0;1|17/6563686f" + st},
}

// TestQueriesDropped: each query alone, and between text, leaves only the
// text; split anywhere it is dropped too (TestSplitWrites runs cases).
func TestQueriesDropped(t *testing.T) {
	for _, q := range queries {
		t.Run(q.name, func(t *testing.T) {
			if got := filter(t, q.seq); got != "" {
				t.Errorf("filter(%q) = %q, want nothing", q.seq, got)
			}
			if got := filter(t, "a"+q.seq+"b"); got != "ab" {
				t.Errorf("filter(%q) = %q, want \"ab\"", "a"+q.seq+"b", got)
			}
			for i := 1; i < len(q.seq); i++ {
				if got := filter(t, "a"+q.seq[:i], q.seq[i:]+"b"); got != "ab" {
					t.Errorf("split at %d: %q, want \"ab\"", i, got)
				}
			}
		})
	}
}

// kept are sequences like the queries above that only draw or set: they
// pass as they are (the control for TestQueriesDropped).
var kept = []struct{ name, seq string }{
	{"OSC 4 set colour", esc + "]4;1;rgb:ff/00/00" + bel},
	{"OSC 104 reset colours", esc + "]104" + bel},
	{"OSC 11 set background", esc + "]11;#101010" + st},
	{"OSC 8 link with a query string", esc + "]8;;https://example.com/search?q=a&x=?" + st + "link" + esc + "]8;;" + st},
	{"title with a question", esc + "]0;Proceed? (y/n)" + bel},
	{"kitty keyboard push and pop", esc + "[>1u" + esc + "[<u"},
	{"XTMODKEYS set", esc + "[>4;1m"},
	{"DECSCUSR", esc + "[5 q"},
	{"sixel", esc + "Pq#0;2;0;0;0#0~~" + st},
}

func TestKeptSequences(t *testing.T) {
	for _, k := range kept {
		t.Run(k.name, func(t *testing.T) {
			if got := filter(t, k.seq); got != k.seq {
				t.Errorf("filter(%q) = %q, want it unchanged", k.seq, got)
			}
		})
	}
}

// outliving are sequences that only set, and were let through before the
// filter became an allow-list: what they set outlives the run (kitty's
// colours, the pointer shape) or reaches beyond the screen (desktop
// notifications, the class of OSC 777), and nothing undoes it. Dropped now.
var outliving = []struct{ name, seq string }{
	{"OSC 21 set kitty colours", esc + "]21;background=#000000;cursor=" + st},
	{"OSC 22 set pointer", esc + "]22;pointer" + st},
	{"OSC 99 notification", esc + "]99;i=1:d=0;Build done" + st},
	{"OSC 99 no report", esc + "]99;i=1:a=-report,focus:c=0;Is it done?" + st},
	{"OSC 9 notification", esc + "]9;Need input?" + bel},
	{"OSC 777 notification", esc + "]777;notify;Build;done" + st},
	{"OSC 7 working directory", esc + "]7;file://host/home/u/project" + st},
	{"OSC 51 vim terminal API", esc + "]51;[\"call\",\"Tapi_x\",[]]" + bel},
	{"OSC 633 VS Code shell integration", esc + "]633;E;rm -rf ~" + bel},
	{"OSC 8 file link", esc + "]8;;file:///etc/passwd" + st},
	{"OSC 8 ssh link", esc + "]8;;ssh://evil.example.invalid/" + st},
	{"OSC 1 icon title with a control", esc + "]1;a\rb" + bel},
	{"SM keyboard action (KAM)", esc + "[2h"},
	{"SM send/receive (SRM)", esc + "[12l"},
	{"SM newline (LNM)", esc + "[20h"},
	{"SM insert with LNM", esc + "[4;20h"},
	{"DECCOLM 132 columns", esc + "[?3h"},
	{"highlight mouse tracking", esc + "[?1001h"},
	{"select UTF-8 off", esc + "%@"},
	{"locking shift G2", esc + "n"},
	{"single shift 8-bit", "\x8e"},
}

func TestOutlivingSequencesDropped(t *testing.T) {
	for _, o := range outliving {
		if got := filter(t, "a"+o.seq+"b"); got != "ab" {
			t.Errorf("%s: filter(%q) = %q", o.name, o.seq, got)
		}
	}
}

// TestENQInsideSequences: ENQ acts wherever it appears in some terminals,
// so it is taken out of sequences too, which keep working.
func TestENQInsideSequences(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{esc + "[3\x051m", esc + "[31m"},
		{esc + "\x05[1m", esc + "[1m"},
		{esc + "(\x05B", esc + "(B"},
		{esc + "]0;ti\x05tle" + bel, esc + "]0;title" + bel},
		{esc + "Pq#0\x05~~" + st, esc + "Pq#0~~" + st},
		{"\xc2\x05", "\xc2"},
	} {
		if got := filter(t, c.in); got != c.want {
			t.Errorf("filter(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestOrdinaryOutputIdentical: real programs' output, captured in
// testdata/ordinary, passes byte for byte.
func TestOrdinaryOutputIdentical(t *testing.T) {
	files, err := filepath.Glob("testdata/ordinary/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			in, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if got := filter(t, string(in)); got != string(in) {
				t.Errorf("output differs from input at byte %d of %d", firstDiff(got, string(in)), len(in))
			}
		})
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
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
	esc + "[14t", esc + "[18t", esc + "[21t", esc + "[>q", esc + "Z", esc + "_", "\xc2\x9d52;", "\x05", esc + "[?u",
	esc + "]7;", esc + "]51;", esc + "]633;", esc + "]777;", esc + "]8;;file:", esc + "]8;;ssh:",
	esc + "[2h", esc + "[12h", esc + "[12l", esc + "[20h",
}

// c1Seeds are inputs in 8-bit and UTF-8 encoded C1 forms, raw ST inside
// strings among them, for the fuzzer to start from.
var c1Seeds = []string{
	"\x9b6n", "\x9bc", "\x9b?1049h\x9b31m", "\x9d52;c;eA==\x9c", "\x9d0;t\x9c\x9d52;c;eA==\x07ok", "\x90$qm\x9c",
	"\x90q#0~~\x9c\x9d52;c;eA==\x07", "\x98sos\x9c", "\x9epm\x9c", "\x9fGa=q\x9c", "\x84\x85\x88\x8d\x8e\x9a",
	"\xc2\x9d8;;file:///etc/passwd\xc2\x9c", "\xc2\x9b12l\xc2\x9b4h", esc + "]0;✜\x9c" + esc + "[6n", esc + "Pq#0\xc2\x9d52;x" + bel,
	// Huge counts in 8-bit and encoded forms, which the pane clamps.
	"A\x9b2000000000b", "A\xc2\x9b2000000000b", "\x9b2000000000M\x9b2000000000S", "\x9b?2000000000h",
	"\x9d0;✋ waiting\x07", "\xc2\x9d2;✳ title\xc2\x9c", "\xe2\x9b\x9b9b",
}

// FuzzFilter checks, for any input and any split point, that the filter does
// not panic, that its output does not depend on how the input is split, that
// filtering its output again changes nothing (it passed nothing it would
// drop), that no forbidden sequence appears, and that Restore undoes all it
// reports.
func FuzzFilter(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c.in), uint16(len(c.in)/2))
	}
	for _, q := range queries {
		f.Add([]byte("a"+q.seq+"b"), uint16(len(q.seq)/2))
	}
	for _, c := range restoreCases {
		f.Add([]byte(c.in), uint16(len(c.in)/2))
	}
	for _, o := range outliving {
		f.Add([]byte("a"+o.seq+"b"), uint16(len(o.seq)/2))
	}
	for _, c := range c1Seeds {
		f.Add([]byte(c), uint16(len(c)/2))
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
		// What Restore sends passes the filter as it is and leaves
		// nothing more to restore.
		var sink bytes.Buffer
		g := New(&sink)
		g.Write(in)
		g.Flush()
		if r := g.Restore(); len(r) > 0 {
			g.Write(r)
			g.Flush()
			if !bytes.HasSuffix(sink.Bytes(), r) {
				t.Fatalf("the restore %q of %q did not pass the filter", r, in)
			}
			if again := g.Restore(); len(again) > 0 {
				t.Fatalf("after the restore %q of %q, Restore = %q", r, in, again)
			}
		}
	})
}

// TestColourFastPath: colour sequences written whole (the fast path) come
// out as byte by byte (the state machine), next to sequences that only look
// like them: the XTQMODKEYS query (dropped), XTMODKEYS (a mode to restore), a
// colour cut by the end of a write, one over the length limit.
func TestColourFastPath(t *testing.T) {
	for _, in := range []string{
		esc + "[1;31mred" + esc + "[m plain " + esc + "[38:2::10:20:30mrgb" + esc + "[0m\r\n",
		"a" + esc + "[?4m" + "b" + esc + "[>4;1m" + "c" + esc + "[1;" + "31mx",
		esc + "[" + strings.Repeat("1;", 200) + "m" + "long" + esc + "[m",
		esc + "[31" + esc + "[6n" + "after",
		"é" + esc + "[32m✓" + esc + "[0m",
	} {
		whole := filter(t, in)
		var bytewise []string
		for i := range len(in) {
			bytewise = append(bytewise, in[i:i+1])
		}
		if got := filter(t, bytewise...); got != whole {
			t.Errorf("%q: byte by byte %q, whole %q", in, got, whole)
		}
		var sink bytes.Buffer
		g, h := New(&sink), New(&sink)
		g.Write([]byte(in))
		for i := range len(in) {
			h.Write([]byte(in[i : i+1]))
		}
		if string(g.Restore()) != string(h.Restore()) {
			t.Errorf("%q: restore %q whole, %q byte by byte", in, g.Restore(), h.Restore())
		}
	}
	if got := filter(t, "a"+esc+"[?4mb"); got != "ab" {
		t.Errorf("XTQMODKEYS query passed: %q", got)
	}
}

// sliceWriter records the slices it is given.
type sliceWriter struct{ got [][]byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.got = append(w.got, p)
	return len(p), nil
}

// TestColouredOutputPassesWithoutCopy: coloured text that passes whole is
// handed on as the very buffer written (the relay's hot path: one write to
// the terminal, no copy, no pass through the state machine).
func TestColouredOutputPassesWithoutCopy(t *testing.T) {
	in := []byte(strings.Repeat(esc+"[32m✓"+esc+"[0m compiled "+esc+"[1;38;5;244mpackage"+esc+"[m naïve\r\n", 100))
	w := &sliceWriter{}
	f := New(w)
	if n, err := f.Write(in); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if len(w.got) != 1 || len(w.got[0]) != len(in) || &w.got[0][0] != &in[0] {
		t.Errorf("coloured text was copied or split: %d writes", len(w.got))
	}
}

// passRunByByte is the fast path's run as it was before it took words: a byte, a character or an
// SGR sequence at a time.
func passRunByByte(p []byte, i int) int {
	for i < len(p) {
		if x := p[i]; x >= 0x20 && x < 0x80 || x < 0x20 && x != 0x1b && x != enq && x != 0x0e && x != 0x0f {
			i++
		} else if n := wholeChar(p[i:]); n > 0 {
			i += n
		} else if n := sgrLen(p[i:]); n > 0 {
			i += n
		} else {
			break
		}
	}
	return i
}

// FuzzPassRun checks that taking printable ASCII eight bytes at a time ends the run where taking
// it a byte at a time does, from any start.
func FuzzPassRun(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c.in), uint8(0))
	}
	f.Add([]byte("plain text, longer than a word\x1b[1mbold\x1b[m\x05\x7f\x80\xc2\x9b1m\x00tail"), uint8(3))
	f.Add([]byte("0123456\x1f89abcdef\x9b"), uint8(1))
	f.Fuzz(func(t *testing.T, p []byte, start uint8) {
		i := int(start) % (len(p) + 1)
		if got, want := passRun(p, i), passRunByByte(p, i); got != want {
			t.Fatalf("passRun(%q, %d) = %d, a byte at a time %d", p, i, got, want)
		}
	})
}

// Every byte value at every place of a word, among printable ASCII: the word test finds the
// first byte that is not printable.
func TestPassRunEveryByte(t *testing.T) {
	for x := range 256 {
		for at := range 17 {
			p := []byte(strings.Repeat("a", 24))
			p[at] = byte(x)
			for start := range 3 {
				if got, want := passRun(p, start), passRunByByte(p, start); got != want {
					t.Fatalf("byte %#02x at %d, from %d: run ends at %d, a byte at a time %d", x, at, start, got, want)
				}
			}
		}
	}
}
