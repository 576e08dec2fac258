// Package screen draws the app's frames on the user's terminal as soon as
// they change.
//
// bubbletea's renderer writes a frame only on its fixed tick (at most 120 a
// second), so the echo of a key, which an agent writes after a quiet spell,
// waited for the next tick: about 4 ms on average and 8 at worst at 120 a
// second, on top of every hop between the key and its echo (SPEC §9: key to
// echo within 10 ms of the agent run directly). A Screen draws the first
// frames after a quiet spell while the model's update still runs, and paces a
// flood to one frame an interval (Pacer). The app runs bubbletea without its
// renderer: input, the model and its commands stay bubbletea's; each view it
// makes comes here (Run).
//
// A Screen draws what the app's views use: the content on the alternate
// screen, the cursor's position, the mouse mode and the window title; the
// terminal's modes (bracketed paste, the keyboard protocols bubbletea's
// renderer sets) are set on Open and reset on Close.
package screen

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// FrameInterval is the shortest time between two frames of a flood (120 a
// second, bubbletea's most); FrameBurst frames after a quiet spell go at once.
const (
	FrameInterval = time.Second / 120
	FrameBurst    = 4
)

// Screen is the user's terminal as the app draws on it. Its methods may be
// called from any goroutine.
type Screen struct {
	mu      sync.Mutex
	out     io.Writer
	env     []string
	profile colorprofile.Profile
	now     func() time.Time // the clock (tests set it)

	scr           *uv.TerminalRenderer
	frame         bytes.Buffer // what scr writes; a frame goes to out in one write
	cells         uv.ScreenBuffer
	width, height int
	syncd         bool // the terminal takes synchronized updates (mode 2026)
	graphemes     bool // the terminal measures text by grapheme (mode 2027)

	pace    Pacer
	view    tea.View  // the newest view
	shown   *tea.View // the view the terminal shows; nil: none since Open
	repaint bool      // the next frame is drawn even if the view did not change
	cursor  bool      // the terminal shows its cursor
	timer   *time.Timer
	open    bool
}

// New is a Screen writing to out, a terminal of width×height cells whose
// environment is env and colour profile is profile.
func New(out io.Writer, env []string, profile colorprofile.Profile, width, height int) *Screen {
	s := &Screen{out: out, env: env, profile: profile, now: time.Now,
		width: max(width, 1), height: max(height, 1)}
	s.pace = Pacer{Interval: FrameInterval, Burst: FrameBurst}
	s.cells = uv.NewScreenBuffer(s.width, s.height)
	return s
}

// Open takes the terminal: the alternate screen, the cursor hidden, bracketed
// paste and the keyboard protocols on, and asks whether the terminal takes
// synchronized updates. The next view is drawn whole.
func (s *Screen) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = true
	s.shown, s.cursor = nil, false
	s.resetRenderer()
	seq := ansi.SetModeAltScreenSaveCursor + ansi.ResetModeTextCursorEnable + ansi.SetModeBracketedPaste +
		ansi.SetModifyOtherKeys2 + ansi.PushKittyKeyboard(ansi.KittyDisambiguateEscapeCodes)
	if asksModes(uv.Environ(s.env)) {
		seq += ansi.RequestModeSynchronizedOutput + ansi.RequestModeUnicodeCore
	}
	if s.graphemes {
		seq += ansi.SetModeUnicodeCore
	}
	_, err := io.WriteString(s.out, seq)
	return err
}

// Close gives the terminal back as Open found it: the view's modes reset,
// the cursor shown, the main screen back. A frame still waiting is dropped.
func (s *Screen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return nil
	}
	s.open = false
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	var seq strings.Builder
	seq.WriteString(ansi.ResetModifyOtherKeys + ansi.PopKittyKeyboard(1))
	if v := s.shown; v != nil {
		seq.WriteString(mouseMode(v.MouseMode, tea.MouseModeNone))
		if v.WindowTitle != "" {
			seq.WriteString(ansi.SetWindowTitle(""))
		}
	}
	seq.WriteString(ansi.ResetModeBracketedPaste + ansi.SetModeTextCursorEnable)
	if s.graphemes {
		seq.WriteString(ansi.ResetModeUnicodeCore)
	}
	seq.WriteString(ansi.ResetModeAltScreenSaveCursor)
	_, err := io.WriteString(s.out, seq.String())
	return err
}

// Resize is the terminal's new size; the next view is drawn whole.
func (s *Screen) Resize(width, height int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.width, s.height = max(width, 1), max(height, 1)
	s.cells.Resize(s.width, s.height)
	s.cells.Touched = nil
	s.scr.Resize(s.width, s.height)
	s.scr.Erase()
	s.repaint = true
}

// SetColorProfile is the colours the terminal takes (a capability report can
// raise them); the next view is drawn whole in them.
func (s *Screen) SetColorProfile(p colorprofile.Profile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == s.profile {
		return
	}
	s.profile = p
	s.scr.SetColorProfile(p)
	s.scr.Erase()
	s.repaint = true
}

// ModeReport takes the terminal's answer to Open's questions.
func (s *Screen) ModeReport(m tea.ModeReportMsg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m.Mode {
	case ansi.ModeSynchronizedOutput:
		// Reset: the terminal knows the mode and has it off, so it may be used.
		s.syncd = s.syncd || m.Value == ansi.ModeReset
	case ansi.ModeUnicodeCore:
		if !s.graphemes && (m.Value == ansi.ModeReset || m.Value == ansi.ModeSet || m.Value == ansi.ModePermanentlySet) {
			s.graphemes = true
			s.cells.Method = ansi.GraphemeWidth
			if s.open {
				_, _ = io.WriteString(s.out, ansi.SetModeUnicodeCore)
			}
			s.scr.Erase()
			s.repaint = true
		}
	}
}

