package diffview

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

// MinWidth and MinHeight are the smallest screen the review works in: down
// to it every confirmation shows its title and its keys. Below it the
// screen says it is too small and takes no key but quit, so that no key
// confirms what cannot be seen.
const (
	MinWidth  = 30
	MinHeight = 8
)

// tooSmall reports whether the screen is below MinWidth×MinHeight.
func (m *Model) tooSmall() bool { return m.width < MinWidth || m.height < MinHeight }

// viewTooSmall is the whole screen when it is too small for the review.
func (m *Model) viewTooSmall() []string {
	text := fmt.Sprintf("terminal too small for the review: %d×%d needed, %d×%d here · %s quits",
		MinWidth, MinHeight, m.width, m.height, m.keys.Quit.Help().Key)
	return strings.Split(ansi.Wrap(text, max(1, m.width), ""), "\n")
}

// dialog is a confirmation or a result drawn in place of the diff: a title,
// paragraphs that wrap, lists that are shortened when the screen is short,
// and the prompt naming its keys, which is always drawn.
type dialog struct {
	title  string
	blocks []dialogBlock
	prompt string
}

// dialogBlock is a paragraph (text) or a list (items, each its own line,
// wrapped under a hanging indent).
type dialogBlock struct {
	text  string
	head  string // a list's heading line, kept when the list is shortened
	items []string
}

// lines lays the dialog out in at most h rows of w cells. It drops the
// blank lines first, then shortens the lists ("… and 3 more"), then cuts
// the paragraphs, so that the title and the prompt always show.
func (d dialog) lines(m *Model, w, h int) []string {
	st := m.styles
	title := []string{st.DialogTitle.Render(ansi.Truncate(d.title, w, "…"))}
	prompt := wrap(d.prompt, w, "")
	// The blocks with every list item, then with lists cut to n items.
	body := func(spaced bool, keep []int) []string {
		var out []string
		for i, b := range d.blocks {
			if spaced && len(out) > 0 {
				out = append(out, "")
			}
			if b.items == nil {
				out = append(out, wrap(b.text, w, "")...)
				continue
			}
			if b.head != "" {
				out = append(out, wrap(b.head, w, "")...)
			}
			n := min(keep[i], len(b.items))
			for _, it := range b.items[:n] {
				out = append(out, wrap(it, w, "    ")...)
			}
			if n < len(b.items) {
				out = append(out, fmt.Sprintf("  … and %d more", len(b.items)-n))
			}
		}
		return out
	}
	all := make([]int, len(d.blocks))
	for i, b := range d.blocks {
		all[i] = len(b.items)
	}
	join := func(spaced bool, b []string) []string {
		out := append([]string{}, title...)
		if spaced {
			out = append(out, "")
		}
		out = append(out, b...)
		if spaced {
			out = append(out, "")
		}
		return append(out, prompt...)
	}
	if out := join(true, body(true, all)); len(out) <= h {
		return out
	}
	if out := join(false, body(false, all)); len(out) <= h {
		return out
	}
	// Shorten the lists, the longest first, until the dialog fits or every
	// list shows only its "… and N more".
	keep := append([]int(nil), all...)
	for {
		out := join(false, body(false, keep))
		if len(out) <= h {
			return out
		}
		longest := -1
		for i, n := range keep {
			if n > 0 && (longest < 0 || n > keep[longest]) {
				longest = i
			}
		}
		if longest < 0 {
			break
		}
		keep[longest]--
	}
	// Still too tall: cut the body, keeping the title and the prompt.
	b := body(false, keep)
	room := max(0, h-len(title)-len(prompt))
	if len(b) > room {
		b = b[:room]
		if room > 0 {
			b[room-1] = "…"
		}
	}
	out := join(false, b)
	if len(out) > h {
		// Not even the title and the prompt fit: the prompt wins.
		out = out[len(out)-h:]
	}
	return out
}

// wrap wraps text to w cells, indenting the lines after the first.
func wrap(text string, w int, indent string) []string {
	if w <= len(indent)+1 {
		indent = ""
	}
	lines := strings.Split(ansi.Wrap(text, max(1, w), ""), "\n")
	if indent == "" || len(lines) == 1 {
		return lines
	}
	rest := strings.Join(lines[1:], " ")
	more := strings.Split(ansi.Wrap(rest, max(1, w-len(indent)), ""), "\n")
	for i := range more {
		more[i] = indent + more[i]
	}
	return append(lines[:1], more...)
}

// confirmPrompt names the keys of a confirmation.
func (m *Model) confirmPrompt(what string) string {
	return fmt.Sprintf("%s %s · %s cancel", m.keys.Confirm.Help().Key, what, m.keys.Cancel.Help().Key)
}

