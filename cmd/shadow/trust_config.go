package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/session"
)

func newTrustConfigCmd() *cobra.Command {
	var projectFlag string
	cmd := &cobra.Command{
		Use:   "trust-config",
		Short: "Trust the project's .shadow.toml as it is now, so it may widen the policy",
		Long: `A project's .shadow.toml can only narrow the policy: keys that would widen it
(allow-network, allow-domain, rw, ro, env, publish, a weaker trust, git-writable) are
ignored with a warning. trust-config records the hash of the file's current content in
your state directory; any later edit makes it untrusted again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			project, err := session.ResolveProject(projectFlag)
			if err != nil {
				return err
			}
			root, err := session.DefaultRoot()
			if err != nil {
				return err
			}
			path := filepath.Join(project, session.ProjectConfigName)
			h, err := session.TrustConfig(root, path)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trusted %s (%s)\n", path, h)
			return nil
		},
	}
	cmd.Flags().StringVar(&projectFlag, "project", "", "project directory (default: the git top level, else the working directory)")
	return cmd
}
