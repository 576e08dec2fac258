package diffview

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"
	"github.com/alecthomas/chroma/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// minSplitWidth is the narrowest screen that shows tree and diff side by
// side; below it only the focused pane is shown.
const minSplitWidth = 60

// showTree reports whether the tree pane is drawn.
func (m *Model) showTree() bool { return m.width >= minSplitWidth || m.focus == treePane }

// showDiff reports whether the diff pane is drawn.
func (m *Model) showDiff() bool { return m.width >= minSplitWidth || m.focus == diffPane }

// treeWidth is the width of the tree pane.
func (m *Model) treeWidth() int {
	if m.width < minSplitWidth {
		return m.width
	}
	return max(18, min(40, m.width/4))
}

// diffWidth is the width of the diff pane.
func (m *Model) diffWidth() int {
	if !m.showTree() {
		return m.width
	}
	return max(0, m.width-m.treeWidth()-1)
}

// View draws the browser; only the rows on screen are rendered.
func (m Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	if m.tooSmall() {
		lines := m.viewTooSmall()
		var b strings.Builder
		for i := 0; i < m.height; i++ {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(fit(line(lines, i), m.width))
		}
		return b.String()
	}
	h := m.bodyHeight()
	// On a screen too narrow for two panes a dialog takes the whole width,
	// whichever pane has the focus.
	narrow := m.width < minSplitWidth
	var left, right []string
	switch {
	case !m.loaded:
		right = []string{m.styles.Note.Render("loading changes…")}
	case m.mode == modeHelp:
		right = m.viewHelp()
	default:
		d, isDialog := m.dialog()
		switch {
		case isDialog && narrow:
			right = d.lines(&m, m.width, h)
		case isDialog:
			right = d.lines(&m, m.diffWidth(), h)
		case len(m.files) == 0:
			right = []string{m.styles.Note.Render("no staged changes")}
		case m.showDiff():
			right = m.viewDiff(h)
		}
		if len(m.files) > 0 && m.showTree() && !(isDialog && narrow) {
			left = m.viewTree(h)
		}
	}
	var b strings.Builder
	b.Grow(m.width * m.height * 8)
	tw, dw := m.treeWidth(), m.diffWidth()
	sep := m.styles.Separator.Render("│")
	for i := 0; i < h; i++ {
		switch {
		case left != nil && m.showDiff() && m.mode != modeHelp:
			b.WriteString(fit(line(left, i), tw))
			b.WriteString(sep)
			b.WriteString(fit(line(right, i), dw))
		case left != nil:
			b.WriteString(fit(line(left, i), m.width))
		default:
			b.WriteString(fit(line(right, i), m.width))
		}
		b.WriteByte('\n')
	}
	b.WriteString(m.statusBar())
	return b.String()
}

