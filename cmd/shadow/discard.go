package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newDiscardCmd() *cobra.Command {
	var f sessionFlags
	var yes bool
	cmd := &cobra.Command{
		Use:   "discard [--session ID] [--yes]",
		Short: "Drop a session's staged changes (the project is not touched)",
		Long: `discard drops every change the session stages, its checkpoints and its pending decisions, and
marks the session discarded; the next ` + "`shadow run`" + ` starts a new one. The project itself is not
touched: what an apply already wrote stays written (` + "`shadow apply --rollback`" + ` undoes that first).
It asks first on a terminal; --yes does not ask. It is refused while a run of the session is going,
and needs no free disk space, so it works on a full disk.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lk, s, err := f.writeSession("discard", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer lk.Release()
			if !yes {
				ok, err := confirm(cmd.InOrStdin(), cmd.ErrOrStderr(),
					fmt.Sprintf("Drop every staged change of session %s?", s.ID()))
				if err != nil {
					return err
				}
				if !ok {
					return withCode(exitError, fmt.Errorf("nothing discarded"))
				}
			}
			if err := s.Discard(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "discarded session %s\n", s.ID())
			return nil
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
