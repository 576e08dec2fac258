package diffview

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
)

// KeyMap holds every key binding of the review browser, with the help text
// `?` shows. Bindings can be replaced from configuration with SetKeys.
type KeyMap struct {
	Down, Up             key.Binding
	PageDown, PageUp     key.Binding
	Top, Bottom          key.Binding
	Focus                key.Binding
	NextHunk, PrevHunk   key.Binding
	NextFile, PrevFile   key.Binding
	NextUndecided        key.Binding
	Accept, Reject       key.Binding
	AcceptFile           key.Binding
	RejectFile           key.Binding
	AcceptAll            key.Binding
	Split                key.Binding
	SelectLine           key.Binding
	Edit                 key.Binding
	Undo                 key.Binding
	ToggleView           key.Binding
	ScrollLeft           key.Binding
	ScrollRight          key.Binding
	Expand               key.Binding
	Search               key.Binding
	NextMatch, PrevMatch key.Binding
	Apply                key.Binding
	Rollback             key.Binding
	Take                 key.Binding
	Confirm, Cancel      key.Binding
	Help                 key.Binding
	Quit                 key.Binding

	// The timeline: narrow the view to one step of the history, move along the steps, show
	// every step again.
	PrevStep, NextStep, AllSteps key.Binding
}

// DefaultKeyMap is the default key table of the review screen: lazygit,
// vim and `git add -p` users should feel at home.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		Down:          b([]string{"j", "down"}, "j/↓", "move down"),
		Up:            b([]string{"k", "up"}, "k/↑", "move up"),
		PageDown:      b([]string{"ctrl+d", "pgdown"}, "ctrl+d", "page down"),
		PageUp:        b([]string{"ctrl+u", "pgup"}, "ctrl+u", "page up"),
		Top:           b([]string{"g", "home"}, "g", "top"),
		Bottom:        b([]string{"G", "end"}, "G", "bottom"),
		Focus:         b([]string{"tab"}, "tab", "tree / diff"),
		NextHunk:      b([]string{"]"}, "]", "next hunk"),
		PrevHunk:      b([]string{"["}, "[", "previous hunk"),
		NextFile:      b([]string{"}"}, "}", "next file"),
		PrevFile:      b([]string{"{"}, "{", "previous file"),
		NextUndecided: b([]string{"."}, ".", "next undecided hunk"),
		Accept:        b([]string{"a"}, "a", "accept hunk / selected lines"),
		Reject:        b([]string{"r"}, "r", "reject hunk / selected lines"),
		AcceptFile:    b([]string{"A"}, "A", "accept whole file"),
		RejectFile:    b([]string{"R"}, "R", "reject whole file"),
		AcceptAll:     b([]string{"ctrl+a"}, "ctrl+a", "accept everything undecided"),
		Split:         b([]string{"s"}, "s", "split hunk"),
		SelectLine:    b([]string{"space"}, "space", "select +/- lines for a/r"),
		Edit:          b([]string{"e"}, "e", "edit hunk in $EDITOR"),
		Undo:          b([]string{"u"}, "u", "undo last decision"),
		ToggleView:    b([]string{"v"}, "v", "unified / side-by-side"),
		ScrollLeft:    b([]string{"h", "left"}, "h/←", "scroll the diff left"),
		ScrollRight:   b([]string{"l", "right"}, "l/→", "scroll the diff right"),
		Expand:        b([]string{"enter"}, "enter", "show an ignored file's hunks"),
		Search:        b([]string{"/"}, "/", "search"),
		NextMatch:     b([]string{"n"}, "n", "next match"),
		PrevMatch:     b([]string{"N"}, "N", "previous match"),
		Apply:         b([]string{"w"}, "w", "apply (asks y)"),
		Rollback:      b([]string{"b"}, "b", "roll back last apply (asks y)"),
		Take:          b([]string{"T"}, "T", "take the other session's version of the file"),
		Confirm:       b([]string{"y"}, "y", "confirm"),
		Cancel:        b([]string{"n", "esc"}, "n/esc", "cancel"),
		Help:          b([]string{"?"}, "?", "help"),
		Quit:          b([]string{"q", "ctrl+c"}, "q", "quit (decisions kept)"),
		PrevStep:      b([]string{"<"}, "<", "previous step (checkpoint)"),
		NextStep:      b([]string{">"}, ">", "next step (checkpoint)"),
		AllSteps:      b([]string{"="}, "=", "every step again"),
	}
}

// ShortHelp is the one-line help of the status bar.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Accept, k.Reject, k.NextUndecided, k.Apply, k.Help, k.Quit}
}

// FullHelp is every key, in columns, for `?`.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Down, k.Up, k.PageDown, k.PageUp, k.Top, k.Bottom, k.Focus, k.Expand},
		{k.PrevStep, k.NextStep, k.AllSteps},
		{k.NextHunk, k.PrevHunk, k.NextFile, k.PrevFile, k.NextUndecided, k.Search, k.NextMatch, k.PrevMatch},
		{k.Accept, k.Reject, k.AcceptFile, k.RejectFile, k.AcceptAll, k.Split, k.SelectLine, k.Edit},
		{k.Undo, k.ToggleView, k.ScrollLeft, k.ScrollRight, k.Apply, k.Rollback, k.Take, k.Help, k.Quit},
	}
}

// actions names every binding for configuration files, as
// `[keys] accept = ["a", "enter"]`.
func (k *KeyMap) actions() map[string]*key.Binding {
	return map[string]*key.Binding{
		"down": &k.Down, "up": &k.Up, "page-down": &k.PageDown, "page-up": &k.PageUp,
		"top": &k.Top, "bottom": &k.Bottom, "focus": &k.Focus,
		"prev-step": &k.PrevStep, "next-step": &k.NextStep, "all-steps": &k.AllSteps,
		"next-hunk": &k.NextHunk, "prev-hunk": &k.PrevHunk, "next-file": &k.NextFile, "prev-file": &k.PrevFile,
		"next-undecided": &k.NextUndecided, "accept": &k.Accept, "reject": &k.Reject,
		"accept-file": &k.AcceptFile, "reject-file": &k.RejectFile, "accept-all": &k.AcceptAll,
		"split": &k.Split, "select-line": &k.SelectLine, "edit": &k.Edit, "undo": &k.Undo,
		"toggle-view": &k.ToggleView, "scroll-left": &k.ScrollLeft, "scroll-right": &k.ScrollRight, "expand": &k.Expand, "search": &k.Search,
		"next-match": &k.NextMatch, "prev-match": &k.PrevMatch, "apply": &k.Apply,
		"rollback": &k.Rollback, "take": &k.Take, "confirm": &k.Confirm, "cancel": &k.Cancel, "help": &k.Help, "quit": &k.Quit,
	}
}

// Actions lists the names Bind accepts, sorted.
func (k KeyMap) Actions() []string {
	names := make([]string, 0, 32)
	for n := range k.actions() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Bind sets the keys of the action named name (see Actions), keeping its
// help text; the help shows the first key.
func (k *KeyMap) Bind(name string, keys ...string) error {
	b, ok := k.actions()[name]
	if !ok {
		return fmt.Errorf("key binding %q: no such action (one of %s)", name, strings.Join(k.Actions(), ", "))
	}
	if len(keys) == 0 {
		return fmt.Errorf("key binding %q: no keys given", name)
	}
	b.SetKeys(keys...)
	b.SetHelp(keys[0], b.Help().Desc)
	return nil
}
