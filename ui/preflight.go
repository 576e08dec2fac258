package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/ui/keymap"
)

// Stage is one step of the preflight, shown as one group of findings.
type Stage int

// The preflight's stages, in the order they are shown.
const (
	// StageHost is doctor: can this host build the jail at all.
	StageHost Stage = iota
	// StageHostEnv is the audit of the host environment itself (root,
	// readable ~/.ssh): shown for information, it never blocks a jailed run
	// because the jail hides it.
	StageHostEnv
	// StageProject is the DEP audit of the project, run on the host.
	StageProject
	// StageJail is the ENV, FS and NET audit run inside a fresh jail built
	// with the run's policy.
	StageJail
	numStages
)

// Title is the heading of the stage's group.
func (s Stage) Title() string {
	switch s {
	case StageHost:
		return "Host: can the jail be built"
	case StageHostEnv:
		return "Host environment (information: the jail hides it)"
	case StageProject:
		return "Project dependencies (DEP)"
	case StageJail:
		return "Inside the jail (ENV, FS, NET)"
	}
	return fmt.Sprintf("stage %d", int(s))
}

// Finding is one line of the preflight: a host check or an audit rule.
type Finding struct {
	Stage Stage
	// ID is the rule ID (DEP003) or the host check's name.
	ID    string
	Title string
	// Result is pass, fail or skipped (a degraded host check is skipped).
	Result   audit.Result
	Severity audit.Severity // zero for host checks
	// Blocks is set when this finding keeps the agent from starting.
	Blocks bool
	// Info marks a finding shown for information only.
	Info     bool
	Evidence []string
	Remedy   string
}

// Event is what a preflight reports as it goes: a finding, or the end of
// a stage (Finding nil, Done set).
type Event struct {
	Stage   Stage
	Finding *Finding
	Done    bool
}

// Verdict is the preflight's decision under the trust profile.
type Verdict struct {
	Profile string
	Blocked bool
	// Warned is set when something was skipped or failed without blocking.
	Warned bool
	// Blocking lists what blocks: rule IDs and host checks.
	Blocking []string
	// Remedy says what to do about a block, in a sentence.
	Remedy string
}

// PreflightFunc runs the preflight, reporting each finding through emit as
// its check completes, and returns the verdict. The error is set when the
// preflight itself could not run.
type PreflightFunc func(ctx context.Context, emit func(Event)) (Verdict, error)

// Messages of the preflight phase.
type (
	preflightStartedMsg struct {
		events <-chan Event
		done   <-chan preflightDoneMsg
	}
	preflightEventMsg struct {
		ev     Event
		events <-chan Event
		done   <-chan preflightDoneMsg
	}
	preflightDoneMsg struct {
		verdict Verdict
		err     error
	}
	countdownMsg struct{ gen int }
)

// startPreflight runs the preflight in the background; its events come back
// one message at a time.
func startPreflight(ctx context.Context, run PreflightFunc) tea.Cmd {
	return func() tea.Msg {
		events := make(chan Event, 64)
		done := make(chan preflightDoneMsg, 1)
		go func() {
			v, err := run(ctx, func(ev Event) {
				select {
				case events <- ev:
				case <-ctx.Done():
				}
			})
			close(events)
			done <- preflightDoneMsg{verdict: v, err: err}
		}()
		return preflightStartedMsg{events: events, done: done}
	}
}

// nextPreflight waits for the preflight's next event, or its end.
func nextPreflight(events <-chan Event, done <-chan preflightDoneMsg) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-events
		if !ok {
			return <-done
		}
		return preflightEventMsg{ev: ev, events: events, done: done}
	}
}

// preflight is the preflight phase: the findings as they arrive, the
// verdict, and a finding's details.
type preflight struct {
	stages   [numStages]stageView
	verdict  *Verdict
	err      error
	spinner  spinner.Model
	cursor   int // index into the visible findings; -1: none selected
	top      int
	passes   bool
	hostInfo bool // list the host's own findings one by one
	details  bool
	seconds  int // countdown left; 0: none running
	countGen int
}

