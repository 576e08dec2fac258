package diffview

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// History is a Source whose change set was made in steps: a session's checkpoints (SPEC §12).
// The review can narrow its files and hunks to what one step changed, and move along the steps;
// the hunks shown are still those of the whole change set, so a decision made there is the same
// decision as anywhere else.
type History interface {
	// Steps lists the steps, oldest first.
	Steps() ([]Step, error)
	// StepChanges says what the step with the id changed, and what came after it.
	StepChanges(id string) (StepChanges, error)
}

// Step is one step of a change set's history.
type Step struct {
	ID      string    // "c3"
	Trigger string    // what ended it: "prompt", "quiet", "manual", "run end"
	Time    time.Time // when it ended
	Prompt  string    // the first line of the prompt it answered, "" for none
}

// named is the step's id, with the prompt it answered quoted after it.
func (s Step) named() string {
	if s.Prompt == "" {
		return s.ID
	}
	return fmt.Sprintf("%s %q", s.ID, s.Prompt)
}

// StepChanges are the patches of one step: Step from the tree before it to the tree after it,
// and Later from the tree after it to the last (what the later steps changed). Each patch is of
// one path (OldPath and NewPath are the same).
type StepChanges struct {
	Step, Later []diff.FilePatch
	// Files, Added and Removed are what the step changed, counted as `shadow log` counts it
	// (session.CountStep): a step whose work a later one undid still changed them.
	Files, Added, Removed int
	// Requests counts what the step sent through the allow-list proxy (`shadow net`), Denied
	// those the proxy refused, DeniedTo their destinations, in order, each once.
	Requests, Denied int
	DeniedTo         []string
	// Sent are the step's requests, in order, which the narrowed view lists beside its files.
	Sent []StepRequest
}

// StepRequest is one request a step sent through the allow-list proxy (`shadow net` says more of
// it). The source escapes its strings for the terminal.
type StepRequest struct {
	Method      string // GET, CONNECT, …
	Destination string // the URL where the proxy saw one, the CONNECT target otherwise
	Status      int    // the HTTP status the jail got; 0 for none
	Allowed     bool
}

// stepMarks is where one step's changes to a path lie in the path's latest text (the new side
// of the whole change set's hunks).
//
// Positions are counted in doubled units, so that a line and the gap beside it are neighbours:
// 2i+1 is line i (0-based), 2g is the gap before line g (2n is the end of an n-line text).
//
// The step's own changes are found by diffing the text before it with the text after it: every
// line it added is a position (a line), and every line it removed is the gap it left. Those are
// carried to the latest text through the diff of the text after the step with the latest one: a
// line that survives lands on its line there, and a line a later step removed or replaced lands on
// the gap it left (so a line the step added and a later step rewrote still points at the rewrite).
//
// A hunk of the whole change set has positions of the same kind: its added lines, and the gaps
// its removed lines leave. It belongs to the step when one of its positions is one of the step's
// or next to one (they differ by at most 1: the same line, the same gap, or a gap at either edge
// of a line). Context lines of a hunk never make it belong: a step whose change was undone later
// claims no hunk that merely shows the restored lines around other changes.
type stepMarks struct {
	// whole: the step changed the path in a way lines do not tell (binary or too large to show,
	// a symlink becoming a file or the reverse): every item of the file belongs.
	whole bool
	// mode: the step changed the path's mode.
	mode bool
	// points are the step's positions in the latest text, sorted.
	points []int
}

// markSteps works out, for every path the step changed, where its changes lie in the path's
// latest text.
func markSteps(sc StepChanges) map[string]*stepMarks {
	later := make(map[string]diff.FilePatch, len(sc.Later))
	for _, p := range sc.Later {
		later[patchPath(p)] = p
	}
	out := make(map[string]*stepMarks, len(sc.Step))
	for _, p := range sc.Step {
		l, changedLater := later[patchPath(p)]
		out[patchPath(p)] = markStep(p, l, changedLater)
	}
	return out
}

func patchPath(p diff.FilePatch) string {
	if p.NewPath != "" {
		return p.NewPath
	}
	return p.OldPath
}

// markStep is stepMarks of one path: step is what the step did to it, later (when changedLater)
// what the later steps did.
func markStep(step, later diff.FilePatch, changedLater bool) *stepMarks {
	m := &stepMarks{mode: step.OldMode != step.NewMode && step.OldMode != 0 && step.NewMode != 0}
	if textless(step) || (changedLater && textless(later)) {
		m.whole = true
		return m
	}
	// The step's positions in the text after it.
	var pos []int
	n := 0
	lines, _ := diff.DiffLines(step.Old, step.New, 0)
	for _, l := range lines {
		switch l.Op {
		case diff.Context:
			n++
		case diff.Insert:
			pos = append(pos, 2*n+1)
			n++
		case diff.Delete:
			pos = append(pos, 2*n)
		}
	}
	if changedLater {
		pos = carry(pos, step.New, later.New)
	}
	sort.Ints(pos)
	m.points = compactInts(pos)
	return m
}

