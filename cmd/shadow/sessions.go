package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/internal/jsonout"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/session"
)

func newSessionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions [--json]",
		Short: "List sessions: id, project, created, runs, files staged, network requests, state",
		Long: `sessions lists every session in the state directory, oldest first: its id, project, when
it was created, how many runs it has had, how many files it stages, how many network requests its
runs made, and its state (open, applied or discarded; running, incomplete, or with its project
gone from its path). An apply a crash interrupted is finished or rolled back first, so the states
listed are true.

A project that was moved or renamed keeps its session: ` + "`shadow sessions move ID DIR`" + ` gives
the session the project's new path.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore()
			if err != nil {
				return err
			}
			// An interrupted apply is finished or rolled back first, so the states listed are
			// true; a project that cannot be recovered is reported and listed as it is.
			if msg, err := st.RecoverAll(); msg != "" || err != nil {
				if msg != "" {
					sayErr(cmd.ErrOrStderr(), "shadow:", msg)
				}
				if err != nil {
					sayErr(cmd.ErrOrStderr(), "shadow: warning:", err)
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
				return jsonout.NewEncoder(cmd.OutOrStdout()).Encode(list)
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
				if s.Gone {
					fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t%d\t%s (project gone from this path: moved? `shadow sessions move %s NEW-PATH`)\n", s.ID, visiblePath(s.Project),
						s.Created.Local().Format("2006-01-02 15:04"), s.Network, state, s.ID)
					continue
				}
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
	cmd.AddCommand(newSessionsMoveCmd())
	return cmd
}

func newSessionsMoveCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "move ID DIR [--force]",
		Short: "Give an open session the new path of its project, after the project was moved or renamed",
		Long: `move gives session ID the path DIR, where its project now is: after ` + "`mv proj proj2`" + `, shadow
finds no session at proj2, and says which session was proj's. The session's staged changes, its
checkpoints and the agents' state for the project come along.

DIR must be the same directory as before (the same device and inode, as a move or rename within
one filesystem keeps them); --force moves the session to another directory anyway (a copy of the
project, or one moved across filesystems), where its staged changes are compared with what is
there.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore()
			if err != nil {
				return err
			}
			s, err := st.Get(args[0])
			if err != nil {
				return err
			}
			dir, err := session.ResolveProject(args[1])
			if err != nil {
				return err
			}
			to, err := st.LockProject(dir, session.LockOptions{Command: "sessions move"})
			if err != nil {
				return err
			}
			defer to.Release()
			from, err := st.LockProject(s.Project(), session.LockOptions{Command: "sessions move"})
			if err != nil {
				return err
			}
			defer from.Release()
			if _, err := st.Move(s.ID(), to, from, force); err != nil {
				return err
			}
			agents, err := preset.MoveState(st.Root, from.Project(), dir)
			if err != nil {
				sayErr(cmd.ErrOrStderr(), "shadow: warning:", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "session %s is now the session of %s (it was %s)\n", s.ID(), visiblePath(dir), visiblePath(from.Project()))
			if len(agents) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "the state of %s came along\n", strings.Join(agents, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "move the session to a directory that is not the one it was (a copy of the project)")
	return cmd
}

// visiblePath quotes a path that holds control characters, so a listing never sends them raw.
func visiblePath(p string) string { return quote.Path(p) }
