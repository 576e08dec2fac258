package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/jsonout"
	"github.com/shadow-sandbox/shadow/session"
)

func newDiffCmd() *cobra.Command {
	var f sessionFlags
	var stat, nameOnly, asJSON, binary bool
	var checkpoint, since string
	cmd := &cobra.Command{
		Use:   "diff [--stat|--name-only|--json] [--binary] [--checkpoint ID|--since ID] [--session ID] [PATH...]",
		Short: "Show the staged changes as a git-style diff",
		Long: `diff prints the session's staged changes as git-style unified diff text: modes, new and
deleted files, renames, symlinks. With --binary, binary files are written as git binary patches
and the whole text applies with 'git apply' to the project as it was when the session started.
On a terminal the diff is coloured and control characters are shown escaped; piped, it is the
exact bytes. It works while a run is going.

--checkpoint ID shows what one step of the session's history changed (from the checkpoint before
it to ID), --since ID everything staged after checkpoint ID; 'shadow log' lists the checkpoints.`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			if countTrue(stat, nameOnly, asJSON) > 1 {
				return usageError{msg: "--stat, --name-only and --json exclude each other"}
			}
			if checkpoint != "" && since != "" {
				return usageError{msg: "--checkpoint and --since exclude each other"}
			}
			_, s, err := f.readSession()
			if err != nil {
				return err
			}
			warnIncomplete(cmd.ErrOrStderr(), s)
			if paths, err = projectPaths(s.Project(), paths); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tty := isTerminal(out)
			if checkpoint != "" || since != "" {
				if asJSON {
					return usageError{msg: "--json shows the whole change set; it does not go with --checkpoint or --since"}
				}
				patches, err := historyPatches(s, checkpoint, since, paths)
				if err != nil {
					return err
				}
				return writeHistory(out, patches, nameOnly, stat, binary, tty)
			}
			if !asJSON {
				// What a running run checkpointed is staged once the run ends: until then the
				// session's history up to its latest checkpoint is what it holds.
				if patches, ok, err := runningPatches(s, paths); err != nil || ok {
					if err != nil {
						return err
					}
					return writeHistory(out, patches, nameOnly, stat, binary, tty)
				}
			}
			cs, err := s.Changes()
			if err != nil {
				return err
			}
			changes := cs.Select(paths)
			switch {
			case nameOnly:
				// Quoted like git's core.quotePath, so a name with a newline or an escape
				// sequence stays one line and never reaches a terminal raw.
				for _, c := range changes {
					fmt.Fprintln(out, diff.QuotePath(c.Path))
				}
				return nil
			case asJSON:
				doc, err := s.Doc(changes)
				if err != nil {
					return err
				}
				return jsonout.NewEncoder(out).Encode(doc)
			}
			patches, err := s.Patches(changes)
			if err != nil {
				return err
			}
			return writePatches(out, patches, stat, binary, tty)
		},
	}
	f.register(cmd, false)
	cmd.Flags().BoolVar(&stat, "stat", false, "show a diffstat instead of the diff")
	cmd.Flags().BoolVar(&nameOnly, "name-only", false, "show only the changed paths")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the changes and their hunks as JSON (schema: session.DiffDoc)")
	cmd.Flags().BoolVar(&binary, "binary", false, "write binary changes as git binary patches")
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "show only what checkpoint `ID` changed (see shadow log)")
	cmd.Flags().StringVar(&since, "since", "", "show what was staged after checkpoint `ID`")
	return cmd
}

// runningPatches are, while a run is active and has taken checkpoints, the patches from the
// session's base to its latest checkpoint, limited to paths; ok is false otherwise (the staging
// layer holds all there is).
func runningPatches(s *session.Session, paths []string) (_ []diff.FilePatch, ok bool, err error) {
	if s.Meta.Active == nil || !s.RunActive() {
		return nil, false, nil
	}
	cps, err := s.Checkpoints()
	if err != nil || len(cps) == 0 || cps[len(cps)-1].Time.Before(s.Meta.Active.Start) {
		return nil, false, err
	}
	all, err := s.HistoryPatches(cps, session.Base, len(cps)-1)
	if err != nil {
		return nil, false, err
	}
	return underPaths(all, paths), true, nil
}

// writeHistory prints patches of the session's history: their paths, a diffstat or the patch text.
func writeHistory(out io.Writer, patches []diff.FilePatch, nameOnly, stat, binary, tty bool) error {
	if nameOnly {
		for _, p := range patches {
			fmt.Fprintln(out, diff.QuotePath(p.NewPath))
		}
		return nil
	}
	return writePatches(out, patches, stat, binary, tty)
}

// historyPatches are the patches of one checkpoint's step, or of everything after one, limited
// to paths (all when empty).
func historyPatches(s *session.Session, checkpoint, since string, paths []string) ([]diff.FilePatch, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	var from, to int
	if checkpoint != "" {
		i, err := session.FindCheckpoint(cps, checkpoint)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", s.Meta.ID, err)
		}
		from, to = i-1, i
	} else {
		i, err := session.FindCheckpoint(cps, since)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", s.Meta.ID, err)
		}
		from, to = i, len(cps)-1
	}
	all, err := s.HistoryPatches(cps, from, to)
	if err != nil {
		return nil, err
	}
	return underPaths(all, paths), nil
}

// underPaths are the patches of paths or below them (all when paths is empty).
func underPaths(all []diff.FilePatch, paths []string) []diff.FilePatch {
	if len(paths) == 0 {
		return all
	}
	var out []diff.FilePatch
	for _, p := range all {
		for _, want := range paths {
			if p.NewPath == want || strings.HasPrefix(p.NewPath, want+"/") {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// writePatches prints patches as a diffstat or as git patch text, coloured on a terminal.
func writePatches(out io.Writer, patches []diff.FilePatch, stat, binary, tty bool) error {
	if stat {
		entries := make([]diff.StatEntry, len(patches))
		for i, p := range patches {
			entries[i] = diff.StatOf(p, diff.Options{})
		}
		return diff.WriteStat(out, entries, terminalWidth(out))
	}
	opts := diff.PatchOptions{Binary: binary}
	if !tty {
		return diff.WritePatch(out, patches, opts)
	}
	var buf bytes.Buffer
	if err := diff.WritePatch(&buf, patches, opts); err != nil {
		return err
	}
	return diffview.ColorPatch(out, buf.Bytes(), diffview.DefaultStyles(darkBackground(os.Getenv("COLORFGBG"))))
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