// textless reports whether a patch's change is not one of lines: binary, too large to show, or a
// change between a symlink and anything else.
func textless(p diff.FilePatch) bool {
	if p.TooLarge || p.Binary || diff.IsBinary(p.Old) || diff.IsBinary(p.New) {
		return true
	}
	return p.OldMode != 0 && p.NewMode != 0 && diff.IsLink(p.OldMode) != diff.IsLink(p.NewMode)
}

// carry moves positions in text from to the same places in text to, through their line diff.
func carry(pos []int, from, to []byte) []int {
	lines, _ := diff.DiffLines(from, to, 0)
	// lineAt[i] is where line i of from went; gapAt[g] where the gap before it went.
	nFrom := len(diff.SplitLines(from))
	lineAt, gapAt := make([]int, nFrom), make([]int, nFrom+1)
	i, j := 0, 0
	for _, l := range lines {
		switch l.Op {
		case diff.Context:
			gapAt[i], lineAt[i] = 2*j, 2*j+1
			i++
			j++
		case diff.Delete:
			gapAt[i], lineAt[i] = 2*j, 2*j
			i++
		case diff.Insert:
			j++
		}
	}
	gapAt[nFrom] = 2 * j
	out := make([]int, 0, len(pos))
	for _, p := range pos {
		if p%2 == 1 {
			out = append(out, lineAt[p/2])
		} else {
			out = append(out, gapAt[p/2])
		}
	}
	return out
}

func compactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// hunkPoints are a hunk's positions in the new text: its added lines and the gaps its removed
// lines leave.
func hunkPoints(h diff.Hunk) []int {
	var out []int
	n := max(h.NewStart-1, 0) // NewStart is 1-based; for an empty side, the line it comes before
	for _, l := range h.Lines {
		switch l.Op {
		case diff.Context:
			n++
		case diff.Insert:
			out = append(out, 2*n+1)
			n++
		case diff.Delete:
			out = append(out, 2*n)
		}
	}
	return out
}

// hasHunk reports whether hunk h of the whole change set belongs to the step (see stepMarks).
func (m *stepMarks) hasHunk(h diff.Hunk) bool {
	if m.whole {
		return true
	}
	for _, q := range hunkPoints(h) {
		i := sort.SearchInts(m.points, q-1)
		if i < len(m.points) && m.points[i] <= q+1 {
			return true
		}
	}
	return false
}

// stepFile is how a file of the review shows while the view is narrowed to a step: hidden when
// the step did not change it, else with only the hunks the step changed.
type stepFile struct {
	id     string // the step's
	hidden bool
	marks  *stepMarks // nil: every hunk shows
}

// stepOf works out how file f shows narrowed to a step with the given marks (by path).
func stepOf(f File, hunks []diff.Hunk, marks map[string]*stepMarks) *stepFile {
	m := marks[f.Path]
	if m == nil && f.OldPath != "" && marks[f.OldPath] != nil {
		// The step deleted the rename's source (or changed it before the rename): the change is
		// one of paths, not lines.
		return &stepFile{}
	}
	if m == nil {
		return &stepFile{hidden: true}
	}
	// A file decided whole, or one whose hunks are a merge on the host's file (whose lines are
	// not the staged text), shows whole.
	items := Items(f)
	if m.whole || f.Host != nil || len(items) == 1 && items[0].Lines == nil {
		return &stepFile{}
	}
	sf := &stepFile{marks: m}
	if m.mode && f.OldMode != f.NewMode {
		return sf
	}
	for _, h := range hunks {
		if m.hasHunk(h) {
			return sf
		}
	}
	// What the step did there was undone later: nothing of it is left to review.
	sf.hidden = true
	return sf
}

// stepNote is the note above a file narrowed to some of its hunks.
func (fv *fileView) stepNote() []string {
	if fv.step == nil || fv.step.marks == nil || fv.hidden() {
		return nil
	}
	n := 0
	for _, h := range fv.hunks {
		if fv.step.shows(h) {
			n++
		}
	}
	if n == len(fv.hunks) {
		return nil
	}
	return []string{fmt.Sprintf("step %s made %d of the file's %s", fv.step.id, n, english.Count(len(fv.hunks), "hunk"))}
}

// shows reports whether hunk h shows in the narrowed view.
func (s *stepFile) shows(h diff.Hunk) bool {
	return s == nil || s.marks == nil || s.marks.hasHunk(h)
}

