package main

import (
	"strings"
	"testing"
)

// TestRunRestoresOnlyWhatWasSet runs commands through `shadow run` on a pty
// and looks at what shadow writes after their output: nothing when the
// command left the terminal as it found it, and exactly the undoing of what
// it left set otherwise. A reset sent regardless (ESC[?1049l off the
// alternate screen) moves the cursor back in tmux and xterm, and the
// summary is printed over the command's output.
func TestRunRestoresOnlyWhatWasSet(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	for _, tc := range []struct {
		name, script, last, after string
	}{
		{"plain output", "seq 1 5", "5\r\n", ""},
		{"alt screen entered and left", `printf '\033[?1049h\033[?25lfull\033[?25h\033[?1049l'; echo done`, "done\r\n", ""},
		{"alt screen and hidden cursor left on", `printf '\033[?1049h\033[?25l\033[?1000hfull'`, "full", "\x1b[?1049l\x1b[?25h\x1b[?1000l"},
		{"bracketed paste left on", `printf '\033[?2004hx\n'`, "x\r\n", "\x1b[?2004l"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := c.ptyRun(p, "run", "--", "sh", "-c", tc.script)
			i := strings.LastIndex(out, tc.last)
			j := strings.Index(out, "shadow: command exited")
			if i < 0 || j < 0 || j < i {
				t.Fatalf("no command output %q followed by the summary in:\n%q", tc.last, out)
			}
			// The summary starts with an empty line.
			if got := strings.TrimSuffix(out[i+len(tc.last):j], "\r\n"); got != tc.after {
				t.Errorf("between the command's output and the summary shadow wrote %q, want %q\nall: %q", got, tc.after, out)
			}
		})
	}
}

// TestRunSummaryAfterOutputInTmux reproduces the report: after a
// full-screen program has run in the same terminal (its ESC[?1049h saved
// the cursor), `shadow run -- seq 1 5` must leave seq's lines intact with
// the summary below them.
func TestRunSummaryAfterOutputInTmux(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	script := `printf '\033[?1049hfull screen\033[?1049l'; for i in 1 2 3 4 5 6; do echo before-$i; done; ` +
		shellQuote(c.bin) + ` run -- seq 1 5; echo END-OF-RUN`
	scr := newTmux(t, p, env, "sh", "-c", script)
	screen := scr.waitFor("END-OF-RUN")
	lines := strings.Split(screen, "\n")
	index := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		return -1
	}
	want := []string{"before-1", "before-6", "1", "2", "3", "4", "5", "shadow: command exited with status 0", "session ", "END-OF-RUN"}
	last := -1
	for _, w := range want {
		i := index(w)
		if i <= last {
			t.Fatalf("%q is missing or out of place (line %d, after line %d):\n%s", w, i, last, screen)
		}
		if len(w) == 1 && strings.TrimSpace(lines[i]) != w {
			t.Fatalf("seq's line %q was written over: %q\n%s", w, lines[i], screen)
		}
		last = i
	}
}

// TestRunRelaysOnlyWhatDraws runs, through `shadow run` on a pty, a command
// that writes what issue reviews got past the relay's filter: host commands
// and notifications in OSC 7, 51, 633 and 777, OSC 8 links to file:// and
// ssh://, the keyboard-lock, local-echo and newline modes, and an OSC 52
// hidden behind a raw 0x9C in a title and in a sixel image. None reaches the
// terminal; the text around them and an http link do, and insert mode left
// on is reset at the end.
func TestRunRelaysOnlyWhatDraws(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	script := `printf 'A\033]7;file://host/etc\033\\B\033]51;["call","Tapi_x",[]]\007C\033]633;E;rm -rf ~\007D' &&
printf '\033]777;notify;x;y\033\\E\033]8;;file:///etc/passwd\033\\F\033]8;;ssh://h/\033\\G' &&
printf '\033[2h\033[12l\033[20hH\033]0;t\234\23552;c;ZXZpbA==\007I\033Pq#0~~\234\23552;c;ZXZpbA==\007J' &&
printf '\033]8;;https://example.com/\033\\K\033]8;;\033\\\033[4hZ'`
	out := c.ptyRun(p, "run", "--", "sh", "-c", script)
	for _, bad := range []string{"]7;", "]51;", "]633;", "]777;", "file://", "ssh://", "\x1b[2h", "\x1b[12l", "\x1b[20h", "52;c;", "ZXZpbA=="} {
		if strings.Contains(out, bad) {
			t.Errorf("%q reached the terminal:\n%q", bad, out)
		}
	}
	for _, want := range []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "\x1b]8;;https://example.com/\x1b\\K", "\x1b[4hZ"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q is missing:\n%q", want, out)
		}
	}
	z, sum := strings.LastIndex(out, "Z"), strings.Index(out, "shadow: command exited")
	if z < 0 || sum < z || !strings.Contains(out[z:sum], "\x1b[4l") {
		t.Errorf("insert mode left on is not reset before the summary:\n%q", out)
	}
}
