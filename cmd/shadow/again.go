package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

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
	for _, a := range args {
		parts = append(parts, quoteArg(a))
	}
	if in.project != "" && in.project != in.here {
		parts = append(parts, "--project", quoteArg(in.project))
	}
	return strings.Join(parts, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// quoteArg quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
