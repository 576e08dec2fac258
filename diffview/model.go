package diffview

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/internal/english"
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

	plan        Plan
	lastOutcome *Outcome
	resultTitle string
	renderGen   int // bumped when the theme changes, to drop cached renders
}

// save is one decision to persist.
type save struct {
	path, id string
	d        Decision
}

// undoEntry restores one hunk's previous decision.
type undoEntry struct {
	file int
	id   string
	prev Decision
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
	savedMsg   struct{ err error }
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
	m.tree = buildTree(m.files)
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
	case editReadyMsg:
		if msg.err != nil {
			m.setError(fmt.Sprintf("edit hunk: %v", msg.err))
			return m, nil
		}
		return m, editorCmd(m.editor, msg)
	case editExitMsg:
		return m, readEdit(msg)
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
func (m *Model) setError(s string) { m.status, m.statusErr = Escape(s), true }

// setStatus shows a message in the status line.
func (m *Model) setStatus(s string) { m.status, m.statusErr = Escape(s), false }

// key handles a key press according to the mode.
func (m Model) key(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	k := m.keys
	if m.tooSmall() {
		// Nothing on screen says what a key would do: only quitting is taken,
		// and a confirmation waits unanswered until the screen grows.
		if !key.Matches(msg, k.Quit) {
			return m, nil
		}
		m.mode = modeNormal
		if m.busy {
			m.quitting = true
			return m, nil
		}
		return m.quit()
	}
	switch m.mode {
	case modeHelp, modeResult:
		wasResult := m.mode == modeResult
		m.mode = modeNormal
		if wasResult && (key.Matches(msg, k.Quit) || key.Matches(msg, k.Rollback)) {
			// Quit and rollback stay one key away from the result.
			return m.key(msg)
		}
		return m, nil
	case modeSearch:
		switch msg.String() {
		case "enter":
			m.mode = modeNormal
			m.search = m.searchInput
			m.renderGen++
			m.find(1, false)
		case "esc":
			m.mode = modeNormal
		case "backspace":
			r := []rune(m.searchInput)
			if len(r) > 0 {
				m.searchInput = string(r[:len(r)-1])
			}
		default:
			if msg.Text != "" {
				m.searchInput += msg.Text
			}
		}
		return m, nil
	case modeConfirmApply, modeConfirmRollback:
		switch {
		case key.Matches(msg, k.Confirm):
			rollback := m.mode == modeConfirmRollback
			m.mode = modeNormal
			m.busy = true
			m.setStatus("working…")
			if m.saving {
				// Wait for the running save so the apply sees every decision.
				m.pendingApply, m.pendingRollback = true, rollback
				return m, nil
			}
			return m, m.applyCmd(rollback)
		case key.Matches(msg, k.Cancel), key.Matches(msg, k.Quit):
			m.mode = modeNormal
			m.setStatus("cancelled")
		}
		return m, nil
	}
	if m.busy {
		// Apply or rollback running: only quitting is taken, after it ends.
		if key.Matches(msg, k.Quit) {
			m.quitting = true
		}
		return m, nil
	}
	if !m.loaded {
		if key.Matches(msg, k.Quit) {
			m.quitting = true
			return m, tea.Quit
		}
		return m, nil
	}
	if m.refused(msg) {
		return m, nil
	}
	m.status = ""
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
	case key.Matches(msg, k.Focus):
		if m.focus == treePane {
			m.focus = diffPane
		} else {
			m.focus = treePane
		}
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.PageDown):
		m.move(max(1, m.diffHeight()-2))
	case key.Matches(msg, k.PageUp):
		m.move(-max(1, m.diffHeight()-2))
	case key.Matches(msg, k.Top):
		m.move(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.move(1 << 30)
	case key.Matches(msg, k.NextHunk):
		m.jumpHunk(1)
	case key.Matches(msg, k.PrevHunk):
		m.jumpHunk(-1)
	case key.Matches(msg, k.NextFile):
		m.selectFile(m.cur + 1)
	case key.Matches(msg, k.PrevFile):
		m.selectFile(m.cur - 1)
	case key.Matches(msg, k.NextUndecided):
		m.nextUndecided()
	case key.Matches(msg, k.Accept), key.Matches(msg, k.Reject):
		v := Accepted
		if key.Matches(msg, k.Reject) {
			v = Rejected
		}
		if m.focus == treePane {
			m.decideFile(v)
		} else {
			m.decideHunk(v)
		}
		return m, m.flush()
	case key.Matches(msg, k.AcceptFile):
		m.decideFile(Accepted)
		return m, m.flush()
	case key.Matches(msg, k.RejectFile):
		m.decideFile(Rejected)
		return m, m.flush()
	case key.Matches(msg, k.AcceptAll):
		m.acceptAll()
		return m, m.flush()
	case key.Matches(msg, k.Undo):
		m.undoLast()
		return m, m.flush()
	case key.Matches(msg, k.Split):
		m.split()
		return m, m.flush()
	case key.Matches(msg, k.SelectLine):
		m.toggleLine()
	case key.Matches(msg, k.Edit):
		return m, m.editCmd()
	case key.Matches(msg, k.ToggleView):
		m.toggleView()
	case key.Matches(msg, k.ScrollRight):
		if m.focus == diffPane {
			m.scrollX(1)
		}
	case key.Matches(msg, k.ScrollLeft):
		if m.focus == diffPane {
			m.scrollX(-1)
		}
	case key.Matches(msg, k.Expand):
		if f := m.file(); f != nil && f.Ignored {
			f.expanded = !f.expanded
			f.invalidate()
			m.clampAll()
		}
	case msg.String() == "esc" && m.search != "":
		m.search = ""
		m.renderGen++
	case key.Matches(msg, k.Search):
		m.mode = modeSearch
		m.searchInput = ""
	case key.Matches(msg, k.NextMatch):
		m.find(1, true)
	case key.Matches(msg, k.PrevMatch):
		m.find(-1, true)
	case key.Matches(msg, k.Apply):
		m.plan = MakePlan(m.Files())
		m.mode = modeConfirmApply
	case key.Matches(msg, k.Rollback):
		m.mode = modeConfirmRollback
	}
	return m, nil
}

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
	if m.cur < 0 || m.cur >= len(m.files) {
		return nil
	}
	return m.files[m.cur]
}