// narrowing is the review narrowed to one step of the source's history.
type narrowing struct {
	steps []Step // as the source listed them when the step was loaded
	at    int    // the step shown, an index in steps
	marks map[string]*stepMarks
	// files, added and removed are what the step changed (StepChanges).
	files, added, removed int
	// requests and denied are what it sent through the proxy (StepChanges).
	requests, denied int
	deniedTo         []string
	sent             []StepRequest
}

func (n *narrowing) step() Step { return n.steps[n.at] }

// network says what the step sent through the proxy, for the status line: the count, and the
// destinations of the refused requests (the first three).
func (n *narrowing) network() string {
	if n.requests == 0 {
		return ""
	}
	s := "; " + english.Count(n.requests, "request")
	if n.denied > 0 {
		shown := n.deniedTo[:min(len(n.deniedTo), 3)]
		s += fmt.Sprintf(", %d DENIED (%s", n.denied, strings.Join(shown, ", "))
		if len(n.deniedTo) > len(shown) {
			s += ", …"
		}
		s += ")"
	}
	return s
}

// viewSent draws, under the files of a view narrowed to a step, the step's requests through the
// proxy: for each, a line with its method and status (DENIED for a refused one), then where it
// went, wrapped to the pane's width w. It takes at most h lines (none when fewer than four fit);
// when not all requests fit, the last line says how many more there are.
func (m *Model) viewSent(h, w int) []string {
	if m.narrow == nil || len(m.narrow.sent) == 0 || h < 4 || w < 8 {
		return nil
	}
	st := m.styles
	sent := m.narrow.sent
	head := fmt.Sprintf("%s: %s", m.narrow.step().ID, english.Count(len(sent), "request"))
	if m.narrow.denied > 0 {
		head += fmt.Sprintf(" (%d DENIED)", m.narrow.denied)
	}
	out := []string{""}
	for _, l := range strings.Split(ansi.Wrap(head, w, ""), "\n") {
		out = append(out, st.Dir.Render(fit(l, w)))
	}
	for i, r := range sent {
		mark, verdict := st.Count.Render("✓ "), ""
		if r.Status != 0 {
			verdict = " " + strconv.Itoa(r.Status)
		}
		if !r.Allowed {
			mark, verdict = st.BadgeAlert.Render("✗ "), " DENIED"
		}
		lines := []string{mark + fit(r.Method+verdict, w-2)}
		for _, l := range strings.Split(ansi.Hardwrap(r.Destination, w-2, false), "\n") {
			lines = append(lines, "  "+fit(l, w-2))
		}
		// The last line left is for the count of those that do not fit.
		if len(out)+len(lines) > h-1 && !(i == len(sent)-1 && len(out)+len(lines) <= h) {
			out = append(out, st.Count.Render(fit(fmt.Sprintf("… %d more", len(sent)-i), w)))
			break
		}
		out = append(out, lines...)
	}
	return out
}

// stepLoadedMsg carries a step to narrow the view to, worked out in a command.
type stepLoadedMsg struct {
	gen  int
	n    *narrowing
	edge string // "first" or "last" when the move stayed at an end of the history
	err  error
}

// stepCmd loads the step dir steps away from the one shown (from the whole change set, dir < 0
// goes to the last step and dir > 0 to the first).
func (m *Model) stepCmd(dir int) tea.Cmd {
	h, ok := m.src.(History)
	if !ok {
		m.setStatus("these changes have no history of steps")
		return nil
	}
	cur := ""
	if m.narrow != nil {
		cur = m.narrow.step().ID
	}
	m.stepGen++
	gen := m.stepGen
	return func() tea.Msg {
		steps, err := h.Steps()
		if err != nil {
			return stepLoadedMsg{gen: gen, err: fmt.Errorf("read the checkpoints: %w", err)}
		}
		if len(steps) == 0 {
			return stepLoadedMsg{gen: gen, err: errNoSteps}
		}
		at, edge := moveStep(steps, cur, dir)
		sc, err := h.StepChanges(steps[at].ID)
		if err != nil {
			return stepLoadedMsg{gen: gen, err: fmt.Errorf("read step %s: %w", steps[at].ID, err)}
		}
		n := &narrowing{steps: steps, at: at, marks: markSteps(sc), files: sc.Files, added: sc.Added, removed: sc.Removed,
			requests: sc.Requests, denied: sc.Denied, deniedTo: sc.DeniedTo, sent: sc.Sent}
		return stepLoadedMsg{gen: gen, n: n, edge: edge}
	}
}

// errNoSteps says there is no step to narrow to.
var errNoSteps = errors.New("no checkpoint yet: the history of steps starts with the first one")