// stageView is one stage's findings and whether it has finished.
type stageView struct {
	findings []Finding
	done     bool
}

func newPreflight() preflight {
	return preflight{spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot)), cursor: -1}
}

// add records one event.
func (p *preflight) add(ev Event) {
	if ev.Stage < 0 || ev.Stage >= numStages {
		return
	}
	s := &p.stages[ev.Stage]
	if ev.Finding != nil {
		s.findings = append(s.findings, *ev.Finding)
	}
	if ev.Done {
		s.done = true
	}
}

// finish records the verdict: every stage is over.
func (p *preflight) finish(v Verdict, err error) {
	for i := range p.stages {
		p.stages[i].done = true
	}
	p.verdict, p.err = &v, err
}

// allowed reports whether the agent may start.
func (p *preflight) allowed() bool { return p.verdict != nil && p.err == nil && !p.verdict.Blocked }

// row is one line of the findings list.
type row struct {
	stage   Stage
	finding *Finding
	header  bool
	summary string
}

// rows lists what the findings list shows: each stage's header with
// counts, then its failed and skipped findings (and passes when shown).
func (p *preflight) rows() []row {
	var rs []row
	for st := Stage(0); st < numStages; st++ {
		s := &p.stages[st]
		rs = append(rs, row{stage: st, header: true})
		if st == StageHostEnv && !p.hostInfo {
			n := 0
			for _, f := range s.findings {
				if f.Result != audit.Pass {
					n++
				}
			}
			if n > 0 {
				rs = append(rs, row{stage: st, summary: english.Count(n, "finding") + " about this host, which the jail hides; i lists them"})
			}
			continue
		}
		for i := range s.findings {
			f := &s.findings[i]
			if f.Result == audit.Pass && !p.passes {
				continue
			}
			rs = append(rs, row{stage: st, finding: f})
		}
	}
	return rs
}

// selectable are the indexes of rows holding a finding.
func selectable(rs []row) []int {
	var idx []int
	for i, r := range rs {
		if r.finding != nil {
			idx = append(idx, i)
		}
	}
	return idx
}

// selected is the finding under the cursor, if any.
func (p *preflight) selected() *Finding {
	sel := selectable(p.rows())
	if p.cursor < 0 || p.cursor >= len(sel) {
		return nil
	}
	return p.rows()[sel[p.cursor]].finding
}

// move moves the cursor among the findings.
func (p *preflight) move(n int) {
	sel := selectable(p.rows())
	if len(sel) == 0 {
		p.cursor = -1
		return
	}
	if p.cursor < 0 {
		if n > 0 {
			p.cursor = 0
		} else {
			p.cursor = len(sel) - 1
		}
		return
	}
	p.cursor = min(max(p.cursor+n, 0), len(sel)-1)
}

// view draws the phase in width×height.
func (p *preflight) view(st Styles, k keymap.KeyMap, o *Options, width, height int) string {
	title := st.Title.Render("shadow preflight") + st.Subtle.Render(fmt.Sprintf(" · profile %s · %s", o.Profile, strings.Join(o.Argv, " ")))
	footer := p.footer(st, k, width)
	if fl := strings.Split(footer, "\n"); len(fl) > max(1, height-3) {
		// A small screen keeps the verdict's first lines and the key help.
		keep := max(1, height-3)
		footer = strings.Join(append(fl[:max(keep-1, 0)], fl[len(fl)-1]), "\n")
		if keep == 1 {
			footer = fl[0]
		}
	}
	bodyH := max(1, height-2-lipgloss.Height(footer))
	var body string
	if p.details {
		body = p.detailView(st, width, bodyH)
	} else {
		body = p.listView(st, width, bodyH)
	}
	lines := []string{ansi.Truncate(title, width, "…"), ""}
	lines = append(lines, strings.Split(body, "\n")...)
	for len(lines) < height-lipgloss.Height(footer) {
		lines = append(lines, "")
	}
	lines = lines[:max(0, height-lipgloss.Height(footer))]
	lines = append(lines, strings.Split(footer, "\n")...)
	return strings.Join(lines, "\n")
}