// bodyHeight is the number of rows of the panes (the status bar takes one, and a long message
// the rows above it).
func (m *Model) bodyHeight() int { return max(1, m.height-1-len(m.statusMessageRows())) }

// move moves the cursor of the focused pane by n rows.
func (m *Model) move(n int) {
	if m.focus == treePane {
		m.selectFile(m.cur + max(-len(m.files), min(n, len(m.files))))
		return
	}
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(m.sideBySide)
	f.cursor = max(0, min(len(rows)-1, f.cursor+max(-len(rows), min(n, len(rows)))))
	m.scrollTo(f)
}

// wheel scrolls the pane under the mouse.
func (m *Model) wheel(msg tea.MouseWheelMsg) {
	step := 0
	switch msg.Button {
	case tea.MouseWheelDown:
		step = 3
	case tea.MouseWheelUp:
		step = -3
	default:
		return
	}
	if m.showTree() && msg.X < m.treeWidth() {
		m.treeTop = max(0, min(len(m.tree)-m.bodyHeight(), m.treeTop+step))
		return
	}
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(m.sideBySide)
	f.top = max(0, min(len(rows)-m.diffHeight(), f.top+step))
	f.cursor = max(f.top, min(f.cursor, f.top+m.diffHeight()-1, len(rows)-1))
}

// click selects the file or diff row under a left click and focuses its
// pane.
func (m *Model) click(msg tea.MouseClickMsg) {
	if msg.Button != tea.MouseLeft || m.mode != modeNormal || !m.loaded || m.busy || msg.Y >= m.bodyHeight() {
		return
	}
	if m.showTree() && msg.X < m.treeWidth() {
		m.focus = treePane
		if i := m.treeTop + msg.Y; i < len(m.tree) && m.tree[i].file >= 0 {
			m.selectFile(m.tree[i].file)
		}
		return
	}
	f := m.file()
	if f == nil || msg.Y == 0 {
		return
	}
	m.focus = diffPane
	rows := f.rows(m.sideBySide)
	if i := f.top + msg.Y - 1; i < len(rows) {
		f.cursor = i
	}
}

// scrollTo keeps the diff cursor on screen with a little margin.
func (m *Model) scrollTo(f *fileView) {
	h := m.diffHeight()
	margin := min(3, h/4)
	if f.cursor < f.top+margin {
		f.top = max(0, f.cursor-margin)
	}
	if f.cursor >= f.top+h-margin {
		f.top = f.cursor - h + margin + 1
	}
	rows := f.rows(m.sideBySide)
	f.top = max(0, min(f.top, len(rows)-h))
}

