package screen

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// output is a terminal's input as a test reads it: what a Screen wrote,
// from any goroutine.
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // signalled (without blocking) after each write
}

func newOutput() *output { return &output{wrote: make(chan struct{}, 1)} }

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	defer func() {
		select {
		case o.wrote <- struct{}{}:
		default:
		}
	}()
	return o.buf.Write(b)
}

// take returns what was written since the last take.
func (o *output) take() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.buf.String()
	o.buf.Reset()
	return s
}

// clock is a test's time: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestScreen(t *testing.T, w, h int) (*Screen, *output, *clock) {
	t.Helper()
	out := newOutput()
	clk := &clock{t: time.Unix(1e9, 0)}
	s := New(out, []string{"TERM=xterm-256color"}, colorprofile.ANSI256, w, h)
	s.now = clk.now
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, out, clk
}

func textView(text string) tea.View {
	v := tea.NewView(text)
	v.AltScreen = true
	return v
}

// A frame after a quiet spell is on the terminal when Draw returns, as are
// the next ones of a burst; a flood waits for its turn and then shows the
// newest view, not each one.
func TestDrawAfterQuietIsAtOnce(t *testing.T) {
	s, out, clk := newTestScreen(t, 20, 3)
	out.take()
	for i, word := range []string{"one", "two", "three", "four"} {
		s.Draw(textView(word))
		if got := out.take(); !strings.Contains(got, word) {
			t.Fatalf("frame %d of a burst (%q) was not written when Draw returned: wrote %q", i+1, word, got)
		}
	}
	s.Draw(textView("five"))
	if got := out.take(); got != "" {
		t.Fatalf("frame 5 of a burst at one instant was drawn at once (%q), not paced", got)
	}
	s.Draw(textView("six"))
	s.Draw(textView("seven"))
	var late strings.Builder
	deadline := time.After(10 * time.Second)
	for !strings.Contains(late.String(), "seven") {
		select {
		case <-out.wrote:
			late.WriteString(out.take())
		case <-deadline:
			t.Fatalf("the paced frame never came: wrote %q", late.String())
		}
	}
	if strings.Contains(late.String(), "six") || strings.Contains(late.String(), "five") {
		t.Errorf("the paced frame drew views the newest one replaced: %q", late.String())
	}

	clk.add(time.Second) // a quiet spell
	s.Draw(textView("eight"))
	if got := out.take(); !strings.Contains(got, "eight") {
		t.Errorf("the frame after a quiet spell was not written at once: %q", got)
	}
	s.Draw(textView("eight"))
	if got := out.take(); got != "" {
		t.Errorf("the view shown, drawn again, wrote %q", got)
	}
}

// The pacer lets Burst frames through at once after a quiet spell, then one
// an Interval, and forgets a flood after a quiet spell.
func TestPacer(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	p := Pacer{Interval: 10 * time.Millisecond, Burst: 3}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	steps := []struct {
		ms   int
		wait time.Duration
	}{
		{0, 0}, {0, 0}, {1, 0}, // the burst
		{2, 8 * time.Millisecond},  // the flood's first frame waits for 10 ms after the burst's first
		{10, 0},                    // … and goes then
		{11, 9 * time.Millisecond}, // one an interval
		{20, 0},
		{500, 0}, {500, 0}, {500, 0}, // after a quiet spell, a burst again
		{500, 10 * time.Millisecond},
	}
	for i, st := range steps {
		wait := p.Wait(at(st.ms))
		if wait != st.wait {
			t.Fatalf("step %d at %d ms: wait %s, want %s", i, st.ms, wait, st.wait)
		}
		if wait == 0 {
			p.Take(at(st.ms))
		}
	}
}

// Whatever the views, the terminal shows each one: its text, its cursor
// where the view puts it or hidden, after resizes (a terminal emulator reads
// what the Screen wrote).
func TestTerminalShowsEveryView(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"shadow", "agent", "review", "世界", "ok", "│", "·", "\x1b[1mbold\x1b[m", "\x1b[31mred\x1b[m", "\x1b[7minv\x1b[m", "  "}
	w, h := 24, 6
	s, out, clk := newTestScreen(t, w, h)
	emu := vt.NewEmulator(w, h)
	go io.Copy(io.Discard, emu) // the emulator's answers to the Screen's questions
	t.Cleanup(func() {
		if c, ok := emu.InputPipe().(io.Closer); ok {
			c.Close()
		}
	})
	for step := range 400 {
		if rng.IntN(40) == 0 {
			w, h = 10+rng.IntN(30), 2+rng.IntN(8)
			s.Resize(w, h)
			emu.Resize(w, h)
		}
		lines := make([]string, h)
		for y := range lines {
			var b strings.Builder
			for n := rng.IntN(6); n > 0; n-- {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteString(strings.Repeat(" ", rng.IntN(3)))
			}
			lines[y] = ansi.Truncate(b.String(), w, "")
		}
		v := textView(strings.Join(lines, "\n"))
		if rng.IntN(3) > 0 {
			v.Cursor = tea.NewCursor(rng.IntN(w), rng.IntN(h))
		}
		clk.add(time.Second)
		s.Draw(v)
		emu.Write([]byte(out.take()))

		for y, line := range lines {
			want := strings.TrimRight(ansi.Strip(line), " ")
			got := strings.TrimRight(emuLine(emu, y, w), " ")
			if got != want {
				t.Fatalf("step %d (%d×%d), row %d shows %q, want %q; screen:\n%s", step, w, h, y, got, want, emu.String())
			}
		}
		if v.Cursor == nil && !emu.CursorHidden() {
			t.Fatalf("step %d: the view has no cursor, the terminal shows one", step)
		}
		if v.Cursor != nil {
			if emu.CursorHidden() {
				t.Fatalf("step %d: the view's cursor is hidden", step)
			}
			if pos := emu.CursorPosition(); pos.X != v.Cursor.X || pos.Y != v.Cursor.Y {
				t.Fatalf("step %d: the cursor is at %d,%d, want %d,%d", step, pos.X, pos.Y, v.Cursor.X, v.Cursor.Y)
			}
		}
	}
}

