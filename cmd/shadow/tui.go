package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui"
)

func newTUICmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "tui [run flags] [--trust P] -- CMD [ARG...]",
		Short: "The whole flow in one app: live preflight, the agent in a jailed terminal pane, review",
		Long: `tui runs the preflight (doctor's host checks, the project's dependency audit and the
environment rules inside a fresh jail) with each finding appearing as it completes; if the trust
profile allows, it starts CMD in the jail in a terminal pane (ctrl+] opens shadow's commands:
review so far, stop the agent, help); when the agent ends, the review screen opens on the session:
accept or reject each hunk, apply, roll back. Quitting before applying keeps the session open for
'shadow review'.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !isTerminal(cmd.OutOrStdout()) || !isTerminal(cmd.InOrStdin()) {
				return usageError{msg: "tui needs a terminal; use `shadow run` in scripts"}
			}
			setup, err := f.resolve()
			if err != nil {
				return err
			}
			if argv, err = setup.applyPreset(argv); err != nil {
				return usageError{msg: err.Error()}
			}
			lk, err := setup.store.LockProject(setup.project, session.LockOptions{Wait: f.wait, Command: "tui"})
			if err != nil {
				return err
			}
			defer lk.Release()
			if lk.Recovered != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "shadow:", lk.Recovered)
			}
			var s *session.Session
			if f.newSession {
				s, err = lk.Create()
			} else {
				s, _, err = lk.CurrentOrCreate()
			}
			if err != nil {
				return err
			}
			s.SetProtected(setup.cfg.Protected)
			setup.policy.NetLog = s.NetLog()
			trust := setup.trust
			if trust == "" {
				trust = "dependency"
			}
			opts := ui.Options{
				Argv:      argv,
				Profile:   trust,
				Countdown: ui.DefaultCountdown,
				Keys:      setup.cfg.Keys,
				Jail: &ui.Jail{Lock: lk, Session: s, Policy: setup.policy, Granted: setup.granted,
					Apply: session.ApplyOptions{Protected: setup.cfg.Protected}},
			}
			if setup.cfg.PrefixKey != nil {
				opts.PrefixKey = *setup.cfg.PrefixKey
			}
			code, err := ui.Run(cmd.Context(), opts)
			if err != nil {
				return withCode(code, err)
			}
			if code == exitOK {
				fmt.Fprintf(os.Stderr, "session %s: `shadow review` to come back to it\n", s.ID())
			}
			return withCode(code, nil)
		},
	}
	f.register(cmd)
	return cmd
}