// clampAll keeps cursors and scroll positions valid after a size change.
func (m *Model) clampAll() {
	m.cur = max(0, min(m.cur, len(m.files)-1))
	if f := m.file(); f != nil {
		rows := f.rows(m.sideBySide)
		f.cursor = max(0, min(f.cursor, len(rows)-1))
		m.scrollTo(f)
	}
	m.scrollTree()
}

// selectFile selects file i (clamped) and keeps it visible in the tree.
func (m *Model) selectFile(i int) {
	if len(m.files) == 0 {
		return
	}
	m.cur = max(0, min(i, len(m.files)-1))
	m.clampAll()
}

// scrollTree keeps the selected file on screen in the tree.
func (m *Model) scrollTree() {
	at := 0
	for i, t := range m.tree {
		if t.file == m.cur {
			at = i
			break
		}
	}
	h := m.bodyHeight()
	if at < m.treeTop {
		m.treeTop = max(0, at-1)
	}
	if at >= m.treeTop+h {
		m.treeTop = at - h + 1
	}
}

// jumpHunk moves the cursor to the next (dir 1) or previous hunk header.
func (m *Model) jumpHunk(dir int) {
	m.focus = diffPane
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(m.sideBySide)
	for i := f.cursor + dir; i >= 0 && i < len(rows); i += dir {
		if rows[i].kind == rowHunk {
			f.cursor = i
			m.scrollTo(f)
			return
		}
	}
}

// nextUndecided moves to the next undecided hunk after the cursor, across
// files, wrapping around to the current file's earlier hunks.
func (m *Model) nextUndecided() {
	f := m.file()
	if f == nil {
		return
	}
	n := len(m.files)
	start := rowHunkIndex(f.rows(m.sideBySide), f.cursor)
	for step := 0; step <= n; step++ {
		fi := (m.cur + step) % n
		fv := m.files[fi]
		for hi, h := range fv.hunks {
			if step == 0 && hi <= start {
				continue
			}
			if step == n && hi > start {
				break
			}
			if fv.Decisions[h.ID].Verdict != Undecided {
				continue
			}
			if fv.Ignored && !fv.expanded {
				fv.expanded = true
				fv.invalidate()
			}
			m.cur = fi
			fv.cursor = max(0, hunkRow(fv.rows(m.sideBySide), hi))
			m.focus = diffPane
			m.clampAll()
			return
		}
	}
	m.setStatus("no undecided hunk left")
}

// cursorHunk is the index of the hunk under the diff cursor, or -1.
func (m *Model) cursorHunk() (*fileView, int) {
	f := m.file()
	if f == nil {
		return nil, -1
	}
	rows := f.rows(m.sideBySide)
	hi := rowHunkIndex(rows, f.cursor)
	if hi < 0 {
		// On the notes above the first hunk: the first hunk.
		if len(f.hunks) > 0 && (!f.Ignored || f.expanded) {
			return f, 0
		}
	}
	return f, hi
}

// record sets decisions, queues them for saving and pushes one undo step.
func (m *Model) record(f *fileView, ds map[string]Decision) {
	if len(ds) == 0 {
		return
	}
	fi := m.indexOf(f)
	var step []undoEntry
	ids := make([]string, 0, len(ds))
	for id := range ds {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		d := ds[id]
		step = append(step, undoEntry{file: fi, id: id, prev: f.Decisions[id]})
		m.set(f, id, d)
	}
	m.undo = append(m.undo, step)
}

// set changes one decision in memory and queues it for saving.
func (m *Model) set(f *fileView, id string, d Decision) {
	f.countsValid = false
	if d.Verdict == Undecided {
		delete(f.Decisions, id)
	} else {
		f.Decisions[id] = d
	}
	m.saves = append(m.saves, save{path: f.Path, id: id, d: d})
}

// indexOf finds a file's index.
func (m *Model) indexOf(f *fileView) int {
	for i, g := range m.files {
		if g == f {
			return i
		}
	}
	return -1
}

