package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/session"
)

// invocation is what it takes to run this shadow again from the user's shell, on the same state:
// the hints shadow prints ("`shadow review` to come back to it") must work as printed, also when
// the binary is not on the PATH or the state directory is a private one (as in `make demo`).
type invocation struct {
	exe       string // this binary's path
	onPath    bool   // the shell's `shadow` is this binary
	stateHome string // $XDG_STATE_HOME, when it is not the default
	here      string // the project a shadow started in the working directory finds without --project
	project   string // the project the hint is about
}

// currentInvocation reads the invocation of this process, for hints about project.
func currentInvocation(project string) invocation {
	in := invocation{project: project}
	in.exe, _ = os.Executable()
	if p, err := exec.LookPath("shadow"); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(in.exe)
		in.onPath = errA == nil && errB == nil && os.SameFile(a, b)
	}
	if sh := os.Getenv("XDG_STATE_HOME"); sh != "" {
		if abs, err := filepath.Abs(sh); err == nil {
			sh = abs
		}
		home, _ := os.UserHomeDir()
		if filepath.Clean(sh) != filepath.Join(home, ".local", "state") {
			in.stateHome = sh
		}
	}
	in.here, _ = session.ResolveProject("")
	return in
}

// command is the shell command line that runs `shadow args...` on the same state and project.
func (in invocation) command(args ...string) string {
	var parts []string
	if in.stateHome != "" {
		parts = append(parts, "XDG_STATE_HOME="+quoteArg(in.stateHome))
	}
	if in.onPath || in.exe == "" {
		parts = append(parts, "shadow")
	} else {
		parts = append(parts, quoteArg(in.exe))
	}
	var command []string // after "--": a command of the jail's
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i:]
	}
	for _, a := range args {
		parts = append(parts, quoteArg(a))
	}
	if in.project != "" && in.project != in.here {
		parts = append(parts, "--project", quoteArg(in.project))
	}
	for _, a := range command {
		parts = append(parts, quoteArg(a))
	}
	return strings.Join(parts, " ")
}

// resumeCommand is the shadow command that resumes the conversation of the agent argv (its preset
// presetName, else argv[0]'s) when screen, what the agent showed last, holds the agent's own
// resume hint: `shadow tui -- claude --resume ID` for `claude --resume ID`, the agent as it was
// started; "" when it holds none.
func (in invocation) resumeCommand(presetName string, argv []string, screen string) string {
	if len(argv) == 0 {
		return ""
	}
	pr, err := preset.Select(presetName, argv[0])
	if err != nil || pr == nil {
		return ""
	}
	args := preset.ResumeArgs(pr.Name, screen)
	if args == nil {
		return ""
	}
	return in.command(append([]string{"tui", "--", argv[0]}, args...)...)
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// quoteArg quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
