package main

import (
	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/internal/jsonout"
	"github.com/shadow-sandbox/shadow/sandbox/doctor"
	"github.com/shadow-sandbox/shadow/session"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check that this host can build the jail, and say how to fix it when not",
		Long: `doctor tries each thing the jail needs (user namespaces, overlay inside a user namespace,
Landlock, seccomp, openat2, ptys, pasta/slirp4netns) and prints ok, missing or degraded for each,
with the exact remedy for this distribution. Exit status 0 when 'shadow run' will work, 1 when not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A project left half-applied by a killed apply is put right first.
			if err := recoverExisting("", cmd.ErrOrStderr()); err != nil {
				sayErr(cmd.ErrOrStderr(), "shadow: warning:", err)
			}
			state, err := session.DefaultRoot()
			if err == nil {
				err = session.CheckStateDir(state)
			}
			rep := doctor.RunWith(cmd.Context(), doctor.Options{StateDir: state, StateDirErr: err})
			if asJSON {
				if err := jsonout.NewEncoder(cmd.OutOrStdout()).Encode(rep); err != nil {
					return err
				}
			} else {
				rep.Text(cmd.OutOrStdout(), isTerminal(cmd.OutOrStdout()))
			}
			if !rep.OK() {
				return withCode(exitError, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}