// decideHunk accepts or rejects the hunk under the cursor, or only its
// selected lines when some are selected.
func (m *Model) decideHunk(v Verdict) {
	f, hi := m.cursorHunk()
	if hi < 0 {
		return
	}
	h := f.hunks[hi]
	d := Decision{Verdict: v}
	if sel := f.selected[h.ID]; len(sel) > 0 {
		// Accepting selected lines takes just them; rejecting them takes
		// every other changed line.
		var lines []int
		for i, l := range h.Lines {
			if l.Op != Context && sel[i] == (v == Accepted) {
				lines = append(lines, i)
			}
		}
		d = Decision{Verdict: Accepted, Lines: lines}
		if len(lines) == 0 {
			d = Decision{Verdict: Rejected}
		}
		delete(f.selected, h.ID)
	}
	m.record(f, map[string]Decision{h.ID: d})
	m.advance(f, hi)
}

// advance moves the cursor to the next hunk after a decision.
func (m *Model) advance(f *fileView, hi int) {
	if hi+1 < len(f.hunks) {
		f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi+1))
		m.scrollTo(f)
	}
}

// decideFile accepts or rejects every hunk of the selected file.
func (m *Model) decideFile(v Verdict) {
	f := m.file()
	if f == nil {
		return
	}
	ds := map[string]Decision{}
	for _, h := range f.hunks {
		ds[h.ID] = Decision{Verdict: v}
		delete(f.selected, h.ID)
	}
	m.record(f, ds)
}

// acceptAll accepts every undecided hunk of every file that is not
// ignored, protected, in conflict, special or flagged by the audit (those
// are decided one by one).
func (m *Model) acceptAll() {
	var step []undoEntry
	n := 0
	for fi, f := range m.files {
		if f.Ignored || f.Protected || f.Conflict != "" || f.Special != "" || len(f.Findings) > 0 {
			continue
		}
		for _, h := range f.hunks {
			if _, conflict := f.conflictOf(h.ID); f.Decisions[h.ID].Verdict != Undecided || conflict {
				continue
			}
			step = append(step, undoEntry{file: fi, id: h.ID, prev: f.Decisions[h.ID]})
			m.set(f, h.ID, Decision{Verdict: Accepted})
			n++
		}
	}
	if n > 0 {
		m.undo = append(m.undo, step)
	}
	m.setStatus(fmt.Sprintf("accepted %s (ignored, protected, conflicting and flagged files left for you)", english.Count(n, "undecided hunk")))
}

// undoLast restores the decisions changed by the last step.
func (m *Model) undoLast() {
	if len(m.undo) == 0 {
		m.setStatus("nothing to undo")
		return
	}
	step := m.undo[len(m.undo)-1]
	m.undo = m.undo[:len(m.undo)-1]
	for i := len(step) - 1; i >= 0; i-- {
		e := step[i]
		if e.file < 0 || e.file >= len(m.files) {
			continue
		}
		f := m.files[e.file]
		m.set(f, e.id, e.prev)
		if !hasHunk(f.hunks, e.id) {
			// The decision of a hunk split since: show it whole again.
			f.hunks, _ = Resolve(Items(f.File), f.Decisions)
			f.invalidate()
		}
	}
	if e := step[0]; e.file >= 0 && e.file < len(m.files) {
		m.cur = e.file
		f := m.files[e.file]
		for hi, h := range f.hunks {
			if h.ID == e.id {
				f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi))
			}
		}
		m.clampAll()
	}
	m.setStatus("undone")
}

// hasHunk reports whether a hunk with the id is among hunks.
func hasHunk(hunks []Hunk, id string) bool {
	for _, h := range hunks {
		if h.ID == id {
			return true
		}
	}
	return false
}

// split replaces the hunk under the cursor by its pieces.
func (m *Model) split() {
	f, hi := m.cursorHunk()
	if hi < 0 {
		return
	}
	pieces := Split(f.hunks[hi])
	if len(pieces) < 2 {
		m.setStatus("this hunk cannot be split further")
		return
	}
	h := f.hunks[hi]
	if _, ok := f.Decisions[h.ID]; ok {
		// The pieces are decided from scratch; undo brings the old
		// decision back, and the hunk whole.
		m.record(f, map[string]Decision{h.ID: {}})
	}
	delete(f.selected, h.ID)
	f.hunks = append(f.hunks[:hi:hi], append(pieces, f.hunks[hi+1:]...)...)
	f.invalidate()
	f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi))
	m.scrollTo(f)
	m.setStatus(fmt.Sprintf("split into %s", english.Count(len(pieces), "hunk")))
}