// planDialog is the apply confirmation: what is written, what is left out.
func (m *Model) planDialog() dialog {
	st := m.styles
	p := m.plan
	d := dialog{title: "Apply to the project?", prompt: m.confirmPrompt("apply")}
	if len(p.Write) == 0 {
		// Nothing to confirm: the dialog says why and offers no apply.
		d.title, d.prompt = "Nothing to apply", fmt.Sprintf("%s back", m.keys.Cancel.Help().Key)
		text := fmt.Sprintf("Nothing is accepted: accept a hunk (%s), a file (%s) or everything undecided (%s) first.",
			m.keys.Accept.Help().Key, m.keys.AcceptFile.Help().Key, m.keys.AcceptAll.Help().Key)
		if len(p.LeftOut) > 0 {
			text = "Nothing can be written: every accepted hunk is in a file left out below."
		}
		d.blocks = append(d.blocks, dialogBlock{text: text})
	} else {
		items := make([]string, len(p.Write))
		for i, f := range p.Write {
			items[i] = fmt.Sprintf("  %s  %d✓ %d✗ %d·", diff.Escape(f.Path), f.Accepted, f.Rejected, f.Undecided)
		}
		d.blocks = append(d.blocks, dialogBlock{
			head:  fmt.Sprintf("Will write %s (✓ accepted, ✗ rejected, · undecided: left as in the project):", english.Count(len(p.Write), "file")),
			items: items,
		})
	}
	if len(p.LeftOut) > 0 {
		items := make([]string, len(p.LeftOut))
		for i, f := range p.LeftOut {
			items[i] = "  " + st.BadgeAlert.Render(diff.Escape(f.Path)) + "  " + diff.EscapeLine(f.Reason)
		}
		d.blocks = append(d.blocks, dialogBlock{head: fmt.Sprintf("Left out (%d):", len(p.LeftOut)), items: items})
	}
	return d
}

// rollbackDialog is the rollback confirmation.
func (m *Model) rollbackDialog() dialog {
	return dialog{
		title: "Roll back the last apply?",
		blocks: []dialogBlock{{text: "Every path it wrote gets its prior content, mode and existence back; " +
			"paths changed again since are refused and named."}},
		prompt: m.confirmPrompt("roll back"),
	}
}

// resultDialog lists what the last apply or rollback wrote and left out.
func (m *Model) resultDialog() dialog {
	st := m.styles
	d := dialog{title: m.resultTitle, prompt: "any key continues"}
	o := m.lastOutcome
	if o == nil {
		return d
	}
	if o.CanRollback() {
		d.prompt += fmt.Sprintf(" · %s rolls back the last apply", m.keys.Rollback.Help().Key)
	}
	paths := func(head string, ps []string, always bool) {
		if len(ps) == 0 && !always {
			return
		}
		items := make([]string, len(ps))
		for i, p := range ps {
			items[i] = "  " + diff.Escape(p)
		}
		d.blocks = append(d.blocks, dialogBlock{head: fmt.Sprintf("%s (%d):", head, len(ps)), items: items})
	}
	if o.Rollback {
		if o.ApplyID != "" {
			d.blocks = append(d.blocks, dialogBlock{text: "rolled back: " + diff.EscapeLine(o.ApplyID)})
		}
		paths("Put back as before the apply", o.Restored, len(o.Removed) == 0)
		paths("Created by the apply, removed", o.Removed, false)
		if !o.OlderApply {
			d.blocks = append(d.blocks, dialogBlock{text: "No apply is left to roll back."})
		}
	} else {
		if o.ApplyID != "" {
			d.blocks = append(d.blocks, dialogBlock{text: "apply id: " + diff.EscapeLine(o.ApplyID)})
		}
		paths("Written", o.Written, len(o.Deleted) == 0)
		paths("Deleted", o.Deleted, false)
	}
	if len(o.LeftOut) > 0 {
		left := make([]string, len(o.LeftOut))
		for i, p := range o.LeftOut {
			left[i] = "  " + st.BadgeAlert.Render(diff.Escape(p))
		}
		d.blocks = append(d.blocks, dialogBlock{head: fmt.Sprintf("Left out (%d):", len(o.LeftOut)), items: left})
	}
	if o.Message != "" {
		d.blocks = append(d.blocks, dialogBlock{text: diff.EscapeLine(o.Message)})
	}
	return d
}

// dialog is the confirmation or result the mode shows, if any.
func (m *Model) dialog() (dialog, bool) {
	switch m.mode {
	case modeConfirmApply:
		return m.planDialog(), true
	case modeConfirmRollback:
		return m.rollbackDialog(), true
	case modeResult:
		return m.resultDialog(), true
	}
	return dialog{}, false
}
