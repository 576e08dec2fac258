package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManPagesCmd writes shadow(1), shadow-run(1), … from the command tree, for make install and
// the Debian package. Hidden: it is a build step, not something a user runs.
func newManPagesCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man-pages DIR",
		Short:  "Write the man pages of every command to DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			// SOURCE_DATE_EPOCH, when set, dates the pages (reproducible builds).
			header := &doc.GenManHeader{Section: "1", Source: "shadow " + version, Manual: "shadow manual"}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return fmt.Errorf("write the man pages: %w", err)
			}
			return nil
		},
	}
}