// toggleLine selects or unselects the changed line under the cursor.
func (m *Model) toggleLine() {
	if m.sideBySide {
		m.setStatus("line selection works in unified view (v)")
		return
	}
	f := m.file()
	if f == nil {
		return
	}
	rows := f.rows(false)
	if f.cursor >= len(rows) || rows[f.cursor].kind != rowLine {
		return
	}
	r := rows[f.cursor]
	h := f.hunks[r.hunk]
	if h.Lines[r.line].Op == Context {
		return
	}
	sel := f.selected[h.ID]
	if sel == nil {
		sel = map[int]bool{}
		f.selected[h.ID] = sel
	}
	if sel[int(r.line)] {
		delete(sel, int(r.line))
	} else {
		sel[int(r.line)] = true
	}
	m.move(1)
}

// toggleView switches unified and side-by-side, keeping the cursor on the
// same hunk.
func (m *Model) toggleView() {
	f := m.file()
	m.sideBySide = !m.sideBySide
	if f == nil {
		return
	}
	hi := rowHunkIndex(f.rows(!m.sideBySide), f.cursor)
	if hi >= 0 {
		f.cursor = max(0, hunkRow(f.rows(m.sideBySide), hi))
	}
	m.clampAll()
}

// find moves to the next (dir 1) or previous match of the search, across
// files, wrapping around.
func (m *Model) find(dir int, skipCurrent bool) {
	if m.search == "" || len(m.files) == 0 {
		return
	}
	needle := asciiLower(m.search)
	fi := m.cur
	start := m.files[fi].cursor
	if skipCurrent {
		start += dir
	}
	for n := 0; n <= len(m.files); n++ {
		f := m.files[fi]
		rows := f.rows(m.sideBySide)
		if n > 0 {
			start = 0
			if dir < 0 {
				start = len(rows) - 1
			}
		}
		for i := start; i >= 0 && i < len(rows); i += dir {
			if containsFold(f.lineText(rows[i]), needle) {
				m.cur = fi
				f.cursor = i
				m.focus = diffPane
				m.clampAll()
				m.revealMatch(f, rows[i], needle)
				m.setStatus("/" + Escape(m.search))
				return
			}
		}
		fi = (fi + dir + len(m.files)) % len(m.files)
	}
	m.setError("not found: " + Escape(m.search))
}

