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
		Short: "List sessions by project: id, name, created, runs, files staged, network requests, disk, state",
		Long: `sessions lists every session in the state directory, grouped by project, oldest first: its
id, its name (--session NAME: several can be open on one project), when it was created, how many
runs it has had, how many files it stages, how many network requests its runs made, what it takes
on disk (an idle session holds no memory: nothing of it runs), and its state (open, applied or
discarded; running, incomplete, or with its project gone from its path). An apply a crash interrupted is finished or rolled back first, so the states
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
			for i, project := range byProject(list) {
				if i > 0 {
					fmt.Fprintln(tw)
				}
				fmt.Fprintf(tw, "%s\n", project.path)
				fmt.Fprintln(tw, "  ID\tNAME\tCREATED\tRUNS\tSTAGED\tNET\tDISK\tSTATE")
				for _, s := range project.sessions {
					fmt.Fprintln(tw, "  "+sessionRow(s))
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	cmd.AddCommand(newSessionsMoveCmd())
	return cmd
}

// projectSessions are the sessions of one project, as `shadow sessions` groups them.
type projectSessions struct {
	path     string // as shown
	sessions []session.Info
}

// byProject groups the sessions by project, each project where its oldest session comes; the
// unreadable sessions, whose project is unknown, come last.
func byProject(list []session.Info) []projectSessions {
	var out []projectSessions
	at := map[string]int{}
	for _, s := range list {
		key, shown := s.Project, visiblePath(s.Project)
		if s.Error != "" && s.Project == "" {
			key, shown = "\x00", "(unreadable sessions)"
		}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, projectSessions{path: shown})
		}
		out[i].sessions = append(out[i].sessions, s)
	}
	return out
}

// sessionRow is one session's row of `shadow sessions`, tab-separated.
func sessionRow(s session.Info) string {
	if s.Error != "" {
		return fmt.Sprintf("%s\t\t\t\t\t\t\tunreadable: %s", s.ID, s.Error)
	}
	name := s.Name
	if name == "" {
		name = "-"
	}
	created := s.Created.Local().Format("2006-01-02 15:04")
	state := string(s.State)
	if s.Gone {
		return fmt.Sprintf("%s\t%s\t%s\t\t\t%d\t%s\t%s (project gone from this path: moved? `shadow sessions move %s NEW-PATH`)", s.ID, name, created, s.Network, humanBytes(s.DiskBytes), state, s.ID)
	}
	if s.Running {
		state += " (running)"
	}
	if s.Incomplete != "" {
		state += " (incomplete)"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s", s.ID, name, created, s.Runs, s.FilesStaged, s.Network, humanBytes(s.DiskBytes), state)
}

// humanBytes is a size as `du -h` says it (1.5M).
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f, suffix := float64(n), ""
	for _, u := range []string{"K", "M", "G", "T"} {
		f, suffix = f/1024, u
		if f < 1024 {
			break
		}
	}
	if f < 10 {
		return fmt.Sprintf("%.1f%s", f, suffix)
	}
	return fmt.Sprintf("%.0f%s", f, suffix)
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
