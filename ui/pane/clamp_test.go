package pane

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"
)

// c1Forms are the forms of CSI a terminal reads: 7-bit, 8-bit and UTF-8
// encoded, as the relay's filter passes them.
var c1Forms = []string{"\x1b[", "\x9b", "\xc2\x9b"}

func TestPaneClampsEveryForm(t *testing.T) {
	c := clamper{w: 80, h: 24}
	counted := 0
	for final := byte(0x40); final <= 0x7e; final++ {
		limit := c.countLimit(final)
		if limit == 0 {
			continue
		}
		counted++
		for _, intro := range c1Forms {
			in := intro + "2000000000" + string(final)
			want := fmt.Sprintf("\x1b[%d%c", limit, final)
			if got := string(c.filterInto(nil, []byte(in))); got != want {
				t.Errorf("%q = %q, want %q", in, got, want)
			}
			// Cut at every byte, the sequence is clamped all the same.
			for i := 1; i < len(in); i++ {
				d := clamper{w: 80, h: 24}
				got := string(d.filterInto(nil, []byte(in[:i]))) + string(d.filterInto(nil, []byte(in[i:])))
				if got != want {
					t.Errorf("%q cut at %d = %q, want %q", in, i, got, want)
				}
			}
		}
	}
	if counted < 21 {
		t.Errorf("only %d counted sequences", counted)
	}
	for _, intro := range c1Forms {
		for in, want := range map[string]string{
			intro + "?2000000000;1049h": "\x1b[?9999;1049h", // DEC modes
			intro + "2000000000;5H":     "\x1b[9999;5H",
			intro + "2000000000<b":      "", // a marker past the first: digits a parser may join
			intro + "1;2000000000r":     "\x1b[1;24r",
			intro + "38;5;2000000000m":  "\x1b[38;5;9999m",
			"A" + intro + "9" + "\x9bb": "A\x1b[b", // a C1 control ends the sequence
			"\x1b]0;t" + intro + "80b":  "\x1b[80b",
		} {
			if got := string(c.filterInto(nil, []byte(in))); got != want {
				t.Errorf("%q = %q, want %q", in, got, want)
			}
		}
	}
	// A character cut short by a sequence is U+FFFD, and the sequence acts.
	if got := string(c.filterInto(nil, []byte("\xe2\x1b[9999b"))); got != "\uFFFD\x1b[80b" {
		t.Errorf("cut character = %q", got)
	}
	// A raw C1 byte continuing a character is text, never a control.
	if got := string(c.filterInto(nil, []byte("\xe2\x80\x9b2000b"))); got != "\u201b2000b" {
		t.Errorf("U+201B = %q", got)
	}
}

// costClasses are the kinds of jailed output that make the emulator work
// the most per byte, each in every form of its introducer: huge repeat
// counts and parameters, strings that never end, introducers nested in one
// another, and floods of what is clamped.
func costClasses() map[string][]byte {
	classes := map[string][]byte{}
	rep := func(s string, n int) []byte { return bytes.Repeat([]byte(s), max(1, n/len(s))) }
	c := clamper{w: 80, h: 24}
	for i, intro := range c1Forms {
		form := []string{"7-bit", "8-bit", "utf-8"}[i]
		classes[form+" repeat count"] = rep("A"+intro+"2000000000b", 16<<10)
		for final := byte(0x40); final <= 0x7e; final++ {
			if c.countLimit(final) > 0 && final != 'b' {
				classes[fmt.Sprintf("%s huge %c", form, final)] = rep("x"+intro+"2000000000"+string(final), 16<<10)
			}
		}
		classes[form+" huge modes"] = rep(intro+"?1049;2000000000h"+intro+"?1049l", 16<<10)
		classes[form+" nesting"] = rep(intro+"1;"+"\x1b]0;"+"\x9d0;\xc2\x9d2;\x1bP\x90q\x98\x9f", 64<<10)
	}
	for name, intro := range map[string]string{"osc": "\x1b]2;", "osc 8-bit": "\x9d2;", "osc utf-8": "\xc2\x9d2;", "dcs": "\x1bP", "dcs 8-bit": "\x90", "apc": "\x1b_", "apc 8-bit": "\x9f"} {
		classes["endless "+name] = append([]byte(intro), rep("✋ endless ", 1<<20)...)
	}
	classes["text flood"] = rep("\x1b[32mok\x1b[m line of a flood, ✋ coalesced\r\n", 10<<20)
	return classes
}

