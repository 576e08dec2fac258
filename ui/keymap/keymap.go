// Package keymap holds the app's key bindings and applies the configuration's `keys` table to
// them and to the review screen's, so that `shadow review` reads the same table as the app
// without linking it.
package keymap

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"

	"github.com/shadow-sandbox/shadow/diffview"
)

// DefaultPrefix is the key that opens shadow's own commands while the agent
// has the keyboard.
const DefaultPrefix = "ctrl+]"

// KeyMap holds the app's key bindings with their help text. While the
// agent runs every key goes to it except Prefix, which opens the command
// menu (pressed twice, it reaches the agent itself).
type KeyMap struct {
	// Preflight.
	Start, Details, Up, Down, Passes, HostInfo, Quit key.Binding
	// Agent.
	Prefix                                        key.Binding
	Review, Checkpoint, Stop, Detach, Help, Close key.Binding
	// After the agent ends.
	Continue key.Binding
}

// DefaultKeyMap is the app's default key table.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		Start:    b([]string{"enter"}, "enter", "start the agent"),
		Details:  b([]string{"d", "right", "l"}, "d", "details of the finding"),
		Up:       b([]string{"k", "up"}, "k/↑", "previous finding"),
		Down:     b([]string{"j", "down"}, "j/↓", "next finding"),
		Passes:   b([]string{"p"}, "p", "show / hide passed checks"),
		HostInfo: b([]string{"i"}, "i", "list / fold the host's own findings"),
		Quit:     b([]string{"q", "ctrl+c"}, "q", "quit"),
		Prefix:   b([]string{DefaultPrefix}, DefaultPrefix, "shadow's commands"),
		Review:   b([]string{"r"}, "r", "review the changes so far (read-only)"),
		// Enter typed into the agent's pane takes a checkpoint too (Model.agentKey).
		Checkpoint: b([]string{"c"}, "c", "take a checkpoint now"),
		Stop:       b([]string{"s"}, "s", "stop the agent"),
		Detach:     b([]string{"D"}, "D", "detach (the agent keeps running)"),
		Help:       b([]string{"?"}, "?", "help"),
		Close:      b([]string{"esc", "q"}, "esc", "back to the agent"),
		Continue:   b([]string{"enter"}, "enter", "review the changes"),
	}
}

// SetPrefix replaces the prefix key.
func (k *KeyMap) SetPrefix(s string) {
	k.Prefix = key.NewBinding(key.WithKeys(s), key.WithHelp(s, "shadow's commands"))
}

// MenuHelp is the help of the prefix menu, one binding a line. Close is not
// among them: every key that is none of them closes the menu, and its title
// says so.
func (k KeyMap) MenuHelp() []key.Binding {
	return []key.Binding{k.Review, k.Checkpoint, k.Stop, k.Detach, k.Help}
}

// ShortHelp is the preflight's one-line help.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Start, k.Up, k.Down, k.Details, k.Passes, k.HostInfo, k.Quit}
}

// FullHelp is every key of the app, in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Start, k.Up, k.Down, k.Details, k.Passes, k.HostInfo, k.Quit},
		{k.Prefix, k.Review, k.Checkpoint, k.Stop, k.Detach, k.Help, k.Close, k.Continue},
	}
}

// ApplyKeys rebinds the app's and the review screen's keys from the
// configuration's `keys` table (action name -> keys). It returns an error
// naming an unknown action, so a typo never goes unnoticed.
func ApplyKeys(k *KeyMap, r *diffview.KeyMap, table map[string][]string) error {
	actions := map[string]*key.Binding{
		"start": &k.Start, "details": &k.Details, "passes": &k.Passes, "host-info": &k.HostInfo, "prefix": &k.Prefix,
		"review": &k.Review, "checkpoint": &k.Checkpoint, "stop": &k.Stop, "detach": &k.Detach, "close": &k.Close, "continue": &k.Continue,
		"down": &r.Down, "up": &r.Up, "page-down": &r.PageDown, "page-up": &r.PageUp,
		"top": &r.Top, "bottom": &r.Bottom, "focus": &r.Focus,
		"next-hunk": &r.NextHunk, "prev-hunk": &r.PrevHunk, "next-file": &r.NextFile, "prev-file": &r.PrevFile,
		"next-undecided": &r.NextUndecided, "accept": &r.Accept, "reject": &r.Reject,
		"accept-file": &r.AcceptFile, "reject-file": &r.RejectFile, "accept-all": &r.AcceptAll,
		"split": &r.Split, "select-line": &r.SelectLine, "edit": &r.Edit, "undo": &r.Undo,
		"toggle-view": &r.ToggleView, "search": &r.Search, "next-match": &r.NextMatch, "prev-match": &r.PrevMatch,
		"apply": &r.Apply, "rollback": &r.Rollback, "take": &r.Take, "help": &r.Help, "quit": &r.Quit,
		"prev-step": &r.PrevStep, "next-step": &r.NextStep, "all-steps": &r.AllSteps,
	}
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b, ok := actions[n]
		if !ok {
			return fmt.Errorf("keys: unknown action %q", n)
		}
		keys := table[n]
		if len(keys) == 0 {
			return fmt.Errorf("keys: action %q has no keys", n)
		}
		*b = key.NewBinding(key.WithKeys(keys...), key.WithHelp(strings.Join(keys, "/"), b.Help().Desc))
		if n == "up" || n == "down" || n == "quit" {
			// The preflight moves and quits with the same keys as the review.
			switch n {
			case "up":
				k.Up = *b
			case "down":
				k.Down = *b
			case "quit":
				k.Quit = *b
			}
		}
	}
	return nil
}
