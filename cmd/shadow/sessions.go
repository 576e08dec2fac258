package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/session"
)

func newSessionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions [--json]",
		Short: "List sessions: id, project, created, runs, files staged, network requests, state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore()
			if err != nil {
				return err
			}
			// An interrupted apply is finished or rolled back first, so the states listed are
			// true; a project that cannot be recovered is reported and listed as it is.
			if msg, err := st.RecoverAll(); msg != "" || err != nil {
				if msg != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "shadow:", msg)
				}
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "shadow: warning:", err)
				}
			}
			list, err := st.List()
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []session.Info{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no sessions")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPROJECT\tCREATED\tRUNS\tSTAGED\tNET\tSTATE")
			for _, s := range list {
				if s.Error != "" {
					fmt.Fprintf(tw, "%s\t%s\t\t\t\t\tunreadable: %s\n", s.ID, visiblePath(s.Project), s.Error)
					continue
				}
				state := string(s.State)
				if s.Running {
					state += " (running)"
				}
				if s.Incomplete != "" {
					state += " (incomplete)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.ID, visiblePath(s.Project),
					s.Created.Local().Format("2006-01-02 15:04"), s.Runs, s.FilesStaged, s.Network, state)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	return cmd
}

// visiblePath quotes a path that holds control characters, so a listing never sends them raw.
func visiblePath(p string) string {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Sprintf("%q", p)
		}
	}
	return p
}
