package main

import (
	"errors"
	"strings"

	"github.com/shadow-sandbox/shadow/session"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError marks a mistake in how shadow was called (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func isUsageError(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// Several open sessions and none named: the command needs --session.
	var several *session.SeveralOpenError
	if errors.As(err, &several) {
		return true
	}
	// cobra's own flag and argument errors.
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// flagErrorLine words a flag's bad value as "--NAME: what is wrong", the way shadow's own checks
// of flags word it, rather than pflag's "invalid argument … for … flag: <parser's error>".
func flagErrorLine(err error) string {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) && iv.GetFlag() != nil && iv.Unwrap() != nil {
		return "--" + iv.GetFlag().Name + ": " + iv.Unwrap().Error()
	}
	return err.Error()
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "shadow",
		Short: "Run an AI coding agent in a jail, then review and apply what it changed",
		Long: `shadow gives an AI coding agent a terminal without giving it the machine.

It audits the project and the environment first (preflight), runs the agent in an unprivileged
Linux jail where every write to the project is staged in an overlay (jail), and shows the staged
changes hunk by hunk so you accept, reject, apply and roll back (review).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{msg: flagErrorLine(err) + " (see `" + c.CommandPath() + " --help`)"}
	})
	// The commands that change the project or the session's state finish their work when the
	// output they print to is closed under them.
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		switch c.Name() {
		case "apply", "revert", "discard", "export", "trust-config":
			outliveClosedOutput()
		}
	}
	root.AddCommand(
		newDoctorCmd(),
		newVerifyCmd(),
		newExecCmd(),
		newRunCmd(),
		newShellCmd(),
		newTUICmd(),
		newDiffCmd(),
		newCompareCmd(),
		newLogCmd(),
		newNetCmd(),
		newRevertCmd(),
		newReviewCmd(),
		newApplyCmd(),
		newExportCmd(),
		newSessionsCmd(),
		newDiscardCmd(),
		newVersionCmd(),
		newTrustConfigCmd(),
		newManPagesCmd(),
	)
	registerCompletions(root)
	return root
}
