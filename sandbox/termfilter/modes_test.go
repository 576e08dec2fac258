package termfilter

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// restoreCases: a program's output, and what Restore must send after it.
var restoreCases = []struct {
	name, in, want string
}{
	{"nothing set", "1\r\n2\r\n3\r\n", ""},
	{"colours and cursor moves", esc + "[1;31mred" + esc + "[0m" + esc + "[10;5H" + esc + "[2J", ""},
	{"alt screen entered and left", esc + "[?1049h" + "full screen" + esc + "[?1049l", ""},
	{"alt screen entered, not left", esc + "[?1049h" + "full screen", esc + "[?1049l"},
	{"alt screen 47", esc + "[?47h", esc + "[?47l"},
	{"alt screen 1047", esc + "[?1047h", esc + "[?1047l"},
	{"alt screen left by another mode", esc + "[?1049h" + esc + "[?47l", ""},
	{"alt screen, 8-bit CSI", "\xc2\x9b?1049h", esc + "[?1049l"},
	{"terminfo smcup without rmcup", esc + "[?1049h" + esc + "[22;0;0t", esc + "[?1049l" + esc + "[23;0t"},
	{"terminfo smcup and rmcup", esc + "[?1049h" + esc + "[22;0;0t" + esc + "[?1049l" + esc + "[23;0;0t", ""},
	{"cursor hidden", esc + "[?25l", esc + "[?25h"},
	{"cursor hidden and shown", esc + "[?25l" + esc + "[?25h", ""},
	{"cursor shown only", esc + "[?25h", ""},
	{"mouse on", esc + "[?1000h" + esc + "[?1006h", esc + "[?1000l" + esc + "[?1006l"},
	{"mouse on in one sequence", esc + "[?1002;1006h", esc + "[?1002l" + esc + "[?1006l"},
	{"mouse on and off", esc + "[?1003;1006h" + esc + "[?1003;1006l", ""},
	{"focus and paste", esc + "[?1004h" + esc + "[?2004h", esc + "[?1004l" + esc + "[?2004l"},
	{"synchronized output left on comes first", esc + "[?1049;2026h", esc + "[?2026l" + esc + "[?1049l"},
	{"autowrap off", esc + "[?7l", esc + "[?7h"},
	{"keypad and cursor keys (smkx)", esc + "[?1h" + esc + "=", esc + "[?1l" + esc + ">"},
	{"smkx then rmkx", esc + "[?1h" + esc + "=" + esc + "[?1l" + esc + ">", ""},
	{"kitty keyboard pushed twice, popped once", esc + "[>1u" + esc + "[>3u" + esc + "[<u", esc + "[<1u"},
	{"kitty keyboard popped as pushed", esc + "[>1u" + esc + "[>3u" + esc + "[<2u", ""},
	{"kitty keyboard pop of more than pushed", esc + "[>1u" + esc + "[<5u", ""},
	{"kitty keyboard pushed on the alt screen", esc + "[?1049h" + esc + "[>1u", esc + "[<1u" + esc + "[?1049l"},
	{"kitty keyboard pushed on the alt screen, left", esc + "[?1049h" + esc + "[>1u" + esc + "[?1049l", ""},
	{"kitty keyboard flags set on the bottom entry", esc + "[=5;1u", esc + "[=0;1u"},
	{"kitty keyboard flags set and cleared", esc + "[=5u" + esc + "[=0u", ""},
	{"kitty keyboard flags of a pushed entry", esc + "[>1u" + esc + "[=5u" + esc + "[<u", ""},
	{"modifyOtherKeys", esc + "[>4;2m", esc + "[>4m"},
	{"modifyOtherKeys reset", esc + "[>4;2m" + esc + "[>4m", ""},
	{"modifyOtherKeys disabled (dropped: it is a DSR)", esc + "[>4;2m" + esc + "[>4n", esc + "[>4m"},
	{"title pushed", esc + "[22;0t" + esc + "]0;agent" + bel, esc + "[23;0t"},
	{"title pushed past the stack's depth", strings.Repeat(esc+"[22;0t", 1000), strings.Repeat(esc+"[23;0t", maxTitles)},
	{"cursor style", esc + "[5 q", esc + "[0 q"},
	{"cursor style back to default", esc + "[5 q" + esc + "[0 q", ""},
	{"8-bit replies", esc + " G", esc + " F"},
	{"full reset", esc + "[?1049h" + esc + "[?25l" + esc + "[?1000h" + esc + "=" + esc + "c", ""},
	{"soft reset", esc + "[?25l" + esc + "[!p", ""},
	{"XTSAVE, change, XTRESTORE", esc + "[?25s" + esc + "[?25l" + esc + "[?25r", ""},
	{"XTSAVE after a change", esc + "[?25l" + esc + "[?25s" + esc + "[?25h" + esc + "[?25r", esc + "[?25h"},
	{"XTRESTORE of an older save", esc + "[?1000r", esc + "[?1000l"},
	{"dropped sequences count for nothing", esc + "[?1049$p" + esc + "P$q?25h" + st, ""},
	{"1048 is not restored", esc + "[?1048h", ""},
}

func TestRestore(t *testing.T) {
	for _, c := range restoreCases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			f := New(&out)
			f.Write([]byte(c.in))
			f.Flush()
			if got := string(f.Restore()); got != c.want {
				t.Errorf("Restore after %q = %q, want %q", c.in, got, c.want)
			}
			// Written byte by byte: the same.
			g := New(&out)
			for i := range len(c.in) {
				g.Write([]byte{c.in[i]})
			}
			g.Flush()
			if got := string(g.Restore()); got != c.want {
				t.Errorf("byte by byte: Restore = %q, want %q", got, c.want)
			}
			// What Restore sends passes the filter and leaves nothing set.
			if c.want != "" {
				h := New(&out)
				h.Write([]byte(c.in + c.want))
				h.Flush()
				if got := h.Restore(); len(got) != 0 {
					t.Errorf("after the restore, Restore = %q, want nothing", got)
				}
			}
		})
	}
}

// TestRestoreAfterOrdinaryOutput: the captured programs of testdata/ordinary
// undo what they set; nothing is sent after them.
func TestRestoreAfterOrdinaryOutput(t *testing.T) {
	files, _ := filepath.Glob("testdata/ordinary/*")
	for _, name := range files {
		in, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		f := New(&out)
		f.Write(in)
		f.Flush()
		if got := f.Restore(); len(got) != 0 {
			t.Errorf("%s: Restore = %q, want nothing", filepath.Base(name), got)
		}
	}
}
