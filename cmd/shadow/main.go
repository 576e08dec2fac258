// Command shadow runs an AI coding agent in an unprivileged Linux jail over a project, stages every
// write, and lets the developer review, apply and roll back what the agent changed.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/shadow-sandbox/shadow/assets"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/doctor"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// Exit codes shared by every command (SPEC §1); a run's come from sandbox.ExitStatus.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitBlocked = 3
	exitNoJail  = sandbox.ExitNoJail
)

// exitCode carries a process exit status through cobra's error return. A nil err means the message
// was already printed (or there is none).
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCode) Unwrap() error { return e.err }

// withCode attaches an exit code to an error.
func withCode(code int, err error) error { return &exitCode{code: code, err: err} }

func main() {
	// The jail's PID 1 and the doctor's probes are this same binary, re-executed.
	if sandbox.IsReexec() {
		sandbox.ReexecMain()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == doctor.ProbeArg {
		os.Exit(doctor.ProbeMain(os.Args[2:]))
	}
	// The agent host of `shadow tui`, which keeps a detached agent running.
	if len(os.Args) > 1 && os.Args[1] == agenthost.Arg {
		os.Exit(agenthost.Main())
	}
	doctor.AppArmorTemplate = assets.AppArmorTemplate
	if startsJail(os.Args[1:]) {
		// Its costliest part, beside the rest of the start-up.
		sandbox.StartMaskCheck(maskCacheDir())
	}
	os.Exit(run(os.Args[1:]))
}

// startsJail reports whether args are those of a command that starts a jail at once (run, shell):
// what the jail's start needs can begin before the flags are parsed.
func startsJail(args []string) bool {
	return len(args) > 0 && (args[0] == "run" || args[0] == "shell")
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	// A write that found the state directory full says so, and what to do, rather than which
	// temporary file it was making.
	state, _ := session.DefaultRoot()
	var ec *exitCode
	if errors.As(err, &ec) {
		if ec.err != nil {
			sayErr(os.Stderr, "shadow:", session.ExplainFull(movedHint(ec.err), state))
		}
		return ec.code
	}
	// Errors of the system name paths unquoted, and a staged path is the agent's: whatever
	// a message holds, no byte of it acts on the terminal.
	err = session.ExplainFull(movedHint(err), state)
	sayErr(os.Stderr, "shadow:", err)
	if isUsageError(err) {
		return exitUsage
	}
	return exitError
}

// sayErr prints a line of shadow's own, "shadow:" or "shadow: warning:" and what v says, with
// every byte a terminal would act on spelled out (quote.Text): errors of the system name paths
// unquoted, and a staged path is the agent's.
func sayErr(w io.Writer, prefix string, v any) {
	fmt.Fprintln(w, prefix, quote.Text(fmt.Sprint(v)))
}

// movedHint adds to the error that finds a moved project's session the command that brings the
// session along, as the user's shell runs it.
func movedHint(err error) error {
	var moved *session.MovedError
	if !errors.As(err, &moved) {
		return err
	}
	move := currentInvocation("").command("sessions", "move", moved.ID, moved.Project)
	return fmt.Errorf("%w: bring the session along with `%s`, or start another with `shadow run --new`", err, move)
}
