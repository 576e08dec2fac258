package pane

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// sgr matches the only escape sequences a pane's view may hold.
var sgr = regexp.MustCompile("\x1b\\[[0-9;:]*m")

// checkPaneView asserts a pane's view is exactly w×h cells of printable
// text and SGR colours: nothing that could reach beyond the pane.
func checkPaneView(t testing.TB, v string, w, h int) {
	t.Helper()
	plain := sgr.ReplaceAllString(v, "")
	for _, r := range plain {
		if r == '\n' {
			continue
		}
		if unsafeRune(r) {
			t.Fatalf("view holds %U outside an SGR sequence: %q", r, v)
		}
	}
	lines := strings.Split(plain, "\n")
	if len(lines) != h {
		t.Fatalf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got != w {
			t.Fatalf("line %d is %d cells, want %d: %q", i, got, w, l)
		}
	}
}

// hostile are known-bad outputs: huge counts, bad margins, queries, clipboard
// and title writes, unterminated strings, 8-bit controls, bidi overrides.
var hostile = []string{
	"\x1b[999999999b",
	"A\x1b[2147483647b",
	"\x1b[4294967296;4294967296H",
	"\x1b[1;999999r\x1b[999999S\x1b[999999T",
	"\x1b[50;2r\x1b[0;0r\x1b[-1;5r",
	"\x1b[?69h\x1b[1;99999s\x1b[99999@\x1b[99999P\x1b[99999X\x1b[99999L\x1b[99999M",
	"\x1b]52;c;" + strings.Repeat("QUJD", 1000) + "\x07",
	"\x1b]52;c;?\x07",
	"\x1b]0;evil title\x07\x1b]2;\x1b[31m\x07",
	"\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\",
	"\x1b[c\x1b[>c\x1b[5n\x1b[6n\x1bP$qm\x1b\\\x1b]10;?\x07\x1b]11;?\x07\x1b[18t\x1b[14t",
	"\x1b[8;1000;1000t\x1b[3;0;0t",
	"\x1bP" + strings.Repeat("x", 100000),
	"\x1b]" + strings.Repeat("9", 100000),
	"\x1b[" + strings.Repeat("1;", 10000) + "m",
	"\x9b31m\x9d0;x\x9c\x90q\x9c",
	"\u202eevil\u202c \u2066x\u2069 \u200b",
	"\xff\xfe\xc0\x80\xed\xa0\x80",
	"\x1b#8\x1b[?3h\x1b[?1049h\x1b[?1049l\x1b[?25l",
	"\x1b[38;2;999999;999999;999999mX\x1b[48;5;99999mY",
	"\x1b(0lqqk\x1b(B\x0e\x0f",
	"\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?1h",
	strings.Repeat("\x1b[1;1H\x1b[2J", 1000),
	strings.Repeat("é\u0301\u0302\u0303", 5000),
	strings.Repeat("🏳️‍🌈", 1000),
}

func TestPaneHostileOutput(t *testing.T) {
	for i, h := range hostile {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := newPane(40, 10)
			defer p.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.Write([]byte(h))
				// ST ends a string the hostile output left open.
				p.Write([]byte("\x1b\\\r\nstill alive"))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the pane is stuck on hostile output")
			}
			v := p.View()
			checkPaneView(t, v, 40, 10)
			if !strings.Contains(ansi.Strip(v), "still alive") {
				t.Errorf("output after the hostile sequence is lost:\n%s", ansi.Strip(v))
			}
		})
	}
}

func TestPaneQueriesAreAnsweredToTheAgentOnly(t *testing.T) {
	p := newPane(40, 10)
	// Far more queries than the input queue holds: writes must never block.
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Write(bytes.Repeat([]byte("\x1b[6n\x1b[c"), 20000))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("undrained query replies blocked the pane")
	}
	select {
	case b := <-p.Input():
		if !bytes.Contains(b, []byte("R")) && !bytes.Contains(b, []byte("c")) {
			t.Errorf("first reply %q is not a cursor or device report", b)
		}
	case <-time.After(time.Second):
		t.Fatal("no reply reached the agent's input")
	}
	if p.Dropped() == 0 {
		t.Error("expected replies beyond the queue to be dropped, none were")
	}
	checkPaneView(t, p.View(), 40, 10)
}