// moveStep is the index of the step dir steps from the one with id cur ("": the whole change set,
// from which dir < 0 goes to the last and dir > 0 to the first), and "first" or "last" when the
// move would have gone past an end.
func moveStep(steps []Step, cur string, dir int) (int, string) {
	i := slices.IndexFunc(steps, func(s Step) bool { return s.ID == cur })
	switch {
	case i < 0 && dir < 0, i < 0 && cur != "":
		// Back from everything, or the step shown is gone (reverted): the latest.
		return len(steps) - 1, ""
	case i < 0:
		return 0, ""
	case i+dir < 0:
		return 0, "first"
	case i+dir >= len(steps):
		return len(steps) - 1, "last"
	}
	return i + dir, ""
}

// stepLoaded narrows the view to a loaded step.
func (m *Model) stepLoaded(msg stepLoadedMsg) {
	if msg.gen != m.stepGen {
		return // a later move is on its way
	}
	if msg.err != nil {
		m.setError(msg.err.Error())
		return
	}
	m.narrowTo(msg.n)
	s := msg.n.step()
	shown := 0
	for _, f := range m.files {
		if !f.hidden() {
			shown++
		}
	}
	n := msg.n
	status := fmt.Sprintf("step %s (%s at %s) changed %s +%d -%d; %d still staged%s · %s every step",
		s.named(), s.Trigger, s.Time.Local().Format("15:04:05"), english.Count(n.files, "file"), n.added, n.removed, shown,
		n.network(), m.keys.AllSteps.Help().Key)
	if msg.edge != "" {
		status = fmt.Sprintf("%s is the %s step · ", s.ID, msg.edge) + status
	}
	m.setStatus(status)
}

// narrowTo shows only what step n changed, or everything again when n is nil.
func (m *Model) narrowTo(n *narrowing) {
	m.narrow = n
	m.restep()
	if m.cur < len(m.files) && m.files[m.cur].hidden() {
		m.cur = m.shownFrom(m.cur, 1)
	}
	m.clampAll()
}

// restep works out how each file shows in the narrowed view (after a narrowing, a load, or a
// change of a file's hunks).
func (m *Model) restep() {
	for _, f := range m.files {
		f.step = nil
		if m.narrow != nil {
			f.step = stepOf(f.File, f.hunks, m.narrow.marks)
			f.step.id = m.narrow.step().ID
		}
		f.invalidate()
	}
	m.tree = buildTree(m.files)
}

// hidden reports whether the file is left out of the narrowed view.
func (fv *fileView) hidden() bool { return fv.step != nil && fv.step.hidden }

// showsHunk reports whether hunk hi of the file shows in the view.
func (fv *fileView) showsHunk(hi int) bool {
	return hi >= 0 && hi < len(fv.hunks) && !fv.hidden() && fv.step.shows(fv.hunks[hi])
}

// nextShownHunk is the first hunk after hi that shows, or -1.
func (fv *fileView) nextShownHunk(hi int) int {
	for i := hi + 1; i < len(fv.hunks); i++ {
		if fv.showsHunk(i) {
			return i
		}
	}
	return -1
}

// shownFrom is the nearest file to i that shows, looking first in direction dir; i itself when
// nothing is hidden or nothing shows.
func (m *Model) shownFrom(i, dir int) int {
	if m.narrow == nil || len(m.files) == 0 {
		return i
	}
	i = max(0, min(i, len(m.files)-1))
	for _, d := range []int{dir, -dir} {
		for j := i; j >= 0 && j < len(m.files); j += d {
			if !m.files[j].hidden() {
				return j
			}
		}
	}
	return i
}

// filePosition is the selected file's place among the files shown, and their number.
func (m *Model) filePosition() (int, int) {
	at, n := 0, 0
	for i, f := range m.files {
		if f.hidden() {
			continue
		}
		n++
		if i <= m.cur {
			at = n
		}
	}
	return at, n
}

// stepBadge is the status bar's label of a narrowed view: the step, its place in the history,
// and what took it.
func (m *Model) stepBadge() string {
	if m.narrow == nil {
		return ""
	}
	s := m.narrow.step()
	return m.styles.Step.Render(fmt.Sprintf(" %s %d/%d %s ", s.ID, m.narrow.at+1, len(m.narrow.steps), s.Trigger)) + " "
}

// nothingInStep is what the diff pane says when the step changed nothing that is still staged.
func (m *Model) nothingInStep() []string {
	n := m.narrow
	s := n.step()
	what := "nothing"
	if n.files > 0 {
		what = fmt.Sprintf("%s (+%d -%d)", english.Count(n.files, "file"), n.added, n.removed)
	}
	var out []string
	for _, l := range []string{fmt.Sprintf("step %s changed %s;", s.ID, what), "none of it is still staged: a later step undid it",
		fmt.Sprintf("shadow diff --checkpoint %s shows the step", s.ID), m.keys.AllSteps.Help().Key + " shows every step"} {
		out = append(out, m.styles.Note.Render(l))
	}
	return out
}