// line is lines[i] or "".
func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// fit truncates or pads a styled line to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// viewTree draws the visible rows of the file tree.
func (m *Model) viewTree(h int) []string {
	st := m.styles
	tw := m.treeWidth()
	out := make([]string, 0, h)
	for i := m.treeTop; i < len(m.tree) && len(out) < h; i++ {
		t := m.tree[i]
		indent := strings.Repeat(" ", min(t.depth, 6))
		if t.file < 0 {
			out = append(out, st.Dir.Render(fit(indent+diff.Escape(t.name), tw)))
			continue
		}
		f := m.files[t.file]
		acc, rej, und := f.counts()
		var tags []string
		if f.Protected {
			tags = append(tags, st.BadgeAlert.Render("P"))
		}
		if f.Conflict != "" || f.openConflicts() > 0 {
			tags = append(tags, st.BadgeAlert.Render("C"))
		} else if f.Host != nil {
			tags = append(tags, st.Badge.Render("H"))
		}
		if len(f.Findings) > 0 {
			tags = append(tags, st.BadgeAlert.Render("F"))
		}
		if f.Ignored {
			tags = append(tags, st.Badge.Render("I"))
		}
		if f.Binary {
			tags = append(tags, st.Badge.Render("B"))
		}
		if f.Symlink() {
			tags = append(tags, st.Badge.Render("L"))
		}
		if f.OldMode != 0 && f.NewMode != 0 && f.OldMode != f.NewMode {
			tags = append(tags, st.Badge.Render("X"))
		}
		if f.Special != "" {
			tags = append(tags, st.BadgeAlert.Render("S"))
		}
		count := st.Count.Render(fmt.Sprintf("%d✓%d✗%d·", acc, rej, und))
		right := strings.Join(tags, "") + " " + count
		letter := st.StatusLetter[f.Status].Render(string(f.Status))
		nameW := max(1, tw-len(indent)-2-ansi.StringWidth(right))
		name := diff.Escape(t.name)
		if ansi.StringWidth(name) > nameW {
			name = ansi.Truncate(name, nameW, "…")
		}
		name = fit(name, nameW)
		nameStyle := st.File
		switch {
		case t.file == m.cur && m.focus == treePane:
			nameStyle = st.FileCursor
		case t.file == m.cur:
			nameStyle = st.FileCurrent
		case f.Ignored:
			nameStyle = st.FileDimmed
		}
		out = append(out, indent+letter+" "+nameStyle.Render(name)+right)
	}
	return append(out, m.viewSent(h-len(out), tw)...)
}

// viewDiff draws the header and the visible rows of the selected file.
func (m *Model) viewDiff(h int) []string {
	f := m.file()
	if f == nil {
		if m.narrow != nil {
			return m.nothingInStep()
		}
		return nil
	}
	st := m.styles
	dw := m.diffWidth()
	acc, rej, und := f.counts()
	title := diff.Escape(f.Path)
	if f.Status == StatusRenamed {
		title = diff.Escape(f.OldPath) + " → " + title
	}
	view := "unified"
	if m.sideBySide {
		view = "side-by-side"
	}
	size := fmt.Sprintf("+%d -%d", f.Diff.Added, f.Diff.Deleted)
	if f.TooLarge {
		size = humanSize(max(f.OldSize, f.NewSize))
	}
	stats := fmt.Sprintf(" %s  %d✓ %d✗ %d· %s", size, acc, rej, und, view)
	out := []string{st.FileHeader.Render(fit(title, max(1, dw-ansi.StringWidth(stats)))) + st.Count.Render(stats)}
	rows := f.rows(m.sideBySide)
	ctx := &renderCtx{m: m, f: f, width: dw}
	for i := f.top; i < len(rows) && len(out) < h; i++ {
		out = append(out, ctx.row(rows[i], i == f.cursor))
	}
	return out
}

// diffHeight is the number of diff rows under the pane's header.
func (m *Model) diffHeight() int { return max(1, m.bodyHeight()-1) }

// viewHelp lists every key binding with its help, in as many columns as
// fit the screen.
func (m *Model) viewHelp() []string {
	var entries []string
	keys := m.helpKeys()
	for _, group := range keys.FullHelp() {
		for _, b := range group {
			if !b.Enabled() {
				continue
			}
			h := b.Help()
			entries = append(entries, fmt.Sprintf("%-7s %s", h.Key, h.Desc))
		}
	}
	colW := 0
	for _, e := range entries {
		colW = max(colW, ansi.StringWidth(e)+3)
	}
	cols := max(1, m.width/colW)
	rows := (len(entries) + cols - 1) / cols
	out := make([]string, rows)
	for i, e := range entries {
		r := i % rows
		if i/rows < cols-1 {
			e = fit(e, colW)
		}
		out[r] += e
	}
	out = append([]string{m.styles.DialogTitle.Render("Keys") + "  (any key closes)"}, out...)
	return append(out, "",
		"Tree: A added  M modified  D deleted  R renamed · B binary  L symlink  X mode",
		"      P protected  C conflict  F audit finding  I ignored  S special",
		"      hunks: ✓ accepted  ✗ rejected  · undecided")
}

