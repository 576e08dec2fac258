package screen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
)

// Terminal runs a bubbletea program on the process's terminal with its
// frames drawn by a Screen: the input in raw mode, the terminal's size
// followed, and the terminal given back as it was found however the program
// ends.
type Terminal struct {
	in, out *os.File
	tty     bool // in is /dev/tty, opened here
	env     []string

	mu     sync.Mutex
	screen *Screen
	state  *term.State // the input's mode before Run made it raw
}

// NewTerminal is the process's terminal: standard input, or /dev/tty when
// that is not a terminal (as bubbletea reads), and standard output.
func NewTerminal() (*Terminal, error) {
	t := &Terminal{in: os.Stdin, out: os.Stdout, env: os.Environ()}
	if !term.IsTerminal(t.in.Fd()) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return nil, fmt.Errorf("open the terminal: %w", err)
		}
		t.in, t.tty = tty, true
	}
	return t, nil
}

// Run runs m until it quits or ctx ends and returns its last state.
func (t *Terminal) Run(ctx context.Context, m tea.Model) (_ tea.Model, err error) {
	if t.tty {
		defer t.in.Close()
	}
	width, height, err := term.GetSize(t.out.Fd())
	if err != nil {
		width, height = 80, 24
	}
	scr := New(t.out, t.env, colorprofile.Detect(t.out, t.env), width, height)
	t.mu.Lock()
	t.screen = scr
	t.mu.Unlock()
	if err := t.take(); err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, t.giveBack()) }()

	// Without its renderer bubbletea reads the input and runs the model; its own tick only
	// writes the questions its commands ask the terminal (the background colour), so it need
	// not come often.
	p := tea.NewProgram(drawn{inner: m, screen: scr, term: t}, tea.WithContext(ctx), tea.WithoutRenderer(), tea.WithEnvironment(t.env),
		tea.WithInput(t.in), tea.WithOutput(t.out), tea.WithWindowSize(width, height), tea.WithFPS(20))
	stop := t.followSize(p)
	defer stop()
	final, err := p.Run()
	if d, ok := final.(drawn); ok {
		final = d.inner
	}
	return final, err
}

// Exec runs c with the terminal: the screen is given back while c runs and
// taken again after it, drawn afresh; fn's message comes once c ends.
func (t *Terminal) Exec(c *exec.Cmd, fn tea.ExecCallback) tea.Cmd {
	return tea.Exec(&handover{Cmd: c, t: t}, fn)
}

// take puts the input in raw mode and opens the screen.
func (t *Terminal) take() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	state, err := term.MakeRaw(t.in.Fd())
	if err != nil {
		return fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	t.state = state
	if err := t.screen.Open(); err != nil {
		return errors.Join(err, term.Restore(t.in.Fd(), state))
	}
	return nil
}

// giveBack closes the screen and restores the input's mode.
func (t *Terminal) giveBack() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.screen.Close()
	if t.state != nil {
		err = errors.Join(err, term.Restore(t.in.Fd(), t.state))
		t.state = nil
	}
	return err
}

// followSize sends the program the terminal's size whenever it changes (the
// program has no renderer to follow it) until the returned stop.
func (t *Terminal) followSize(p *tea.Program) (stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if w, h, err := term.GetSize(t.out.Fd()); err == nil {
					p.Send(tea.WindowSizeMsg{Width: w, Height: h})
				}
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}

// handover is a command run with the terminal given back to it.
type handover struct {
	*exec.Cmd
	t *Terminal
}

func (h *handover) SetStdin(r io.Reader)  { h.Stdin = r }
func (h *handover) SetStdout(w io.Writer) { h.Stdout = w }
func (h *handover) SetStderr(w io.Writer) { h.Stderr = w }

// Run runs the command between giving the terminal back and taking it again.
func (h *handover) Run() error {
	if err := h.t.giveBack(); err != nil {
		return err
	}
	err := h.Cmd.Run()
	return errors.Join(err, h.t.take())
}

// drawn is a model whose every view goes to a Screen; it passes the
// terminal's reports the Screen needs on to it.
type drawn struct {
	inner  tea.Model
	screen *Screen
	term   *Terminal
}

// givingBackOnPanic gives the terminal back before a panic of the model goes on to bubbletea,
// which prints it: on the main screen, in the terminal's own mode, where it can be read.
func (d drawn) givingBackOnPanic() {
	if r := recover(); r != nil {
		_ = d.term.giveBack()
		panic(r)
	}
}

func (d drawn) Init() tea.Cmd { return d.inner.Init() }

func (d drawn) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	defer d.givingBackOnPanic()
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		d.screen.Resize(msg.Width, msg.Height)
	case tea.ColorProfileMsg:
		d.screen.SetColorProfile(msg.Profile)
	case tea.ModeReportMsg:
		d.screen.ModeReport(msg)
	}
	var cmd tea.Cmd
	d.inner, cmd = d.inner.Update(msg)
	return d, cmd
}

// View draws the model's view: bubbletea asks for it after every update.
func (d drawn) View() tea.View {
	defer d.givingBackOnPanic()
	v := d.inner.View()
	d.screen.Draw(v)
	return v
}