func TestPaneClampsCounts(t *testing.T) {
	var c clamper
	c.w, c.h = 80, 24
	cases := []struct{ in, want string }{
		{"\x1b[999999999b", "\x1b[80b"},
		{"\x1b[5b", "\x1b[5b"},
		{"\x1b[123456789A", "\x1b[24A"},
		{"\x1b[000007A", "\x1b[000007A"},
		{"\x1b[1;999r", "\x1b[1;24r"},
		{"\x1b[30;2r", ""},
		{"\x1b[r", "\x1b[1;24r"},
		{"\x1b[38;2;1;2;3m", "\x1b[38;2;1;2;3m"},
		{"\x1b[38:2::1:2:3m", "\x1b[38:2::1:2:3m"},
		{"\x1b[?1049h", "\x1b[?1049h"},
		{"\x1b[18t", ""},
		{"\x1b[H", "\x1b[H"},
		{"\x1b]52;c;QQ==\x07", "\x1b]52;c;QQ==\x07"}, // OSC passes to the emulator, which keeps it in the pane
		{"\x1b[" + strings.Repeat("1", 300) + "m", ""},
	}
	for _, tc := range cases {
		if got := string(c.filterInto(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("filter(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A sequence split across writes is clamped all the same.
	got := string(c.filterInto(nil, []byte("ab\x1b[99"))) + string(c.filterInto(nil, []byte("9999b")))
	if got != "ab\x1b[80b" {
		t.Errorf("split sequence: %q", got)
	}
}

func TestPaneKeysInBothCursorModes(t *testing.T) {
	p := newPane(20, 5)
	read := func() string {
		t.Helper()
		select {
		case b := <-p.Input():
			return string(b)
		case <-time.After(time.Second):
			t.Fatal("no input for the agent")
			return ""
		}
	}
	p.SendKey(tea.KeyPressMsg{Code: tea.KeyUp})
	if got := read(); got != "\x1b[A" {
		t.Errorf("up in normal mode = %q", got)
	}
	p.Write([]byte("\x1b[?1h")) // application cursor keys
	p.SendKey(tea.KeyPressMsg{Code: tea.KeyUp})
	if got := read(); got != "\x1bOA" {
		t.Errorf("up in application mode = %q", got)
	}
	p.SendKey(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	if got := read(); got != "\x03" {
		t.Errorf("ctrl+c = %q", got)
	}
	p.SendKey(tea.KeyPressMsg{Code: tea.KeyF1})
	if got := read(); got != "\x1bOP" {
		t.Errorf("F1 = %q", got)
	}
	p.SendKey(tea.KeyPressMsg{Code: tea.KeyF1, Mod: tea.ModShift})
	if got := read(); got != "\x1b[1;2P" {
		t.Errorf("shift+F1 = %q", got)
	}
	p.Write([]byte("\x1b[?2004h")) // bracketed paste
	p.Paste("hi\x1b[201~rm -rf ~\n")
	var got string
	for !strings.HasSuffix(got, "\x1b[201~") {
		got += read()
	}
	if got != "\x1b[200~hirm -rf ~\n\x1b[201~" {
		t.Errorf("bracketed paste = %q", got)
	}
	p.Write([]byte("\x1b[?1000h\x1b[?1006h")) // mouse reporting, SGR encoding
	p.SendMouse(tea.MouseClickMsg{X: 3, Y: 2, Button: tea.MouseLeft}, 3, 2)
	if got := read(); got != "\x1b[<0;4;3M" {
		t.Errorf("mouse click = %q", got)
	}
}

func TestPaneResize(t *testing.T) {
	p := newPane(80, 24)
	p.Write([]byte(strings.Repeat("0123456789", 20)))
	p.SetSize(30, 5)
	checkPaneView(t, p.View(), 30, 5)
	p.SetSize(0, 0)
	checkPaneView(t, p.View(), 1, 1)
}

// TestPaneShrinkKeepsCursorRows: a program that keeps its input box at the
// bottom of the screen (as codex does: history above, the box and the cursor
// in the last rows) still shows the box right after the window shrinks, the
// way xterm and tmux shrink: rows below the cursor go first, then rows at the
// top into the scrollback. A screen whose cursor stays in view keeps its top.
func TestPaneShrinkKeepsCursorRows(t *testing.T) {
	rows := func(p Model) []string {
		return strings.Split(ansi.Strip(p.View()), "\n")
	}
	// History, then a three-row box at rows 22-24 with the cursor in it.
	p := newPane(40, 24)
	defer p.Close()
	var draw strings.Builder
	for i := 1; i <= 21; i++ {
		fmt.Fprintf(&draw, "history %d\r\n", i)
	}
	draw.WriteString("+------ box ------+\r\n| > type here     |\r\n+-----------------+\x1b[23;5H")
	p.Write([]byte(draw.String()))
	p.SetSize(40, 10)
	got := rows(p)
	want := []string{"history 15", "history 21", "+------ box ------+", "| > type here     |", "+-----------------+"}
	for i, w := range []int{0, 6, 7, 8, 9} {
		if strings.TrimRight(got[w], " ") != want[i] {
			t.Errorf("after the shrink, row %d = %q, want %q\n%s", w, got[w], want[i], strings.Join(got, "\n"))
		}
	}
	// The program's next write lands in the box, where its cursor was.
	p.Write([]byte("X"))
	if got := rows(p); !strings.HasPrefix(got[8], "| > X") {
		t.Errorf("cursor moved off its line: row 8 = %q", got[8])
	}
	// A cursor near the top: the top rows stay, the empty bottom goes.
	q := newPane(40, 24)
	defer q.Close()
	q.Write([]byte("prompt $ \r\nsecond line"))
	q.SetSize(40, 10)
	if got := rows(q); !strings.HasPrefix(got[0], "prompt $") || !strings.HasPrefix(got[1], "second line") {
		t.Errorf("short screen lost its top: %q", got[:2])
	}
}

func FuzzPane(f *testing.F) {
	for _, h := range hostile {
		if len(h) < 4096 {
			f.Add([]byte(h), uint8(40), uint8(10))
		}
	}
	f.Add([]byte("plain text\r\n\x1b[31mred\x1b[m"), uint8(80), uint8(24))
	for _, intro := range c1Forms {
		f.Add([]byte("A"+intro+"2000000000b"+intro+"2000000000S"+intro+"?2000000000h"), uint8(80), uint8(24))
		f.Add([]byte("\x1b]0;✋ waiting"+intro+"9M\x9d2;✳ t\xc2\x9c"), uint8(40), uint8(10))
	}
	f.Fuzz(func(t *testing.T, data []byte, w, h uint8) {
		width, height := int(w%200)+1, int(h%60)+1
		p := newPane(width, height)
		defer p.Close()
		var v string
		cpu := threadCPU(t, func() {
			half := len(data) / 2
			p.Write(data[:half])
			p.SetSize(width/2+1, height)
			p.Write(data[half:])
			// A flood of lines made of the input, which the pane may coalesce.
			line := append(append([]byte(nil), data[:min(len(data), 64)]...), '\r', '\n')
			p.Write(bytes.Repeat(line, height+3))
			p.SendKey(tea.KeyPressMsg{Code: tea.KeyUp})
			v = p.View()
		})
		if cpu > 5*time.Second*raceSlowdown {
			t.Fatalf("%d bytes took %s of CPU", len(data), cpu)
		}
		checkPaneView(t, v, width/2+1, height)
	})
}

func TestPaneRecoversFromEmulatorPanic(t *testing.T) {
	p := newPane(40, 5)
	// An emulator bug, simulated: a handler that panics on OSC 7777.
	p.emu.RegisterOscHandler(7777, func([]byte) bool { panic("emulator bug") })
	p.Write([]byte("before\r\n\x1b]7777;x\x07"))
	if p.Resets() != 1 {
		t.Fatalf("resets = %d, want 1", p.Resets())
	}
	p.Write([]byte("after"))
	v := ansi.Strip(p.View())
	checkPaneView(t, p.View(), 40, 5)
	if !strings.Contains(v, "terminal was reset") || !strings.Contains(v, "after") {
		t.Errorf("after a reset the pane does not say so or stopped working:\n%s", v)
	}
	// Keys still reach the agent through the new emulator.
	for len(p.Input()) > 0 {
		<-p.Input()
	}
	p.SendKey(tea.KeyPressMsg{Code: 'x', Text: "x"})
	select {
	case b := <-p.Input():
		if string(b) != "x" {
			t.Errorf("key after reset = %q", b)
		}
	case <-time.After(time.Second):
		t.Fatal("keys are lost after a reset")
	}
}

func TestPaneSplitGraphemeKeepsTheGrid(t *testing.T) {
	p := newPane(20, 3)
	defer p.Close()
	flag := "🏳️‍🌈"
	cut := strings.Index(flag, "\u200d")
	for i := 0; i < 5; i++ {
		p.Write([]byte(flag[:cut]))
		p.Write([]byte(flag[cut:]))
	}
	p.Write([]byte("|end"))
	checkPaneView(t, p.View(), 20, 3)
	// One long write is cut into chunks only between characters.
	long := strings.Repeat(flag, 3*paneChunk/len(flag)+1)
	q := newPane(30, 3)
	defer q.Close()
	q.Write([]byte(long))
	checkPaneView(t, q.View(), 30, 3)
}

// sameScreen fails unless two panes hold the same cells (text, width,
// colours, attributes, links), the same cursor, and sent the agent the same
// replies to its queries; then it writes a probe that shows the pen and
// the last character printed (REP repeats it, the erase fills with the
// pen's background) and compares again.
func sameScreen(t testing.TB, fast, slow Model, what string) {
	t.Helper()
	compare := func(stage string) {
		t.Helper()
		w, h := slow.Size()
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				fc, sc := fast.emu.CellAt(x, y), slow.emu.CellAt(x, y)
				if (fc == nil) != (sc == nil) || fc != nil && !fc.Equal(sc) {
					t.Fatalf("%s, %s: cell (%d,%d) is %+v, drawing every line gives %+v\ncoalesced:\n%s\nraw:\n%s",
						what, stage, x, y, fc, sc, ansi.Strip(fast.View()), ansi.Strip(slow.View()))
				}
			}
		}
		if fp, sp := fast.emu.CursorPosition(), slow.emu.CursorPosition(); fp != sp {
			t.Fatalf("%s, %s: cursor at %v, drawing every line gives %v", what, stage, fp, sp)
		}
	}
	compare("after the writes")
	// The device attributes query comes last, so its reply ends the rest.
	probe := []byte("\x1b[3bZ\x1b[K\r\nq\x1b[6n\x1b[c")
	fast.Write(probe)
	slow.Write(probe)
	compare("after a probe of the pen and the last character")
	if fr, sr := replies(t, fast), replies(t, slow); fr != sr {
		t.Fatalf("%s: replies to queries %q, drawing every line gives %q", what, fr, sr)
	}
}

// replies drains what a pane sent the agent up to its reply to a device
// attributes query.
func replies(t testing.TB, p Model) string {
	t.Helper()
	var b strings.Builder
	for !strings.HasSuffix(b.String(), "c") {
		select {
		case r := <-p.Input():
			b.Write(r)
		case <-time.After(5 * time.Second):
			t.Fatalf("no reply to the device attributes query, only %q", b.String())
		}
	}
	return b.String()
}

// randomOutput is random agent output for the coalescing tests: floods of
// coloured lines (wide characters, combining marks, CR within lines,
// background colours), mixed with control sequences the coalescing follows
// (cursor moves, erases, status queries, REP) and ones it does not
// (margins, the alternate screen, strings, tabs, character sets).
func randomOutput(rng *rand.Rand, w, h int) []byte {
	followed := []string{"\x1b[H", "\x1b[2;3H", "\x1b[%d;1H", "\x1b[%dH", "\x1b[K", "\x1b[2K", "\x1b[1K", "\x1b[J", "\x1b[2J",
		"\x1b[3A", "\x1b[A", "\x1b[2B", "\x1b[0B", "\x1b[000003;0002H", "\x1b[;4H", "\x1b[0A", "\x1b[%dd", "\x1b[5G", "\x1b[G", "\x1b[3C", "\x1b[2D", "\x1b[4X", "\x1b[6n", "\x1b[5n", "\x1b[2b"}
	other := []string{"\x1b]0;title\x07", "\x1b]0;unterminated", "\x1b\\", "\x1b[2;4r", "\x1b[r", "\t", "\x1b(0", "\x1b(B",
		"\x1bM", "\x1b[?1049h", "\x1b[?1049l", "\x1b[2S", "\x1b[?25l", "\x1b7", "\x1b8", "\x1b[3L", "\x1b[2M", "\x1b[?6h", "\x1b[?6l", "\x1b[20h", "\x1b[20l"}
	word := func() string {
		switch rng.IntN(24) {
		case 0:
			return fmt.Sprintf("\x1b[%dm", 30+rng.IntN(8))
		case 1:
			return fmt.Sprintf("\x1b[38;5;%d;48;2;%d;%d;%dm", rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(256))
		case 2:
			return "\x1b[m"
		case 3:
			return "\x1b[0;1;4m"
		case 4:
			return fmt.Sprintf("\x1b[4%dm", rng.IntN(8))
		case 5:
			return "héllo"
		case 6:
			return "\r"
		case 7:
			return "世界"
		case 8:
			return "e\u0301"
		case 9:
			return "\u0301"
		case 10, 11:
			c := followed[rng.IntN(len(followed))]
			if strings.Contains(c, "%d") {
				c = fmt.Sprintf(c, 1+rng.IntN(h+2))
			}
			return c
		case 12:
			return other[rng.IntN(len(other))]
		case 13:
			return strings.Repeat("x", w+rng.IntN(w)) // wraps
		}
		return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(9))
	}
	var b strings.Builder
	for stretch := rng.IntN(4) + 1; stretch > 0; stretch-- {
		plain := rng.IntN(3) > 0 // a stretch without the sequences not followed, or of anything
		for l := rng.IntN(3 * h); l > 0; l-- {
			for k := rng.IntN(4); k > 0; k-- {
				x := word()
				for plain && slices.Contains(other, x) {
					x = word()
				}
				b.WriteString(x)
			}
			if rng.IntN(6) > 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		b.WriteString(word())
	}
	return []byte(b.String())
}

// TestPaneCoalescingKeepsTheScreen feeds random output to two panes, one
// coalescing it and one drawing every line, in writes cut at random bytes
// (within characters and control sequences too), and requires the same
// cells, cursor, pen, last character and query replies from both.
func TestPaneCoalescingKeepsTheScreen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	trials := 400
	if raceEnabled {
		trials = 80
	}
	coalesced := 0
	for trial := 0; trial < trials; trial++ {
		w, h := 5+rng.IntN(30), 1+rng.IntN(14)
		fast, slow := newPane(w, h), newPane(w, h)
		slow.coalesce = false
		out := randomOutput(rng, w, h)
		var writes [][]byte
		for len(out) > 0 {
			n := len(out)
			if rng.IntN(3) > 0 {
				n = min(n, 1+rng.IntN(len(out)))
			}
			writes = append(writes, out[:n])
			out = out[n:]
		}
		for _, wr := range writes {
			if _, ok := fast.coalesced(wr); ok {
				coalesced++
			}
			fast.Write(wr)
			slow.Write(wr)
		}
		sameScreen(t, fast, slow, fmt.Sprintf("trial %d (%dx%d), writes %q", trial, w, h, writes))
		fast.Close()
		slow.Close()
	}
	if coalesced < trials/4 {
		t.Fatalf("only %d writes were coalesced: the test does not exercise the coalescing", coalesced)
	}
	t.Logf("%d writes coalesced", coalesced)
}

// TestPaneCoalescingDrawsRunsWithoutScrolling checks the rewrite of a flood
// itself: a screenful or more of lines is drawn in place on every row,
// fewer lines with one scroll, and the screen is the same as drawing every
// line, on a 160×48 pane as in the benchmarks.
func TestPaneCoalescingDrawsRunsWithoutScrolling(t *testing.T) {
	line := func(i int) string {
		return fmt.Sprintf("\x1b[38;5;%dm%6d\x1b[0m step \x1b[48;2;%d;40;60m ok \x1b[m\r\n", i%256, i, i%256)
	}
	lines := func(from, n int) []byte {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			b.WriteString(line(i))
		}
		return []byte(b.String())
	}
	// wrapping is n pairs of a short line and one that wraps.
	wrapping := func(n int) []byte {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(line(i))
			b.WriteString(strings.Repeat("x", 200) + "\r\n")
		}
		return []byte(b.String())
	}
	// drawn counts the lines a rewritten write draws: line feeds, and rows
	// put in place.
	drawn := func(c []byte) int {
		return bytes.Count(c, []byte("\n")) + bytes.Count(c, []byte("H\x1b[2K"))
	}
	scrolls := regexp.MustCompile("\x1b\\[[0-9]+S")
	cases := []struct {
		name   string
		writes [][]byte
		// the most lines the last write may draw, and whether it scrolls
		drawn   int
		scrolls bool
	}{
		{"a screenful from the top", [][]byte{lines(0, 200)}, 47 + 48, false},
		{"a screenful at the bottom", [][]byte{lines(0, 60), lines(60, 200)}, 48, false},
		{"a few lines at the bottom", [][]byte{lines(0, 60), lines(60, 10)}, 11, true},
		{"after a cursor move", [][]byte{lines(0, 60), append([]byte("\x1b[6n\x1b[H\x1b[2K\x1b[24;1H"), lines(60, 100)...)}, 1 + 24 + 48, false},
		{"screenfuls between cursor moves and queries", [][]byte{lines(0, 60), bytes.Join([][]byte{lines(60, 100), lines(160, 100), lines(260, 100)}, []byte("\x1b[6n\x1b[H\x1b[2K\x1b[5n\x1b[24;1H\x1b[3A\x1b[6n\x1b[A\x1b[0B\x1b[B\x1b[3C\x1b[D\x1b[0A\x1b[6n\x1b[7G\x1b[5d\x1b[2a\x1b[6n\x1b[;3H\x1b[e\x1b[6n\x1b[9;9f\x1b[K\x1b[J\x1b[X\x1b[6n\x1b[000007;00003H\x1b[6n"))}, 2 + 48, false},
		{"after a cut control sequence", [][]byte{append(lines(0, 60), "\x1b[38;5"...), append([]byte(";9m"), lines(60, 100)...)}, 48, false},
		{"after a cut character", [][]byte{append(lines(0, 60), "\xc2"...), append([]byte("\xb7\r\n"), lines(60, 100)...)}, 1 + 48, false},
		// No two short lines follow each other, so there is no run: the short
		// lines that scroll out of sight are skipped one by one (skipLines),
		// the wrapping ones drawn.
		{"short lines between wrapping ones", [][]byte{lines(0, 60), wrapping(100)}, 100 + 48 + 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow := newPane(160, 48), newPane(160, 48)
			defer fast.Close()
			defer slow.Close()
			slow.coalesce = false
			for i, wr := range tc.writes {
				if i == len(tc.writes)-1 {
					c, ok := fast.coalesced(wr)
					if !ok {
						t.Fatal("the flood was not coalesced")
					}
					if got := scrolls.Match(c); got != tc.scrolls {
						t.Errorf("scrolls = %v, want %v: %q", got, tc.scrolls, c)
					}
					if got := drawn(c); got > tc.drawn {
						t.Errorf("%d lines drawn, want at most %d: %q", got, tc.drawn, c)
					}
				}
				fast.Write(wr)
				slow.Write(wr)
			}
			sameScreen(t, fast, slow, tc.name)
		})
	}
}

