package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview"
)

func newDiffCmd() *cobra.Command {
	var f sessionFlags
	var stat, nameOnly, asJSON, binary bool
	cmd := &cobra.Command{
		Use:   "diff [--stat|--name-only|--json] [--binary] [--session ID] [PATH...]",
		Short: "Show the staged changes as a git-style diff",
		Long: `diff prints the session's staged changes as git-style unified diff text: modes, new and
deleted files, renames, symlinks. With --binary, binary files are written as git binary patches
and the whole text applies with 'git apply' to the project as it was when the session started.
On a terminal the diff is coloured and control characters are shown escaped; piped, it is the
exact bytes. It works while a run is going.`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			if countTrue(stat, nameOnly, asJSON) > 1 {
				return usageError{msg: "--stat, --name-only and --json exclude each other"}
			}
			_, s, err := f.readSession()
			if err != nil {
				return err
			}
			cs, err := s.Changes()
			if err != nil {
				return err
			}
			if paths, err = projectPaths(s.Project(), paths); err != nil {
				return err
			}
			changes := cs.Select(paths)
			out := cmd.OutOrStdout()
			tty := isTerminal(out)
			switch {
			case nameOnly:
				// Quoted like git's core.quotePath, so a name with a newline or an escape
				// sequence stays one line and never reaches a terminal raw.
				for _, c := range changes {
					fmt.Fprintln(out, diffview.QuotePath(c.Path))
				}
				return nil
			case asJSON:
				doc, err := s.Doc(changes)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			patches, err := s.Patches(changes)
			if err != nil {
				return err
			}
			if stat {
				entries := make([]diffview.StatEntry, len(patches))
				for i, p := range patches {
					entries[i] = diffview.StatOf(p, diffview.Options{})
				}
				return diffview.WriteStat(out, entries, terminalWidth(out))
			}
			opts := diffview.PatchOptions{Binary: binary}
			if !tty {
				return diffview.WritePatch(out, patches, opts)
			}
			var buf bytes.Buffer
			if err := diffview.WritePatch(&buf, patches, opts); err != nil {
				return err
			}
			return diffview.ColorPatch(out, buf.Bytes(), diffview.DefaultStyles(darkBackground(os.Getenv("COLORFGBG"))))
		},
	}
	f.register(cmd, false)
	cmd.Flags().BoolVar(&stat, "stat", false, "show a diffstat instead of the diff")
	cmd.Flags().BoolVar(&nameOnly, "name-only", false, "show only the changed paths")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the changes and their hunks as JSON (schema: session.DiffDoc)")
	cmd.Flags().BoolVar(&binary, "binary", false, "write binary changes as git binary patches")
	return cmd
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// terminalWidth is the column count of w when it is a terminal, else 80.
func terminalWidth(w any) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 80
}