// viewStatus draws the bottom line: search input, a message, or counts.
func (m *Model) viewStatus() string {
	st := m.styles
	var left string
	switch {
	case m.mode == modeSearch:
		left = "/" + diff.EscapeLine(m.searchInput) + "█"
	case !m.loaded && m.status == "":
		// No counts before the changes are read: "0 undecided" would
		// read as a review with nothing in it.
		left = "loading…"
	case m.status != "":
		if m.statusErr {
			left = st.Error.Render(m.status)
		} else {
			left = m.status
		}
	default:
		acc, rej, und := 0, 0, 0
		for _, f := range m.files {
			a, r, u := f.counts()
			acc, rej, und = acc+a, rej+r, und+u
		}
		at, n := m.filePosition()
		left = fmt.Sprintf("file %d/%d · %d✓ %d✗ %d· undecided", at, n, acc, rej, und)
	}
	if m.readOnly {
		left = st.ReadOnly.Render(" READ-ONLY ") + " " + left
	}
	left = m.stepBadge() + left
	keys := m.helpKeys()
	right := m.help.ShortHelpView(keys.ShortHelp())
	if ansi.StringWidth(left)+2+ansi.StringWidth(right) > m.width {
		right = m.help.ShortHelpView([]key.Binding{keys.Help, keys.Quit})
	}
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return fit(left, m.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// renderCtx draws diff rows of one file.
type renderCtx struct {
	m     *Model
	f     *fileView
	width int
}

// row draws one row of the diff pane.
func (c *renderCtx) row(r row, cursor bool) string {
	st := c.m.styles
	switch r.kind {
	case rowNote:
		return "  " + st.Note.Render(fit(diff.EscapeLine(r.note), c.width-2))
	case rowHunk:
		return c.hunkHeader(r, cursor)
	case rowBase:
		return c.baseRow(r)
	}
	if c.m.sideBySide {
		half := (c.width - 1) / 2
		l := c.side(r, r.line, r.oldNo, half, cursor)
		rt := c.side(r, r.right, r.newNo, c.width-1-half, cursor)
		return l + st.Separator.Render("│") + rt
	}
	h := c.f.hunks[r.hunk]
	nw := c.f.numWidth
	gutter := num(r.oldNo, nw) + " " + num(r.newNo, nw)
	gs := st.LineNo
	if cursor && c.m.focus == diffPane {
		gs = st.CursorLineNo
	}
	// The mark column shows the line cursor (what space would select) and
	// the selected lines.
	mark := " "
	selected, here := c.f.selected[h.ID][int(r.line)], cursor && c.m.focus == diffPane
	switch {
	case selected && here:
		mark = st.Selected.Render("◉")
	case selected:
		mark = st.Selected.Render("●")
	case here:
		mark = st.CursorLineNo.Render("▸")
	}
	text := c.cached(r.hunk, r.line, r.partner, c.width-ansi.StringWidth(gutter)-2)
	return gs.Render(gutter) + mark + text
}

// side draws one column of a side-by-side row.
func (c *renderCtx) side(r row, li int32, no int32, w int, cursor bool) string {
	st := c.m.styles
	nw := c.f.numWidth
	gs := st.LineNo
	if cursor && c.m.focus == diffPane {
		gs = st.CursorLineNo
	}
	if li < 0 {
		return gs.Render(strings.Repeat(" ", nw)) + strings.Repeat(" ", max(0, w-nw))
	}
	partner := int32(-1)
	if r.line >= 0 && r.right >= 0 && r.line != r.right {
		if li == r.line {
			partner = r.right
		} else {
			partner = r.line
		}
	}
	return gs.Render(num(no, nw)) + c.cached(r.hunk, li, partner, w-nw)
}

// cached renders a line's content through the file's cache.
func (c *renderCtx) cached(hunk, li, partner int32, w int) string {
	f := c.f
	if f.cache == nil || f.cacheGen != c.m.renderGen || len(f.cache) > maxCache {
		f.cache, f.cacheGen = map[contentKey]string{}, c.m.renderGen
	}
	k := contentKey{hunk, li, partner, w, f.left}
	if s, ok := f.cache[k]; ok {
		return s
	}
	h := f.hunks[hunk]
	var p *diff.Line
	if partner >= 0 {
		p = &h.Lines[partner]
	}
	s := c.content(h.Lines[li], p, w)
	f.cache[k] = s
	return s
}

// num writes a line number right-aligned, or blanks for 0.
func num(n int32, w int) string {
	if n == 0 {
		return strings.Repeat(" ", w)
	}
	return fmt.Sprintf("%*d", w, n)
}

// hunkHeader draws a hunk's header with its decision.
func (c *renderCtx) hunkHeader(r row, cursor bool) string {
	st := c.m.styles
	h := c.f.hunks[r.hunk]
	d := c.f.Decisions[h.ID]
	var state string
	switch {
	case d.Verdict == diff.Accepted && d.Edit != "":
		state = st.HunkAccepted.Render("✓ accepted (edited)")
	case d.Verdict == diff.Accepted && len(d.Lines) > 0:
		state = st.HunkAccepted.Render(fmt.Sprintf("✓ accepted (%s)", english.Count(len(d.Lines), "line")))
	case d.Verdict == diff.Accepted:
		state = st.HunkAccepted.Render("✓ accepted")
	case d.Verdict == diff.Rejected:
		state = st.HunkRejected.Render("✗ rejected")
	default:
		state = st.HunkUndecided.Render("· undecided")
	}
	state = c.conflictState(h, d, state)
	if n := len(c.f.selected[h.ID]); n > 0 {
		state += st.Selected.Render(fmt.Sprintf(" %d selected", n))
	}
	head := h.Header()
	if h.Lines == nil {
		head = "whole file"
	}
	hs := st.HunkHeader
	if cursor && c.m.focus == diffPane {
		hs = st.CursorLineNo
	}
	return fit(hs.Render(head)+" "+state, c.width)
}

// content draws a line's text within w cells: the diff colour as
// background, word-level changes against its partner stronger, syntax
// colours as foreground, and anything unsafe visibly escaped.
func (c *renderCtx) content(l diff.Line, partner *diff.Line, w int) string {
	st := c.m.styles
	if w <= 1 {
		return ""
	}
	base := st.Context
	word := st.Context
	switch l.Op {
	case diff.Insert:
		base, word = st.Added, st.AddedWord
	case diff.Delete:
		base, word = st.Removed, st.RemovedWord
	}
	// Only part of a long line can be on screen; highlighting and syntax
	// work on that much (a minified file's megabyte line would otherwise
	// stall the frame).
	off := c.f.left
	text, col, skip, more := window(l.Content(), off)
	var changed []bool // per byte: part of a word-level change
	if partner != nil {
		other, _, _, _ := window(partner.Content(), off)
		_, segs := diff.WordDiff(other, text)
		if l.Op == diff.Delete {
			segs, _ = diff.WordDiff(text, other)
		}
		changed = make([]bool, len(text))
		at := 0
		for _, s := range segs {
			for i := 0; i < len(s.Text) && at+i < len(changed); i++ {
				changed[at+i] = s.Changed
			}
			at += len(s.Text)
		}
	}
	match := searchMatches(text, c.m.search)
	lb := lineBuilder{left: w}
	lb.add(string(l.Op), base)
	if off > 0 {
		lb.add("‹", st.More.Inherit(base))
	}
	// A line that goes on past the pane's edge keeps its last cell for a "›".
	cut := more || cellsFrom(text, col, skip+lb.left)-skip > lb.left
	if cut {
		lb.left--
	}
	lb.skip = skip
	for _, tok := range c.tokens(text) {
		// Split the token where a word-level change or a search match
		// starts or stops.
		for len(tok.text) > 0 {
			n := len(tok.text)
			ch := changed != nil && changed[tok.at]
			mt := match != nil && match[tok.at]
			for i := 1; i < n; i++ {
				if (changed != nil && changed[tok.at+i] != ch) || (match != nil && match[tok.at+i] != mt) {
					n = i
					break
				}
			}
			s := base
			if ch {
				s = word
			}
			if tok.style != nil {
				s = s.Foreground(tok.style.GetForeground())
			}
			if mt {
				s = st.Match.Inherit(s)
			}
			var pieces []diff.Piece
			pieces, col = diff.EscapeFrom(tok.text[:n], col)
			for _, p := range pieces {
				if p.Escaped {
					lb.add(p.Text, st.Escaped)
				} else {
					lb.add(p.Text, s)
				}
			}
			tok.text, tok.at = tok.text[n:], tok.at+n
		}
	}
	lb.skip = 0
	if lb.left > 0 {
		lb.add(strings.Repeat(" ", lb.left), base)
	}
	if cut {
		lb.left = 1
		lb.add("›", st.More.Inherit(base))
	}
	return lb.b.String()
}

// maxRenderBytes is how much of a line is prepared for display.
const maxRenderBytes = 2048

// clip cuts a line to maxRenderBytes.
func clip(s string) string {
	if len(s) > maxRenderBytes {
		return s[:maxRenderBytes]
	}
	return s
}

// token is a piece of a line with its syntax style (nil: none).
type token struct {
	text  string
	at    int
	style *lipgloss.Style
}

// tokens splits a line into syntax tokens with chroma; the tokens always
// concatenate to the line, or the line is one plain token.
func (c *renderCtx) tokens(text string) []token {
	lx := c.f.lexer()
	if lx == nil || text == "" {
		return []token{{text: text}}
	}
	it, err := lx.Tokenise(&chroma.TokeniseOptions{State: "root"}, text)
	if err != nil {
		return []token{{text: text}}
	}
	var out []token
	at := 0
	for t := it(); t != chroma.EOF; t = it() {
		if t.Value == "" {
			continue
		}
		if at+len(t.Value) > len(text) || text[at:at+len(t.Value)] != t.Value {
			break
		}
		out = append(out, token{text: t.Value, at: at, style: c.m.syntaxStyle(t.Type)})
		at += len(t.Value)
	}
	if at != len(text) {
		if at == 0 {
			return []token{{text: text}}
		}
		out = append(out, token{text: text[at:], at: at})
	}
	return out
}

// syntaxStyle maps a chroma token type to the theme.
func (m *Model) syntaxStyle(t chroma.TokenType) *lipgloss.Style {
	st := &m.styles
	switch {
	case t.InCategory(chroma.Comment):
		return &st.Comment
	case t.InSubCategory(chroma.LiteralString):
		return &st.String
	case t.InSubCategory(chroma.LiteralNumber):
		return &st.Number
	case t == chroma.KeywordType, t == chroma.NameClass, t == chroma.NameBuiltin:
		return &st.Type
	case t.InCategory(chroma.Keyword):
		return &st.Keyword
	case t == chroma.NameFunction:
		return &st.Function
	}
	return nil
}

// lexer finds the file's syntax by name, once.
func (fv *fileView) lexer() chroma.Lexer {
	if !fv.lexerSet {
		fv.lexerSet = true
		if !fv.Binary {
			fv.lex = lexerFor(fv.Path)
		}
	}
	return fv.lex
}

// lineBuilder writes styled text up to a width, leaving out the first skip
// cells (the part of a line scrolled off to the left).
type lineBuilder struct {
	b          strings.Builder
	left, skip int
}

// add writes text in style, cut to the width left.
func (lb *lineBuilder) add(text string, s lipgloss.Style) {
	if lb.skip > 0 && text != "" {
		w := ansi.StringWidth(text)
		if w <= lb.skip {
			lb.skip -= w
			return
		}
		text = ansi.TruncateLeft(text, lb.skip, "")
		lb.skip = 0
	}
	if lb.left <= 0 || text == "" {
		return
	}
	w := ansi.StringWidth(text)
	if w > lb.left {
		text = ansi.Truncate(text, lb.left, "")
		w = ansi.StringWidth(text)
		if w == 0 {
			lb.left = 0
			return
		}
	}
	lb.b.WriteString(s.Render(text))
	lb.left -= w
}
