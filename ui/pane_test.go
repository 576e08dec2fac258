package ui

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
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
			p := NewPane(40, 10)
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
	p := NewPane(40, 10)
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
		{"\x1b[999999999b", "\x1b[1920b"},
		{"\x1b[5b", "\x1b[5b"},
		{"\x1b[123456789A", "\x1b[9999A"},
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
		if got := string(c.filter([]byte(tc.in))); got != tc.want {
			t.Errorf("filter(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A sequence split across writes is clamped all the same.
	got := string(c.filter([]byte("ab\x1b[99"))) + string(c.filter([]byte("9999b")))
	if got != "ab\x1b[1920b" {
		t.Errorf("split sequence: %q", got)
	}
}

func TestPaneKeysInBothCursorModes(t *testing.T) {
	p := NewPane(20, 5)
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
	p := NewPane(80, 24)
	p.Write([]byte(strings.Repeat("0123456789", 20)))
	p.Resize(30, 5)
	checkPaneView(t, p.View(), 30, 5)
	p.Resize(0, 0)
	checkPaneView(t, p.View(), 1, 1)
}

func FuzzPane(f *testing.F) {
	for _, h := range hostile {
		if len(h) < 4096 {
			f.Add([]byte(h), uint8(40), uint8(10))
		}
	}
	f.Add([]byte("plain text\r\n\x1b[31mred\x1b[m"), uint8(80), uint8(24))
	f.Fuzz(func(t *testing.T, data []byte, w, h uint8) {
		width, height := int(w%200)+1, int(h%60)+1
		p := NewPane(width, height)
		defer p.Close()
		start := time.Now()
		half := len(data) / 2
		p.Write(data[:half])
		p.Resize(width/2+1, height)
		p.Write(data[half:])
		// A flood of lines made of the input, which the pane may coalesce.
		line := append(append([]byte(nil), data[:min(len(data), 64)]...), '\r', '\n')
		p.Write(bytes.Repeat(line, height+3))
		p.SendKey(tea.KeyPressMsg{Code: tea.KeyUp})
		v := p.View()
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%d bytes took %s", len(data), d)
		}
		checkPaneView(t, v, width/2+1, height)
	})
}

func TestPaneRecoversFromEmulatorPanic(t *testing.T) {
	p := NewPane(40, 5)
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
	p := NewPane(20, 3)
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
	q := NewPane(30, 3)
	defer q.Close()
	q.Write([]byte(long))
	checkPaneView(t, q.View(), 30, 3)
}

// TestPaneCoalescingKeepsTheScreen feeds random floods of plain lines to
// two panes, one skipping the lines that scroll off unseen and one drawing
// every line, and requires the same screen and cursor from both.
func TestPaneCoalescingKeepsTheScreen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	controls := []string{"\x1b[H", "\x1b[2;3H", "\x1b[K", "\x1b[3A", "\x1b]0;title\x07", "\x1b]0;unterminated",
		"\x1b\\", "\x1b[2;4r", "\x1b[r", "\t", "\x1b(0", "\x1b(B", "\x1bM", "\x1b[?1049h", "\x1b[?1049l", "\x1b[2S", "\x1b[?25l"}
	word := func() string {
		switch rng.IntN(16) {
		case 12:
			return controls[rng.IntN(len(controls))]
		case 13:
			return "世界"
		case 14:
			return "e\u0301"
		case 0:
			return fmt.Sprintf("\x1b[%dm", 30+rng.IntN(8))
		case 1:
			return fmt.Sprintf("\x1b[38;5;%d;48;2;%d;%d;%dm", rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(256))
		case 2:
			return "\x1b[m"
		case 3:
			return "héllo"
		case 4:
			return "\r"
		}
		return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(9))
	}
	skipped := 0
	for trial := 0; trial < 300; trial++ {
		w, h := 5+rng.IntN(30), 2+rng.IntN(12)
		fast, slow := NewPane(w, h), NewPane(w, h)
		slow.coalesce = false
		var writes [][]byte
		for n := rng.IntN(4) + 1; n > 0; n-- {
			var b strings.Builder
			for l := rng.IntN(4 * h); l > 0; l-- {
				for k := rng.IntN(4); k > 0; k-- {
					b.WriteString(word())
				}
				if rng.IntN(5) > 0 {
					b.WriteString("\r")
				}
				b.WriteString("\n")
			}
			b.WriteString(word())
			writes = append(writes, []byte(b.String()))
		}
		for _, wr := range writes {
			if c, ok := fast.coalesced(wr); ok && len(c) < len(wr) {
				skipped++
			}
			fast.Write(wr)
			slow.Write(wr)
		}
		fv, sv := fast.View(), slow.View()
		fx, fy, _ := fast.Cursor()
		sx, sy, _ := slow.Cursor()
		if fv != sv || fx != sx || fy != sy {
			t.Fatalf("trial %d (%dx%d): screens differ\nskipping (cursor %d,%d):\n%s\ndrawing (cursor %d,%d):\n%s\nwrites: %q",
				trial, w, h, fx, fy, ansi.Strip(fv), sx, sy, ansi.Strip(sv), writes)
		}
		fast.Close()
		slow.Close()
	}
	if skipped == 0 {
		t.Fatal("no trial skipped any line: the test does not exercise the skipping")
	}
	t.Logf("%d writes skipped lines", skipped)
}

// FuzzPaneCoalescing checks on arbitrary output that skipping unseen lines
// never changes what the pane shows.
func FuzzPaneCoalescing(f *testing.F) {
	f.Add([]byte("hello \x1b[31mred\x1b[m"), []byte("\x1b[2;3H"), uint8(5))
	f.Add([]byte("世界e\u0301"), []byte("\x1b]0;t"), uint8(3))
	f.Fuzz(func(t *testing.T, line, extra []byte, h uint8) {
		height := int(h%10) + 2
		fast, slow := NewPane(20, height), NewPane(20, height)
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
