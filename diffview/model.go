package diffview

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// pane is which side of the screen has the keyboard.
type pane uint8

const (
	treePane pane = iota
	diffPane
)

// mode is what the keyboard is doing besides moving around.
type mode uint8

const (
	modeNormal mode = iota
	modeSearch
	modeConfirmApply
	modeConfirmRollback
	modeHelp
	modeResult
)

// Model is the review browser: a tree of changed files beside the diff of
// the selected one, where each hunk (or line) is accepted or rejected and
// the accepted ones are applied. It does no I/O itself: loading, saving
// decisions, applying and rolling back run as tea commands on its Source.
type Model struct {
	src    Source
	keys   KeyMap
	styles Styles
	help   help.Model
	editor string

	width, height int
	files         []*fileView
	tree          []treeRow
	cur           int // index into files
	treeTop       int
	focus         pane
	mode          mode
	sideBySide    bool
	loaded        bool
	status        string
	statusErr     bool

	// readOnly is set while the source says it takes no change (see
	// ReadOnlyReporter), or always with WithReadOnly; readOnlyWhy is the
	// reason the refused keys give.
	readOnly, forceReadOnly bool
	readOnlyWhy             string

	search      string
	searchInput string

	saves    []save // decisions waiting to be saved, in order
	saving   bool
	quitting bool
	// busy is set while an apply or rollback runs; pendingApply while one
	// waits for a running save.
	busy, pendingApply, pendingRollback bool
	undo                                [][]undoEntry

	// narrow, when set, shows only what one step of the source's history changed (steps.go);
	// stepGen counts the moves along the history, so that only the last one's load lands.
	narrow  *narrowing
	stepGen int

	plan        Plan
	lastOutcome *Outcome
	resultTitle string
	renderGen   int // bumped when the theme changes, to drop cached renders
	exec        ExecFunc
}

// save is one decision to persist.
type save struct {
	path, id string
	d        diff.Decision
}

// undoEntry restores one hunk's previous decision.
type undoEntry struct {
	file int
	id   string
	prev diff.Decision
}

// Option configures a Model.
type Option func(*Model)

// WithSource sets where the files come from and where decisions, applies
// and rollbacks go.
func WithSource(s Source) Option { return func(m *Model) { m.src = s } }

// WithKeyMap replaces the key bindings.
func WithKeyMap(k KeyMap) Option { return func(m *Model) { m.keys = k } }

// WithStyles replaces the theme.
func WithStyles(s Styles) Option { return func(m *Model) { m.styles = s } }

// WithEditor sets the command that edits a hunk (default $VISUAL, $EDITOR,
// then vi); it may carry arguments ("code -w").
func WithEditor(cmd string) Option { return func(m *Model) { m.editor = cmd } }

// WithReadOnly shows the changes without letting them be decided, applied
// or rolled back (the review of a run still going on): the screen says it
// is read-only, those keys are refused with the reason (the source's, see
// ReadOnlyReporter) and left out of the help.
func WithReadOnly(on bool) Option { return func(m *Model) { m.forceReadOnly = on } }

// WithSideBySide starts in side-by-side view.
func WithSideBySide(on bool) Option { return func(m *Model) { m.sideBySide = on } }

// WithExec sets how the editor is given the terminal (default
// tea.ExecProcess): an app that draws its own frames gives its terminal up
// and takes it back around the editor.
func WithExec(run ExecFunc) Option { return func(m *Model) { m.exec = run } }

// ExecFunc runs c on the terminal and returns fn's message once c ends.
type ExecFunc func(c *exec.Cmd, fn tea.ExecCallback) tea.Cmd

// New makes a review browser; Init loads the files from its Source.
func New(opts ...Option) Model {
	m := Model{keys: DefaultKeyMap(), styles: DefaultStyles(true), help: help.New(), focus: diffPane}
	m.editor = os.Getenv("VISUAL")
	if m.editor == "" {
		m.editor = os.Getenv("EDITOR")
	}
	if m.editor == "" {
		m.editor = "vi"
	}
	for _, o := range opts {
		o(&m)
	}
	m.setReadOnly("")
	m.help.Styles = help.DefaultStyles(true)
	return m
}

// SetSize sets the screen area the browser draws in.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	// The help is not cut by width: viewStatus picks the form that fits.
	m.clampAll()
}

// Width is the browser's width.
func (m Model) Width() int { return m.width }

// Height is the browser's height.
func (m Model) Height() int { return m.height }

// KeyMap is the browser's key bindings.
func (m Model) KeyMap() KeyMap { return m.keys }

// Files is the browser's files with their current decisions.
func (m Model) Files() []File {
	out := make([]File, len(m.files))
	for i, f := range m.files {
		out[i] = f.File
	}
	return out
}

// Quitting reports whether the browser asked to quit.
func (m Model) Quitting() bool { return m.quitting }