// FuzzPaneCoalescing checks on arbitrary output that skipping unseen lines
// never changes what the pane shows.
func FuzzPaneCoalescing(f *testing.F) {
	f.Add([]byte("hello \x1b[31mred\x1b[m"), []byte("\x1b[2;3H"), uint8(5))
	f.Add([]byte("世界e\u0301"), []byte("\x1b]0;t"), uint8(3))
	f.Fuzz(func(t *testing.T, line, extra []byte, h uint8) {
		height := int(h%10) + 2
		fast, slow := newPane(20, height), newPane(20, height)
		defer fast.Close()
		defer slow.Close()
		slow.coalesce = false
		l := append(append([]byte(nil), line[:min(len(line), 40)]...), '\r', '\n')
		flood := append(bytes.Repeat(l, height+2), extra...)
		flood = append(flood, bytes.Repeat(l, 2*height+3)...)
		for _, w := range [][]byte{extra, flood, flood} {
			fast.Write(w)
			slow.Write(w)
		}
		fx, fy, _ := fast.Cursor()
		sx, sy, _ := slow.Cursor()
		if fv, sv := fast.View(), slow.View(); fv != sv || fx != sx || fy != sy {
			t.Fatalf("screens differ:\n%s\n---\n%s", ansi.Strip(fv), ansi.Strip(sv))
		}
	})
}

