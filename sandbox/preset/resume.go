package preset

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// An agent that ends says how to resume its conversation: a command that, run outside shadow,
// finds nothing, since the conversation is in the preset's per-project state (see StateDir).
// resumeHints are those commands as each CLI prints them, the arguments after the command name
// in the first group:
//
//	Claude Code  "Resume this session with:" / "claude --resume 0b7c…" (or "claude --resume "name"")
//	Codex        "To continue this session, run codex resume 019b…"
//	Gemini CLI   "To resume this session: gemini --resume 3f2a…"
//	opencode     "Continue  opencode -s ses_…"
//
// Each is compiled when first used: compiling them (their counted repetitions expanded) was most
// of the package initialisation of every shadow process, the jail's PID 1 included.
var resumeHints = map[string]func() *regexp.Regexp{
	"claude":   lazyRegexp(`\bclaude ((?:--resume|-r) (?:"[^"\n]{1,200}"|[0-9A-Za-z_-]{1,100}))`),
	"codex":    lazyRegexp(`\bcodex (resume [0-9A-Za-z_-]{1,100})`),
	"gemini":   lazyRegexp(`\bgemini (--resume [0-9A-Za-z_-]{1,100})`),
	"opencode": lazyRegexp(`\bopencode ((?:-s|--session) [0-9A-Za-z_-]{1,100})`),
}

// ResumeArgs finds, in what the agent printed last (text), the resume command the agent of preset
// name suggests, and returns its arguments after the command name ("--resume", ID); nil when
// there is none (the last such command counts).
func ResumeArgs(name, text string) []string {
	re := resumeHints[name]
	if re == nil {
		return nil
	}
	all := re().FindAllStringSubmatch(text, -1)
	if len(all) == 0 {
		return nil
	}
	flag, id, _ := strings.Cut(all[len(all)-1][1], " ")
	if u, err := strconv.Unquote(id); err == nil {
		id = u
	}
	return []string{flag, id}
}

// lazyRegexp is regexp.MustCompile(expr), done once, when first called.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