// Messages of the commands the browser runs.
type (
	loadedMsg struct {
		files    []File
		err      error
		readOnly string // why the source takes no change, or ""
	}
	savedMsg struct{ err error }
	// takenMsg is the end of a take from the other session, with the files loaded again.
	takenMsg struct {
		path, other string
		err         error
		loaded      loadedMsg
	}
	appliedMsg struct {
		out      Outcome
		err      error
		rollback bool
		unsaved  bool // err is a decision the source did not save
	}
	editReadyMsg struct {
		file int
		id   string
		tmp  string
		err  error
	}
	editExitMsg struct {
		file int
		id   string
		tmp  string
		err  error
	}
	editedMsg struct {
		file int
		id   string
		text string
		err  error
	}
)

// Init starts loading the files.
func (m Model) Init() tea.Cmd { return m.load() }

// load reads the files from the source.
func (m Model) load() tea.Cmd {
	src := m.src
	return func() tea.Msg {
		if src == nil {
			return loadedMsg{err: errors.New("review: no source of changes")}
		}
		files, err := src.Load()
		return loadedMsg{files: files, err: err, readOnly: readOnlyOf(src)}
	}
}

// takeCmd stages the other session's version of the selected file (Taker), then loads the files
// again.
func (m *Model) takeCmd() tea.Cmd {
	t, ok := m.src.(Taker)
	switch {
	case !ok:
		m.setStatus("no other session to take from: open the review with --with OTHER")
		return nil
	case m.busy:
		return nil
	case m.cur >= len(m.files):
		return nil
	}
	path, src := m.files[m.cur].File.Path, m.src
	m.busy = true
	m.setStatus(fmt.Sprintf("taking %s's version of %s…", t.Other(), path))
	return func() tea.Msg {
		err := t.TakeOther(path)
		msg := takenMsg{path: path, other: t.Other(), err: err}
		if err == nil {
			files, lerr := src.Load()
			msg.loaded = loadedMsg{files: files, err: lerr, readOnly: readOnlyOf(src)}
		}
		return msg
	}
}

// SetFiles shows files directly, as a load would (for a caller that has
// them already).
func (m *Model) SetFiles(files []File) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	path := ""
	if m.cur < len(m.files) {
		path = m.files[m.cur].Path
	}
	m.files = make([]*fileView, len(files))
	m.cur = 0
	for i, f := range files {
		m.files[i] = newFileView(f)
		if f.Path == path {
			m.cur = i
		}
	}
	m.restep()
	m.loaded = true
	m.undo = nil
	m.clampAll()
}

// Update handles keys, mouse and the results of its commands.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
	case tea.BackgroundColorMsg:
		m.styles = DefaultStyles(msg.IsDark())
		m.help.Styles = help.DefaultStyles(msg.IsDark())
		m.renderGen++
	case loadedMsg:
		m.setReadOnly(msg.readOnly)
		if msg.err != nil {
			m.setError(fmt.Sprintf("load changes: %v", msg.err))
			m.loaded = true
			return m, nil
		}
		m.SetFiles(msg.files)
	case savedMsg:
		m.saving = false
		if msg.err != nil {
			return m.unsaved(msg.err)
		}
		if m.pendingApply {
			m.pendingApply = false
			return m, m.applyCmd(m.pendingRollback)
		}
		return m, m.flush()
	case appliedMsg:
		return m.applied(msg)
	case takenMsg:
		m.busy = false
		if msg.err != nil {
			m.setError(fmt.Sprintf("take %s from %s: %v", msg.path, msg.other, msg.err))
			return m, nil
		}
		if msg.loaded.err != nil {
			m.setError(fmt.Sprintf("load changes: %v", msg.loaded.err))
			return m, nil
		}
		m.SetFiles(msg.loaded.files)
		m.setStatus(fmt.Sprintf("took %s's version of %s (a step of its own: shadow log, shadow revert)", msg.other, msg.path))
	case editReadyMsg:
		if msg.err != nil {
			m.setError(fmt.Sprintf("edit hunk: %v", msg.err))
			return m, nil
		}
		return m, editorCmd(m.exec, m.editor, msg)
	case editExitMsg:
		return m, readEdit(msg)
	case stepLoadedMsg:
		m.stepLoaded(msg)
	case editedMsg:
		m.edited(msg)
		return m, m.flush()
	case tea.MouseWheelMsg:
		m.wheel(msg)
	case tea.MouseClickMsg:
		m.click(msg)
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// setError shows an error in the status line.
// Messages carry paths and errors from the change set, so they are escaped.
func (m *Model) setError(s string) { m.status, m.statusErr = diff.EscapeLine(s), true }

// setStatus shows a message in the status line.
func (m *Model) setStatus(s string) { m.status, m.statusErr = diff.EscapeLine(s), false }

// quit ends the review once the decisions made are saved.
func (m Model) quit() (Model, tea.Cmd) {
	m.quitting = true
	if m.saving || len(m.saves) > 0 {
		m.setStatus("saving decisions…")
		return m, nil
	}
	return m, tea.Quit
}

// file is the selected file, or nil.
func (m *Model) file() *fileView {
	if m.cur < 0 || m.cur >= len(m.files) || m.files[m.cur].hidden() {
		return nil
	}
	return m.files[m.cur]
}

// bodyHeight is the number of rows of the panes (the status bar takes one, and a long message
// the rows above it).
func (m *Model) bodyHeight() int { return max(1, m.height-1-len(m.statusMessageRows())) }