// TestPaneOutputCostIsBounded feeds every cost class to the pane and
// checks that none costs more than the bound per MB at 80×24. The pane feeds
// its emulator a KB at a time under its lock, so a key or a frame waits at
// most a thousandth of that for it (logged as measured: on a machine this
// loaded, how long a goroutine waits is mostly the scheduler's doing).
// Before the clamp read 8-bit forms, "\x9b2000000000b" held the lock for
// minutes. The cost is the CPU time of the thread that writes, so a busy
// machine (which stretches the wall time tenfold at a load of 30 on 2 cores)
// does not move it. Measured so, quiet, the dearest classes (rows deleted or
// scrolled a screenful at a time) cost 20 to 25 s per MB, as much as line
// feeds that scroll the screen into the scrollback, which any byte may be; a
// KB is then 20 to 25 ms. The race detector makes it about 3 min per MB. The
// bound is about twenty times that, and ten times more under the race
// detector.
func TestPaneOutputCostIsBounded(t *testing.T) {
	const boundPerMB = 400 * time.Second * raceSlowdown
	classes := costClasses()
	classes["line feeds"] = bytes.Repeat([]byte("\v"), 16<<10)
	for name, in := range classes {
		p := newPane(80, 24)
		done := make(chan struct{})
		var wait time.Duration
		go func() {
			defer close(done)
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond): // a key or a frame now and then
				}
				s := time.Now()
				p.Size() // takes the lock, as a key or a frame does
				wait = max(wait, time.Since(s))
			}
		}()
		start := time.Now()
		cpu := threadCPU(t, func() {
			p.Write(in)
			p.Write([]byte("\x1b\\\x07\r\nalive"))
		})
		d := time.Since(start)
		done <- struct{}{}
		<-done
		perMB := time.Duration(float64(cpu) * float64(1<<20) / float64(len(in)))
		t.Logf("%-22s %8d bytes %10v CPU (%v)  %8v per MB, lock waited %v", name, len(in), cpu.Round(time.Microsecond),
			d.Round(time.Millisecond), perMB.Round(time.Millisecond), wait.Round(time.Microsecond))
		if perMB > boundPerMB {
			t.Errorf("%s: %v of CPU per MB, bound %v", name, perMB, boundPerMB)
		}
		if !strings.Contains(ansi.Strip(p.View()), "alive") {
			t.Errorf("%s: the output after it is lost", name)
		}
		p.Close()
	}
}

// threadCPU runs f on a thread of its own and returns the CPU time that
// thread spent in it.
func threadCPU(t *testing.T, f func()) time.Duration {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
		t.Fatal(err)
	}
	f()
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		t.Fatal(err)
	}
	tv := func(r unix.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return tv(after) - tv(before)
}

// TestPaneTitlesAreConsumed writes every form of OSC 0, 1 and 2 (each
// introducer, each terminator, a UTF-8 payload whose characters hold the
// byte 0x9C) cut into two writes at every byte: none of it shows in the
// pane, and the title of OSC 0 and 2 is the pane's.
func TestPaneTitlesAreConsumed(t *testing.T) {
	const payload = "✋ waiting ✳ Claude Code"
	intros := []string{"\x1b]", "\x9d", "\xc2\x9d"}
	ends := []string{"\x07", "\x1b\\", "\x9c", "\xc2\x9c"}
	for _, num := range []string{"0", "1", "2"} {
		for _, intro := range intros {
			for _, end := range ends {
				in := "a" + intro + num + ";" + payload + end + "b"
				for i := 0; i <= len(in); i++ {
					p := newPane(40, 3)
					p.Write([]byte(in[:i]))
					p.Write([]byte(in[i:]))
					row := strings.TrimRight(strings.Split(ansi.Strip(p.View()), "\n")[0], " ")
					want := ""
					if num != "1" {
						want = payload
					}
					if row != "ab" || p.Title() != want {
						t.Fatalf("%q cut at %d: row %q, title %q", in, i, row, p.Title())
					}
					p.Close()
				}
			}
		}
	}
}

func TestPaneTitleIsCleaned(t *testing.T) {
	p := newPane(40, 3)
	defer p.Close()
	p.Write([]byte("\x1b]2;\u202eevil\u202c \x01ti\u200etle\xff " + strings.Repeat("x", 100) + "\x07"))
	got := p.Title()
	if strings.ContainsAny(got, "\u202e\u202c\x01\u200e") || !strings.HasPrefix(got, "evil title\uFFFD x") || ansi.StringWidth(got) > maxTitle {
		t.Errorf("title %q", got)
	}
}