// TestCompactOutputKeepsTheScreen checks that output compacted while it
// waits for the pane leaves the same screen as the output itself, for
// random output and any pane no taller than the rows it was compacted for.
func TestCompactOutputKeepsTheScreen(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	trials := 300
	if raceEnabled {
		trials = 60
	}
	shrunk := 0
	for trial := 0; trial < trials; trial++ {
		w, h := 5+rng.IntN(30), 1+rng.IntN(10)
		rows := h + rng.IntN(3)
		fast, slow := newPane(w, h), newPane(w, h)
		slow.coalesce = false
		// Output after some that left the clamp inside a sequence.
		before := randomOutput(rng, w, h)
		fast.Write(before)
		slow.Write(before)
		out := randomOutput(rng, w, h)
		c := compactOutput(nil, out, fast.clamp.clone(), rows)
		if len(c) < len(out) {
			shrunk++
		}
		fast.Write(c)
		slow.Write(out)
		sameScreen(t, fast, slow, fmt.Sprintf("trial %d (%dx%d, compacted for %d rows): %q then %q, compacted %q", trial, w, h, rows, before, out, c))
		fast.Close()
		slow.Close()
	}
	if shrunk < trials/10 {
		t.Fatalf("only %d outputs were compacted: the test does not exercise the compacting", shrunk)
	}
	t.Logf("%d outputs compacted", shrunk)
}

// newPane is a pane of the given size.
func newPane(width, height int) Model { return New(WithSize(width, height)) }