// listView is the findings list, scrolled to keep the cursor visible.
func (p *preflight) listView(st Styles, width, height int) string {
	rs := p.rows()
	sel := selectable(rs)
	cur := -1
	if p.cursor >= 0 && p.cursor < len(sel) {
		cur = sel[p.cursor]
	}
	if cur >= 0 {
		if cur < p.top {
			p.top = cur
		}
		if cur >= p.top+height {
			p.top = cur - height + 1
		}
	}
	p.top = min(max(p.top, 0), max(0, len(rs)-height))
	var out []string
	for i := p.top; i < len(rs) && len(out) < height; i++ {
		out = append(out, p.rowView(st, rs[i], i == cur, width))
	}
	return strings.Join(out, "\n")
}

// rowView draws one row.
func (p *preflight) rowView(st Styles, r row, cursor bool, width int) string {
	if r.summary != "" {
		return ansi.Truncate("  "+st.Info.Render("i")+" "+st.Subtle.Render(r.summary), width, "…")
	}
	if r.header {
		s := &p.stages[r.stage]
		var pass, fail, skip int
		for _, f := range s.findings {
			switch f.Result {
			case audit.Pass:
				pass++
			case audit.Fail:
				fail++
			default:
				skip++
			}
		}
		mark := p.spinner.View()
		switch {
		case !s.done:
		case r.stage == StageHostEnv && len(s.findings) > 0:
			mark = st.Info.Render("i")
		case fail > 0 && blocks(s.findings):
			mark = st.Fail.Render(audit.Fail.Mark())
		case fail > 0 || skip > 0:
			mark = st.Skip.Render(audit.Skipped.Mark())
		default:
			mark = st.Pass.Render(audit.Pass.Mark())
		}
		counts := st.Pass.Render(fmt.Sprintf("%d %s", pass, audit.Pass.Mark())) + " " +
			st.Fail.Render(fmt.Sprintf("%d %s", fail, audit.Fail.Mark())) + " " +
			st.Skip.Render(fmt.Sprintf("%d %s", skip, audit.Skipped.Mark()))
		if !s.done {
			counts += st.Subtle.Render(" running…")
		} else if len(s.findings) == 0 {
			counts = st.Subtle.Render("nothing to check")
		}
		left := mark + " " + st.Stage.Render(r.stage.Title())
		gap := max(1, width-lipgloss.Width(left)-lipgloss.Width(counts))
		return ansi.Truncate(left+strings.Repeat(" ", gap)+counts, width, "…")
	}
	f := r.finding
	var mark string
	switch f.Result {
	case audit.Pass:
		mark = st.Pass.Render(f.Result.Mark())
	case audit.Fail:
		if f.Info {
			mark = st.Info.Render(f.Result.Mark())
		} else if f.Blocks {
			mark = st.Fail.Render(f.Result.Mark())
		} else {
			mark = st.Skip.Render(f.Result.Mark())
		}
	default:
		mark = st.Skip.Render(f.Result.Mark())
	}
	sev := ""
	if f.Severity != 0 {
		sev = severityStyle(st, f.Severity).Render(fmt.Sprintf("%-8s", f.Severity))
	}
	id := fmt.Sprintf("%-8s", f.ID)
	if f.Severity == 0 {
		id = fmt.Sprintf("%-26s", f.ID)
	}
	text := "  " + mark + " " + id + " " + sev + " " + f.Title
	if f.Blocks {
		text += " " + st.Fail.Render("blocks")
	}
	if f.Info && f.Result != audit.Pass {
		text += " " + st.Info.Render("(information)")
	}
	text = ansi.Truncate(text, width, "…")
	if cursor {
		return st.Cursor.Render(ansi.Strip(text))
	}
	return text
}

// blocks reports whether any finding blocks.
func blocks(fs []Finding) bool {
	for _, f := range fs {
		if f.Blocks {
			return true
		}
	}
	return false
}

// severityStyle is the colour of a severity.
func severityStyle(st Styles, s audit.Severity) lipgloss.Style {
	if c, ok := st.Severity[s]; ok {
		return c
	}
	return st.Subtle
}

