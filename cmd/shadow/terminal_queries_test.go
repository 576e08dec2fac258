package main

import (
	"bytes"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/shadow-sandbox/shadow/sandbox/termfilter"
)

// terminalQuery matches what makes a terminal answer: ENQ, device
// attributes, status and cursor reports, colour queries (OSC 4, 10–19 with
// "?"), mode and setting requests, XTVERSION, window reports, the kitty
// keyboard query. A reply that arrives after a command has exited is typed
// into the user's shell.
var terminalQuery = regexp.MustCompile(`\x05|\x1b\[[>=]?[0-9]*c|\x1b\[\??[0-9;]*n|\x1b\](4|1[0-9]);[^\x07\x1b]*\?|` +
	`\x1b\[[?]?[0-9;]*\$p|\x1bP[$+]q|\x1b\[>[0-9]*q|\x1b\[1[1-9]t|\x1b\[2[01]t|\x1b\[\?u|\x1bZ`)

// ptyRun runs shadow with stdin, stdout and stderr on a new pty, as from a
// user's terminal, and returns every byte it wrote there.
func (c *cli) ptyRun(dir string, args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(c.env, "TERM=xterm-256color", "COLORFGBG=")
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		c.t.Fatalf("shadow %v on a pty: %v", args, err)
	}
	defer master.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&out, master) // ends with EIO once every holder of the pty has exited
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		c.t.Fatalf("shadow %v on a pty did not end; it wrote %q", args, out.String())
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return out.String()
}

// TestNoTerminalQueries runs every command that prints and exits with its
// standard streams on a terminal: none may ask the terminal anything, as
// none reads a reply before it exits (shadow diff used to ask for the
// background colour and the device attributes).
func TestNoTerminalQueries(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "one\ntwo\n", "gone.txt": "bye\n"})
	c.must(p, "run", "--", "sh", "-c", "sed -i s/two/TWO/ a.txt && echo new > b.txt && rm gone.txt")
	for _, args := range [][]string{
		{"diff"},
		{"diff", "--stat"},
		{"diff", "--name-only"},
		{"sessions"},
		{"version"},
		{"doctor"},
		{"verify"},
		{"apply", "--all", "--yes"},
		{"apply", "--rollback", "--yes"},
		{"run", "--", "sh", "-c", "echo staged > c.txt"},
		{"discard", "--yes"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out := c.ptyRun(p, args...)
			if q := terminalQuery.FindString(out); q != "" {
				t.Errorf("shadow %v sent the terminal query %q; it wrote:\n%q", args, q, out)
			}
			// The jail's filter is the reference for what answers: what
			// shadow writes itself must pass it unchanged.
			var filtered bytes.Buffer
			f := termfilter.New(&filtered)
			f.Write([]byte(out))
			f.Flush()
			if filtered.String() != out {
				t.Errorf("shadow %v wrote what the terminal filter drops:\n wrote    %q\n filtered %q", args, out, filtered.String())
			}
			if args[0] == "diff" && len(args) == 1 && !strings.Contains(out, "\x1b[") {
				t.Errorf("shadow diff on a terminal is not coloured:\n%q", out)
			}
		})
	}
}

func TestDarkBackground(t *testing.T) {
	for _, c := range []struct {
		colorfgbg string
		dark      bool
	}{
		{"", true},
		{"15;0", true},
		{"0;15", false},
		{"0;7", false},
		{"15;8", true},
		{"0;default;15", false},
		{"12;default;0", true},
		{"7;default", true},
		{"garbage", true},
	} {
		if got := darkBackground(c.colorfgbg); got != c.dark {
			t.Errorf("darkBackground(%q) = %v, want %v", c.colorfgbg, got, c.dark)
		}
	}
}

// TestJailAnswersDeviceAttributes: a program in the jail that asks for the
// primary device attributes (DA1, which programs send last and wait on: Gemini
// CLI a second) gets the jail's answer at once, in each form of the request,
// and the user's terminal is asked nothing.
func TestJailAnswersDeviceAttributes(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "one\n"})
	for _, q := range []string{`\033[c`, `\033[0c`, `\033Z`} {
		script := `stty raw -echo; printf '` + q + `'; r=$(dd bs=` + strconv.Itoa(len(termfilter.DeviceAttributes)) +
			` count=1 2>/dev/null); stty sane; printf 'GOT:%s:\n' "${r#?}"`
		out := c.ptyRun(p, "run", "--", "sh", "-c", script)
		if want := "GOT:" + termfilter.DeviceAttributes[1:] + ":"; !strings.Contains(out, want) {
			t.Errorf("%s: the program did not get the answer %q:\n%q", q, want, out)
		}
		if q := terminalQuery.FindString(out); q != "" {
			t.Errorf("the user's terminal was asked %q:\n%q", q, out)
		}
	}
}
