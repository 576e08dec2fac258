package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/session"
)

func newExportCmd() *cobra.Command {
	var f sessionFlags
	var opts session.ExportOptions
	cmd := &cobra.Command{
		Use:   "export --branch NAME [-m MSG] [--include-ignored] [--allow-protected] [--session ID]",
		Short: "Write the session's staged tree as a commit on a new git branch",
		Long: `export writes what the agent staged as one commit on a new branch, made from the commit
HEAD named when the session started. It is made in a temporary index: your work tree, your
index and HEAD are not touched, so you can look at it, push it or open a pull request from it
while you keep working. 'git diff BASE NAME' shows what 'shadow diff --binary' shows.

Ignored and protected paths (and symlinks that leave the project) are left out unless the same
flags as apply's let them in. An existing branch is never overwritten.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Branch == "" {
				return usageError{msg: "export needs --branch NAME"}
			}
			_, s, err := f.readSession()
			if err != nil {
				return err
			}
			if s.RunActive() {
				return fmt.Errorf("export: a run is active on session %s; export when it ends", s.ID())
			}
			res, err := s.Export(opts)
			if err != nil {
				return err
			}
			errw := cmd.ErrOrStderr()
			for _, sk := range res.Skipped {
				fmt.Fprintf(errw, "  skip   %s: %s\n", diff.Escape(sk.Path), sk.Reason)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s as branch %s (commit %s, on %s)\n",
				english.Count(res.Paths, "path"), res.Branch, res.Commit, res.Base)
			return nil
		},
	}
	f.register(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&opts.Branch, "branch", "", "the new branch's name (it must not exist)")
	fl.StringVarP(&opts.Message, "message", "m", "", "the commit message (default: one naming the session, its runs and the agent's command)")
	fl.BoolVar(&opts.IncludeIgnored, "include-ignored", false, "export ignored paths too (node_modules/, build output...)")
	fl.BoolVar(&opts.AllowProtected, "allow-protected", false, "export protected paths too (CI config, agent settings...)")
	fl.BoolVar(&opts.AllowOutsideLinks, "allow-outside-links", false, "export staged symlinks whose target leaves the project")
	return cmd
}