// containsFold reports whether hay contains needle (already lower-case),
// ignoring ASCII case, without allocating: search runs over every row of a
// file on each n, so candidates are found with IndexByte.
func containsFold(hay, needle string) bool {
	if needle == "" {
		return true
	}
	first := needle[0]
	upper := first
	if first >= 'a' && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for pos := 0; pos+len(needle) <= len(hay); {
		i := strings.IndexByte(hay[pos:], first)
		if upper != first {
			if j := strings.IndexByte(hay[pos:], upper); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i < 0 || pos+i+len(needle) > len(hay) {
			return false
		}
		at := pos + i
		match := true
		for k := 1; k < len(needle); k++ {
			c := hay[at+k]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != needle[k] {
				match = false
				break
			}
		}
		if match {
			return true
		}
		pos = at + 1
	}
	return false
}

// flush starts saving queued decisions unless a save is running; saves run
// one at a time so they reach the source in the order they were made.
func (m *Model) flush() tea.Cmd {
	if m.saving || m.busy {
		return nil
	}
	if len(m.saves) == 0 {
		if m.quitting {
			return tea.Quit
		}
		return nil
	}
	batch := m.saves
	m.saves = nil
	m.saving = true
	src := m.src
	return func() tea.Msg {
		if src == nil {
			return savedMsg{}
		}
		for _, s := range batch {
			if err := src.Decide(s.path, s.id, s.d); err != nil {
				return savedMsg{err: fmt.Errorf("%s: %w", Escape(s.path), err)}
			}
		}
		return savedMsg{}
	}
}

// applyCmd applies the confirmed plan, or rolls back, once pending
// decisions are saved (the source runs commands in order only if we wait,
// so the decisions travel with the plan's files).
func (m *Model) applyCmd(rollback bool) tea.Cmd {
	src, plan := m.src, m.plan
	batch := m.saves
	m.saves = nil
	return func() tea.Msg {
		if src == nil {
			return appliedMsg{err: errors.New("no source"), rollback: rollback}
		}
		for _, s := range batch {
			if err := src.Decide(s.path, s.id, s.d); err != nil {
				return appliedMsg{err: fmt.Errorf("%s: %w", Escape(s.path), err), rollback: rollback, unsaved: true}
			}
		}
		var out Outcome
		var err error
		if rollback {
			out, err = src.Rollback()
		} else {
			out, err = src.Apply(plan)
		}
		return appliedMsg{out: out, err: err, rollback: rollback}
	}
}

// applied shows the result of an apply or rollback and reloads the files.
func (m Model) applied(msg appliedMsg) (Model, tea.Cmd) {
	m.busy = false
	what := "apply"
	if msg.rollback {
		what = "rollback"
	}
	if msg.unsaved {
		return m.unsaved(msg.err)
	}
	if msg.err != nil {
		m.setError(fmt.Sprintf("%s: %v", what, msg.err))
		return m, m.flush()
	}
	out := msg.out
	m.lastOutcome = &out
	s := fmt.Sprintf("%s done: %d written", what, len(out.Written))
	if len(out.LeftOut) > 0 {
		s += fmt.Sprintf(", %d left out", len(out.LeftOut))
	}
	if out.ApplyID != "" {
		s += " (" + Escape(out.ApplyID) + ")"
	}
	if out.Message != "" {
		s += ": " + Escape(out.Message)
	}
	if !msg.rollback {
		s += " — b rolls back"
	}
	m.setStatus(s)
	m.resultTitle = what + " done"
	m.mode = modeResult
	if m.quitting {
		return m, tea.Quit
	}
	return m, m.load()
}

// editCmd writes the hunk under the cursor to a temporary file for the
// editor.
func (m *Model) editCmd() tea.Cmd {
	f, hi := m.cursorHunk()
	if hi < 0 || f.hunks[hi].Lines == nil {
		return nil
	}
	h := f.hunks[hi]
	text := EditText(h)
	if d := f.Decisions[h.ID]; d.Edit != "" {
		if e, err := ParseEdit(h, d.Edit); err == nil {
			text = EditText(e)
		}
	}
	fi := m.indexOf(f)
	return func() tea.Msg {
		tmp, err := os.CreateTemp("", "shadow-hunk-*.diff")
		if err != nil {
			return editReadyMsg{err: err}
		}
		_, werr := tmp.WriteString(text)
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return editReadyMsg{err: fmt.Errorf("write %s: %w", tmp.Name(), errors.Join(werr, cerr))}
		}
		return editReadyMsg{file: fi, id: h.ID, tmp: tmp.Name()}
	}
}

// editorCmd runs the editor on the hunk file, giving it the terminal.
func editorCmd(editor string, msg editReadyMsg) tea.Cmd {
	args := strings.Fields(editor)
	if len(args) == 0 {
		args = []string{"vi"}
	}
	c := exec.Command(args[0], append(args[1:], msg.tmp)...)
	return tea.ExecProcess(c, func(err error) tea.Msg {
		return editExitMsg{file: msg.file, id: msg.id, tmp: msg.tmp, err: err}
	})
}

// readEdit reads back and removes the edited hunk file.
func readEdit(msg editExitMsg) tea.Cmd {
	return func() tea.Msg {
		defer os.Remove(msg.tmp)
		if msg.err != nil {
			return editedMsg{file: msg.file, id: msg.id, err: fmt.Errorf("editor: %w", msg.err)}
		}
		b, err := os.ReadFile(msg.tmp)
		return editedMsg{file: msg.file, id: msg.id, text: string(b), err: err}
	}
}

// edited validates an edited hunk and records it as accepted.
func (m *Model) edited(msg editedMsg) {
	if msg.err != nil {
		m.setError(fmt.Sprintf("edit hunk: %v", msg.err))
		return
	}
	if msg.file < 0 || msg.file >= len(m.files) {
		return
	}
	f := m.files[msg.file]
	for _, h := range f.hunks {
		if h.ID != msg.id {
			continue
		}
		e, err := ParseEdit(h, msg.text)
		if errors.Is(err, ErrEmptyEdit) {
			m.setStatus("edit abandoned")
			return
		}
		if err != nil {
			m.setError(fmt.Sprintf("edit hunk: %v", err))
			return
		}
		m.record(f, map[string]Decision{h.ID: {Verdict: Accepted, Edit: e.Text()}})
		m.setStatus("edited hunk accepted")
		return
	}
	m.setError("edit hunk: the hunk is gone (the changes were reloaded)")
}