// emuLine is row y of the emulator's screen as text.
func emuLine(emu *vt.Emulator, y, w int) string {
	var b strings.Builder
	for x := 0; x < w; x++ {
		c := emu.CellAt(x, y)
		switch {
		case c == nil:
			b.WriteByte(' ')
		case c.Width == 0:
			// the second cell of a wide character
		case c.Content == "":
			b.WriteByte(' ')
		default:
			b.WriteString(c.Content)
		}
	}
	return b.String()
}

// Only what changed is written: one word of a full screen changed costs a
// few bytes, not the screen.
func TestDrawWritesWhatChanged(t *testing.T) {
	s, out, clk := newTestScreen(t, 80, 24)
	full := strings.TrimSuffix(strings.Repeat(strings.Repeat("x", 80)+"\n", 24), "\n")
	s.Draw(textView(full))
	if n := len(out.take()); n < 80*24 {
		t.Fatalf("the first frame wrote %d bytes, less than the screen", n)
	}
	clk.add(time.Second)
	s.Draw(textView(strings.Replace(full, "xxxx", "echo", 1)))
	if got := out.take(); len(got) > 40 || !strings.Contains(got, "echo") {
		t.Errorf("a changed word wrote %d bytes: %q", len(got), got)
	}
}

// Close gives the terminal back: every mode the views and Open set is reset,
// the cursor shown, the main screen last; nothing is drawn after it.
func TestCloseGivesTheTerminalBack(t *testing.T) {
	s, out, _ := newTestScreen(t, 20, 3)
	opened := out.take()
	for _, seq := range []string{ansi.SetModeAltScreenSaveCursor, ansi.SetModeBracketedPaste, ansi.PushKittyKeyboard(ansi.KittyDisambiguateEscapeCodes), ansi.RequestModeSynchronizedOutput} {
		if !strings.Contains(opened, seq) {
			t.Errorf("Open wrote no %q: %q", seq, opened)
		}
	}
	v := textView("hi")
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "shadow: agent"
	v.Cursor = tea.NewCursor(1, 1)
	s.Draw(v)
	if got := out.take(); !strings.Contains(got, ansi.SetModeMouseButtonEvent) || !strings.Contains(got, ansi.SetWindowTitle("shadow: agent")) {
		t.Fatalf("the view's mouse mode or title was not set: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed := out.take()
	for _, seq := range []string{ansi.PopKittyKeyboard(1), ansi.ResetModeMouseButtonEvent, ansi.SetWindowTitle(""), ansi.ResetModeBracketedPaste, ansi.SetModeTextCursorEnable} {
		if !strings.Contains(closed, seq) {
			t.Errorf("Close wrote no %q: %q", seq, closed)
		}
	}
	if !strings.HasSuffix(closed, ansi.ResetModeAltScreenSaveCursor) {
		t.Errorf("Close did not end on the main screen: %q", closed)
	}
	s.Draw(textView("after"))
	if got := out.take(); got != "" {
		t.Errorf("a closed screen drew %q", got)
	}
}

// A terminal that takes synchronized updates gets each frame as one.
func TestSynchronizedFrames(t *testing.T) {
	s, out, clk := newTestScreen(t, 20, 3)
	s.ModeReport(tea.ModeReportMsg{Mode: ansi.ModeSynchronizedOutput, Value: ansi.ModeReset})
	out.take()
	clk.add(time.Second)
	s.Draw(textView("frame"))
	got := out.take()
	if !strings.HasPrefix(got, ansi.SetModeSynchronizedOutput) || !strings.HasSuffix(got, ansi.ResetModeSynchronizedOutput) {
		t.Errorf("a frame is not one synchronized update: %q", got)
	}
}

func ExamplePacer() {
	p := Pacer{Interval: 10 * time.Millisecond, Burst: 2}
	t0 := time.Unix(0, 0)
	for i := range 3 {
		wait := p.Wait(t0)
		fmt.Println(i, wait)
		p.Take(t0.Add(wait))
	}
	// Output:
	// 0 0s
	// 1 0s
	// 2 10ms
}
