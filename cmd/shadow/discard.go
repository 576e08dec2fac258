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
		Args:  cobra.NoArgs,
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