// detailView shows everything about the selected finding.
func (p *preflight) detailView(st Styles, width, height int) string {
	f := p.selected()
	if f == nil {
		return ""
	}
	inner := max(10, width-4)
	var b strings.Builder
	b.WriteString(st.Stage.Render(f.ID) + " " + f.Title + "\n")
	b.WriteString(st.Subtle.Render(f.Stage.Title()) + "\n")
	res := string(f.Result)
	if f.Severity != 0 {
		res += " · " + f.Severity.String()
	}
	if f.Blocks {
		res += " · blocks"
	}
	if f.Info {
		res += " · information only"
	}
	b.WriteString(res + "\n")
	if len(f.Evidence) > 0 {
		b.WriteString("\n" + st.Stage.Render("Evidence") + "\n")
		for _, e := range f.Evidence {
			b.WriteString("  " + e + "\n")
		}
	}
	if f.Remedy != "" {
		b.WriteString("\n" + st.Stage.Render("What to do") + "\n")
		b.WriteString(f.Remedy + "\n")
	}
	text := lipgloss.NewStyle().Width(inner).Render(strings.TrimRight(b.String(), "\n"))
	lines := strings.Split(text, "\n")
	if len(lines) > height-2 {
		lines = append(lines[:max(0, height-3)], st.Subtle.Render("…"))
	}
	return st.Dialog.Width(width).Render(strings.Join(lines, "\n"))
}

// footer is the verdict line and the key help.
func (p *preflight) footer(st Styles, k keymap.KeyMap, width int) string {
	var verdict, help string
	keyHelp := func(b key.Binding, desc string) string {
		return st.Key.Render(b.Help().Key) + " " + st.Subtle.Render(desc)
	}
	switch {
	case p.err != nil:
		verdict = st.Error.Render("✗ the preflight could not run: ") + p.err.Error()
		help = keyHelp(k.Quit, "quit")
	case p.verdict == nil:
		verdict = p.spinner.View() + " checking…"
		help = keyHelp(k.Up, "") + keyHelp(k.Down, "move") + "  " + keyHelp(k.Passes, "passed checks") + "  " + keyHelp(k.Quit, "quit")
	case p.verdict.Blocked:
		verdict = st.Blocked.Render(fmt.Sprintf(" ✗ BLOCKED under %s ", p.verdict.Profile)) + " " +
			st.Fail.Render(strings.Join(p.verdict.Blocking, ", ")) + " — the agent was not started."
		if p.verdict.Remedy != "" {
			verdict += "\n" + p.verdict.Remedy
		}
		help = keyHelp(k.Down, "select a finding") + "  " + st.Key.Render("enter") + " " + st.Subtle.Render("details") + "  " + keyHelp(k.Quit, "quit")
	default:
		mark, style := "✓ allowed", st.Allowed
		if p.verdict.Warned {
			mark, style = "○ allowed with warnings", st.Warned
		}
		verdict = style.Render(mark) + st.Subtle.Render(" under "+p.verdict.Profile)
		switch {
		case p.details:
			help = st.Key.Render("esc") + " " + st.Subtle.Render("back")
		case p.cursor >= 0:
			help = st.Key.Render("enter") + " " + st.Subtle.Render("details") + "  " + st.Key.Render("esc") + " " + st.Subtle.Render("unselect") + "  " + keyHelp(k.Quit, "quit")
		default:
			help = keyHelp(k.Start, "start the agent")
			if p.seconds > 0 {
				help += st.Subtle.Render(fmt.Sprintf(" (starting in %ds, any key waits)", p.seconds))
			}
			help += "  " + keyHelp(k.Down, "select") + "  " + keyHelp(k.Passes, "passed") + "  " + keyHelp(k.HostInfo, "host") + "  " + keyHelp(k.Quit, "quit")
		}
	}
	if p.details && (p.verdict == nil || p.verdict.Blocked) {
		help = st.Key.Render("esc") + " " + st.Subtle.Render("back")
	}
	w := lipgloss.NewStyle().Width(width)
	return w.Render(verdict) + "\n" + ansi.Truncate(help, width, "…")
}
