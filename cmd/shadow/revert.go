package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/internal/english"

	"github.com/shadow-sandbox/shadow/session"
)

func newRevertCmd() *cobra.Command {
	var f sessionFlags
	var to string
	var undo, yes bool
	cmd := &cobra.Command{
		Use:   "revert (--to ID | --undo) [--yes] [--session ID]",
		Short: "Drop every staged change made after a checkpoint, or undo the last revert",
		Long: `revert --to ID drops every staged change made after checkpoint ID (see 'shadow log'): the staged
tree becomes what it was when ID was taken. It shows what it drops and asks first. It is refused
while a run is active. 'shadow revert --undo' puts back what the last revert dropped, until the
next run. The project itself is never touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (to == "") == !undo {
				return usageError{msg: "give either --to ID or --undo"}
			}
			lk, s, err := f.writeSession("revert", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer lk.Release()
			out := cmd.OutOrStdout()
			if undo {
				back, err := s.RevertUndo()
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "restored %s: %s\n", english.Count(len(back), "checkpoint"), checkpointIDs(back))
				return nil
			}
			cps, err := s.Checkpoints()
			if err != nil {
				return err
			}
			i, err := session.FindCheckpoint(cps, to)
			if err != nil {
				return fmt.Errorf("session %s: %w", s.ID(), err)
			}
			to = cps[i].ID
			drop := cps[i+1:]
			if len(drop) == 0 {
				fmt.Fprintf(out, "nothing to revert: %s is the last checkpoint\n", to)
				return nil
			}
			patches, err := s.HistoryPatches(cps, i, len(cps)-1)
			if err != nil {
				return err
			}
			if !yes {
				if err := writePatches(cmd.ErrOrStderr(), patches, true, false, false); err != nil {
					return err
				}
				ok, err := confirm(cmd.InOrStdin(), cmd.ErrOrStderr(), fmt.Sprintf(
					"Drop %s (%s) of session %s, back to %s?", english.Count(len(drop), "checkpoint"), checkpointIDs(drop), s.ID(), to))
				if err != nil {
					return err
				}
				if !ok {
					return withCode(exitError, fmt.Errorf("nothing reverted"))
				}
			}
			dropped, err := s.Revert(to)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "reverted to %s: dropped %s (%s); `shadow revert --undo` puts %s back until the next run\n",
				to, english.Count(len(dropped), "checkpoint"), checkpointIDs(dropped), english.Noun(len(dropped), "it", "them"))
			return nil
		},
	}
	f.register(cmd, true)
	cmd.Flags().StringVar(&to, "to", "", "the checkpoint `ID` to go back to")
	cmd.Flags().BoolVar(&undo, "undo", false, "put back what the last revert dropped")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func checkpointIDs(cps []session.Checkpoint) string {
	ids := make([]string, len(cps))
	for i, c := range cps {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}
