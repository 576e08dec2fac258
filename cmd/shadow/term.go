package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
)

// isTerminal reports whether w is a terminal (colour and escaping decisions depend on it).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(f.Fd())
}

// darkBackground tells the colours of a dark terminal background from a
// light one without asking the terminal: a command that prints and exits
// must not send a query (OSC 11, DA1), whose reply, if it comes after the
// command has ended, is typed into the user's shell. COLORFGBG ("fg;bg" or
// "fg;default;bg", set by rxvt, Konsole, iTerm2 and others) decides when it
// names a colour; otherwise the background is taken as dark, the common case
// and lipgloss's own default.
func darkBackground(colorfgbg string) bool {
	fields := strings.Split(colorfgbg, ";")
	bg, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil {
		return true
	}
	// Of the 16 ANSI colours, 7 (light grey) and 9–15 (bright) are light;
	// 0–6 and 8 (dark grey) are dark.
	return bg != 7 && (bg < 9 || bg > 15)
}