// Draw shows v: at once after a quiet spell, else when the pace allows (the
// newest view then). A view like the one shown draws nothing.
func (s *Screen) Draw(v tea.View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.view = v
	if !s.open || s.timer != nil || !s.differs() {
		return
	}
	now := s.now()
	if wait := s.pace.Wait(now); wait > 0 {
		s.timer = time.AfterFunc(wait, s.drawLate)
		return
	}
	s.drawLocked(now)
}

// drawLate draws the view that waited for its turn.
func (s *Screen) drawLate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if s.open && s.differs() {
		s.drawLocked(s.now())
	}
}

// differs reports whether the terminal is to be drawn again for s.view.
func (s *Screen) differs() bool {
	return s.repaint || s.shown == nil || !sameView(s.shown, &s.view)
}

// drawLocked writes what differs between the terminal and s.view, in one
// write: inside a synchronized update where the terminal takes one, else with
// the cursor hidden while it moves.
func (s *Screen) drawLocked(now time.Time) {
	v, old := s.view, s.shown
	s.cells.Clear()
	uv.NewStyledString(v.Content).Draw(s.cells, s.cells.Bounds())
	var modes strings.Builder
	if old == nil || old.MouseMode != v.MouseMode {
		from := tea.MouseModeNone
		if old != nil {
			from = old.MouseMode
		}
		modes.WriteString(mouseMode(from, v.MouseMode))
	}
	if (old == nil && v.WindowTitle != "") || (old != nil && old.WindowTitle != v.WindowTitle) {
		modes.WriteString(ansi.SetWindowTitle(v.WindowTitle))
	}
	_, _ = s.scr.WriteString(modes.String())
	s.scr.Render(s.cells.RenderBuffer)
	if v.Cursor != nil {
		s.scr.MoveTo(v.Cursor.X, v.Cursor.Y)
	}
	_ = s.scr.Flush() // into s.frame

	visible, was := v.Cursor != nil, s.cursor
	changed := s.frame.Len() > 0
	var out bytes.Buffer
	if changed && s.syncd {
		out.WriteString(ansi.SetModeSynchronizedOutput)
	}
	if was && (!visible || (changed && !s.syncd)) {
		out.WriteString(ansi.ResetModeTextCursorEnable)
	}
	out.Write(s.frame.Bytes())
	if visible && (!was || (changed && !s.syncd)) {
		out.WriteString(ansi.SetModeTextCursorEnable)
	}
	if changed && s.syncd {
		out.WriteString(ansi.ResetModeSynchronizedOutput)
	}
	s.frame.Reset()
	if out.Len() > 0 {
		_, _ = s.out.Write(out.Bytes()) // a terminal gone away ends the app by SIGHUP
	}
	s.shown, s.cursor, s.repaint = &v, visible, false
	s.pace.Take(now)
}

// resetRenderer starts the terminal's model afresh: the next frame is drawn
// whole, with absolute cursor moves.
func (s *Screen) resetRenderer() {
	s.frame.Reset()
	scr := uv.NewTerminalRenderer(&s.frame, s.env)
	scr.SetColorProfile(s.profile)
	scr.SetFullscreen(true)
	scr.SetRelativeCursor(false)
	scr.SetScrollOptim(true)
	scr.SetTabStops(-1)
	scr.Resize(s.width, s.height)
	scr.Erase()
	s.scr = scr
	s.cells.Touched = nil
}

// mouseMode is what turns the terminal's mouse reports from one mode to
// another.
func mouseMode(from, to tea.MouseMode) string {
	if from == to {
		return ""
	}
	switch to {
	case tea.MouseModeCellMotion:
		return ansi.ResetModeMouseAnyEvent + ansi.SetModeMouseButtonEvent + ansi.SetModeMouseExtSgr
	case tea.MouseModeAllMotion:
		return ansi.ResetModeMouseButtonEvent + ansi.SetModeMouseAnyEvent + ansi.SetModeMouseExtSgr
	}
	return ansi.ResetModeMouseButtonEvent + ansi.ResetModeMouseAnyEvent + ansi.ResetModeMouseExtSgr
}

// sameView reports whether two views draw the same: the parts of a view a
// Screen draws.
func sameView(a, b *tea.View) bool {
	if a.Content != b.Content || a.MouseMode != b.MouseMode || a.WindowTitle != b.WindowTitle ||
		(a.Cursor == nil) != (b.Cursor == nil) {
		return false
	}
	return a.Cursor == nil || (a.Cursor.X == b.Cursor.X && a.Cursor.Y == b.Cursor.Y)
}

// asksModes reports whether the terminal may be asked about its modes:
// bubbletea's renderer does not ask Apple's Terminal or a terminal over SSH
// (some answer such a question badly there) unless it is one known to answer.
func asksModes(env uv.Environ) bool {
	prog := env.Getenv("TERM_PROGRAM")
	_, ssh := env.LookupEnv("SSH_TTY")
	_, windows := env.LookupEnv("WT_SESSION")
	if windows || (!ssh && !strings.Contains(prog, "Apple")) {
		return true
	}
	term := env.Getenv("TERM")
	for _, known := range []string{"ghostty", "wezterm", "alacritty", "kitty", "rio"} {
		if strings.Contains(term, known) {
			return true
		}
	}
	return false
}
