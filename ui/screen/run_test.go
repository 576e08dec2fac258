package screen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// testTerminal is a Terminal whose input is a pty and whose output is a
// file, so that a frame is in the file as soon as its write returns.
func testTerminal(t *testing.T) (*Terminal, *os.File) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	if err := pty.Setsize(master, &pty.Winsize{Cols: 40, Rows: 5}); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(t.TempDir() + "/terminal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return &Terminal{in: tty, out: out, env: []string{"TERM=xterm-256color"}}, tty
}

// token is frame k's text: every letter differs from frame k-1's at its
// place and none repeats, so a frame is written whole.
func token(k int) string {
	var b strings.Builder
	for i := range 6 {
		b.WriteByte(byte('a' + (k*7+i)%26))
	}
	return b.String()
}

type stepMsg int

// probe checks, at each of its updates, that the view of the update before
// is already on the terminal. Its steps come in bursts of four after a pause.
type probe struct {
	out    *os.File
	step   int
	missed *[]int
}

func pause(next int) tea.Cmd {
	return tea.Tick(40*time.Millisecond, func(time.Time) tea.Msg { return stepMsg(next) })
}

func (p probe) Init() tea.Cmd { return pause(1) }

func (p probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	k, ok := msg.(stepMsg)
	if !ok {
		return p, nil
	}
	if b, _ := os.ReadFile(p.out.Name()); !bytes.Contains(b, []byte(token(p.step))) {
		*p.missed = append(*p.missed, p.step)
	}
	p.step = int(k)
	switch {
	case k == 12:
		return p, tea.Quit
	case k%4 == 0:
		return p, pause(int(k) + 1)
	}
	return p, func() tea.Msg { return stepMsg(k + 1) }
}

func (p probe) View() tea.View { return textView(token(p.step)) }

// A frame is on the terminal before the model's next update runs: the echo
// of a key waits for no renderer's tick. (bubbletea's renderer writes on its
// tick, so the update after a change finds the terminal not yet drawn.)
func TestFrameIsOnTheTerminalBeforeTheNextUpdate(t *testing.T) {
	term, _ := testTerminal(t)
	var missed []int
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := term.Run(ctx, probe{out: term.out, missed: &missed}); err != nil {
		t.Fatal(err)
	}
	if len(missed) > 0 {
		t.Errorf("the frames of steps %v were not on the terminal when the next update ran", missed)
	}
}

type execDone struct{ err error }

// editing runs a program with the terminal at its start and quits when the
// program ends.
type editing struct {
	term *Terminal
	err  error
}

func (e editing) Init() tea.Cmd {
	return e.term.Exec(exec.Command("sh", "-c", "stty -a; echo EDITED"), func(err error) tea.Msg { return execDone{err} })
}

func (e editing) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if d, ok := msg.(execDone); ok {
		e.err = d.err
		return e, tea.Quit
	}
	return e, nil
}

func (e editing) View() tea.View { return textView("the app") }

// A program run with the terminal gets it as the app found it (the main
// screen, the line discipline on) and the app takes it back after, drawn
// afresh; at the end the terminal's mode is as before.
func TestExecGivesTheTerminalBack(t *testing.T) {
	term, tty := testTerminal(t)
	before, err := unixTermios(tty)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	final, err := term.Run(ctx, editing{term: term})
	if err != nil {
		t.Fatal(err)
	}
	if e := final.(editing).err; e != nil {
		t.Fatalf("the program failed: %v", e)
	}
	b, err := os.ReadFile(term.out.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	exit, enter := ansi.ResetModeAltScreenSaveCursor, ansi.SetModeAltScreenSaveCursor
	during := out[strings.Index(out, exit)+len(exit) : strings.LastIndex(out, enter)]
	if !strings.Contains(during, "EDITED") || !regexp.MustCompile(`(^|\s)icanon`).MatchString(during) {
		t.Fatalf("the program did not run on the main screen with the line discipline on; between the screens:\n%q", during)
	}
	after := out[strings.LastIndex(out, enter):]
	if !strings.Contains(after, "the app") || !strings.HasSuffix(after, exit) {
		t.Errorf("the app was not drawn again after the program, or did not leave the screen at its end: %q", after)
	}
	now, err := unixTermios(tty)
	if err != nil {
		t.Fatal(err)
	}
	if now != before {
		t.Errorf("the terminal's mode after the app differs from before it:\n%s\n%s", before, now)
	}
}

// unixTermios is the terminal's mode as text.
func unixTermios(f *os.File) (string, error) {
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("iflag %#o oflag %#o lflag %#o cc %v", tio.Iflag, tio.Oflag, tio.Lflag, tio.Cc), nil
}

// crashing panics at its first update.
type crashing struct{}

func (crashing) Init() tea.Cmd                       { return func() tea.Msg { return stepMsg(1) } }
func (crashing) Update(tea.Msg) (tea.Model, tea.Cmd) { panic("the model broke") }
func (crashing) View() tea.View                      { return textView("about to break") }

// A panic of the model is printed after the terminal is given back, where it can be read
// (bubbletea prints it to standard error; here that is the terminal's file too).
func TestPanicIsPrintedOnTheMainScreen(t *testing.T) {
	if raceEnabled {
		// bubbletea v2.1.1's shutdown after a panic closes the input's cancel reader while
		// its read loop still reads, and returns before that loop ends: a race of its own.
		t.Skip("bubbletea's shutdown after a panic races with its own input loop")
	}
	term, tty := testTerminal(t)
	before, err := unixTermios(tty)
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = term.out
	defer func() { os.Stderr = stderr }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = term.Run(ctx, crashing{})
	os.Stderr = stderr
	if !errors.Is(err, tea.ErrProgramPanic) {
		t.Fatalf("Run returned %v, want a panic's error", err)
	}
	b, err := os.ReadFile(term.out.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	exit, printed := strings.Index(out, ansi.ResetModeAltScreenSaveCursor), strings.Index(out, "the model broke")
	if exit < 0 || printed < exit {
		t.Errorf("the panic was printed before the terminal was given back (at %d, the main screen at %d): %q", printed, exit, out)
	}
	if now, _ := unixTermios(tty); now != before {
		t.Errorf("the terminal's mode after the panic differs from before it:\n%s\n%s", before, now)
	}
}
