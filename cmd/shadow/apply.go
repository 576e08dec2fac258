package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/session"
)

func newApplyCmd() *cobra.Command {
	var f sessionFlags
	var all, yes, includeIgnored, allowProtected, allowOutside, rollback, commit bool
	var to, message string
	cmd := &cobra.Command{
		Use:   "apply [--all] [--yes] [--commit [-m MSG]] [--include-ignored] [--allow-protected] [--session ID] [PATH...]",
		Short: "Write accepted changes (or whole files) into the project; --rollback undoes an apply",
		Long: `apply writes into the project the hunks accepted in review, or with --all or PATHs whole
files as the agent left them. Ignored paths (the project's .gitignore as it was) need
--include-ignored; protected paths (.git, CI config, editor and agent settings, rc files...)
need --allow-protected. A file you changed too since the agent's pre-image is merged: the
agent's changes go onto your version, and lines you both changed wait for a decision in
review (--all leaves such a file out until then). Other host changes are refused.

With --commit, the paths written become one git commit (nothing else you staged goes in),
with -m's message or one naming the session, its runs and the agent's command; rolling the
apply back undoes the commit too, and is refused once the commit is no longer HEAD.

Every apply is journaled: a crash at any instant is completed or rolled back by the next
shadow command, and 'shadow apply --rollback' restores the project byte for byte.

` + protectedHelp(),
		RunE: func(cmd *cobra.Command, paths []string) error {
			if rollback {
				if all || len(paths) > 0 || includeIgnored || allowProtected || commit || message != "" {
					return usageError{msg: "--rollback takes only --to, --yes and --project"}
				}
				return runRollback(cmd, &f, to, yes)
			}
			if to != "" {
				return usageError{msg: "--to goes with --rollback"}
			}
			if message != "" && !commit {
				return usageError{msg: "-m goes with --commit"}
			}
			lk, s, err := f.writeSession("apply", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer lk.Release()
			warnIncomplete(cmd.ErrOrStderr(), s)
			if paths, err = projectPaths(s.Project(), paths); err != nil {
				return err
			}
			if commit {
				if err := s.CheckCommit(); err != nil {
					return err
				}
			}
			opts := session.ApplyOptions{All: all, Paths: paths, IncludeIgnored: includeIgnored,
				AllowProtected: allowProtected, AllowOutsideLinks: allowOutside}
			errw := cmd.ErrOrStderr()
			if !yes {
				// Asking first needs the plan; with --yes, Apply plans once itself and the
				// plan is shown with the result.
				plan, err := s.PlanApply(opts)
				if err != nil {
					return err
				}
				printPlan(errw, plan)
				if len(plan.Files) == 0 {
					return nothingToApply(errw, all || len(paths) > 0)
				}
				ok, err := confirm(cmd.InOrStdin(), errw, fmt.Sprintf("Write %s into %s?", english.Count(len(plan.Files), "path"), s.Project()))
				if err != nil {
					return err
				}
				if !ok {
					return withCode(exitError, fmt.Errorf("nothing applied"))
				}
			}
			// From here on, Ctrl+C (SIGINT, SIGTERM, SIGHUP) finishes or undoes the apply
			// before shadow exits, and says which.
			in := catchInterrupts(cmd.Context())
			res, err := s.ApplyContext(in.Context(), opts)
			in.stop()
			if err != nil {
				var ie *session.InterruptedError
				if sig := in.Signal(); errors.As(err, &ie) && sig != 0 {
					return withCode(128+int(sig), fmt.Errorf("%s: %w", signalName(sig), err))
				}
				return err
			}
			if yes {
				printPlan(errw, &res.ApplyPlan)
				if len(res.Files) == 0 {
					return nothingToApply(errw, all || len(paths) > 0)
				}
			}
			return reportApply(cmd, s, res, commit, message, in.Signal())
		},
	}
	f.register(cmd, true)
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "apply every change as a whole file")
	fl.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&includeIgnored, "include-ignored", false, "apply ignored paths too (node_modules/, build output...)")
	fl.BoolVar(&allowProtected, "allow-protected", false, "apply protected paths too (.git, CI config, agent settings...)")
	fl.BoolVar(&allowOutside, "allow-outside-links", false, "apply staged symlinks whose target leaves the project")
	fl.BoolVar(&rollback, "rollback", false, "undo the last apply (or every apply back to --to)")
	fl.StringVar(&to, "to", "", "with --rollback: undo every apply back to and including APPLY_ID")
	fl.BoolVar(&commit, "commit", false, "make a git commit of exactly the paths and bytes written (no git filter or hook runs)")
	fl.StringVarP(&message, "message", "m", "", "with --commit: the commit message")
	return cmd
}

// reportApply says what an apply wrote, makes its commit with --commit, and says whether it closed
// the session; sig is the signal that came while the apply replaced files (0: none).
func reportApply(cmd *cobra.Command, s *session.Session, res *session.ApplyResult, commit bool, message string, sig syscall.Signal) error {
	out := cmd.OutOrStdout()
	if res.Recovered != "" {
		sayErr(cmd.ErrOrStderr(), "shadow:", res.Recovered)
	}
	fmt.Fprintf(out, "applied %s (apply %s); undo with `shadow apply --rollback`\n", english.Count(len(res.Files), "path"), res.ID)
	if commit {
		id, err := s.CommitApply(res, message)
		if err != nil {
			return fmt.Errorf("%w (the apply itself is done: commit it yourself, or undo it with `shadow apply --rollback`)", err)
		}
		fmt.Fprintf(out, "committed as %s\n", id)
	}
	if res.Closes {
		fmt.Fprintf(out, "session %s is applied: nothing is pending\n", s.ID())
	}
	if res.Interrupted && sig != 0 {
		return withCode(128+int(sig), fmt.Errorf("%s came while the apply was replacing files: apply %s was finished first; `shadow apply --rollback` undoes it", signalName(sig), res.ID))
	}
	return nil
}

func runRollback(cmd *cobra.Command, f *sessionFlags, to string, yes bool) error {
	st, err := openStore()
	if err != nil {
		return err
	}
	project, err := session.ResolveProject(f.project)
	if err != nil {
		return err
	}
	lk, err := st.LockProject(project, session.LockOptions{Wait: f.wait, Command: "rollback"})
	if err != nil {
		return err
	}
	defer lk.Release()
	if lk.Recovered != "" {
		sayErr(cmd.ErrOrStderr(), "shadow:", lk.Recovered)
	}
	if !yes {
		what := "the last apply"
		if to != "" {
			what = "every apply back to " + to
		}
		ok, err := confirm(cmd.InOrStdin(), cmd.ErrOrStderr(), fmt.Sprintf("Roll back %s in %s?", what, project))
		if err != nil {
			return err
		}
		if !ok {
			return withCode(exitError, fmt.Errorf("nothing rolled back"))
		}
	}
	// A rollback, once begun, is finished: a signal waits for it (the next command would
	// finish it anyway).
	in := catchInterrupts(cmd.Context())
	res, err := lk.Rollback(to)
	in.stop()
	if err != nil {
		return err
	}

	fmt.Fprintf(cmd.OutOrStdout(), "rolled back %s (%s restored)\n", english.Count(len(res.Applies), "apply"), english.Count(res.Restored, "path"))
	if sig := in.Signal(); sig != 0 {
		return withCode(128+int(sig), fmt.Errorf("%s came during the rollback: it was finished first", signalName(sig)))
	}
	return nil
}

// protectedHelp lists session.ProtectedPaths by group, for apply's help.
func protectedHelp() string {
	const width = 100
	var b strings.Builder
	b.WriteString("Protected paths, at any depth (files a host tool reads as configuration or runs as code\n" +
		"without being asked; review shows which tool, the config's `protected` key adds more):\n")
	var group string
	var names []string
	flush := func() {
		if len(names) == 0 {
			return
		}
		line := "  " + group + ":"
		for i, n := range names {
			if i < len(names)-1 {
				n += ","
			}
			if len(line)+1+len(n) > width {
				b.WriteString(line + "\n")
				line = "     "
			}
			line += " " + n
		}
		b.WriteString(line + "\n")
		names = nil
	}
	for _, p := range session.ProtectedPaths {
		if p.Group != group {
			flush()
			group = p.Group
		}
		names = append(names, p.Pattern)
	}
	flush()
	b.WriteString("  and every directory shaped like a git repository (named *.git, or holding HEAD and objects\n" +
		"  or refs), with what is inside it.\n" +
		"And every other dot-file or dot-directory, at any depth, that the agent made, changed or deleted\n" +
		"(tools read dot-files as configuration): your config's `unprotected` key takes names off, as\n" +
		"unprotected = [\".gitignore\", \".editorconfig\"]; a project's .shadow.toml cannot.")
	return b.String()
}

// protectedFromConfig is the config's extra protected paths for a project.
func protectedFromConfig(project string) []string { return configFor(project).Protected }

// nothingToApply ends an apply that found nothing to write, saying how to choose something.
func nothingToApply(w io.Writer, chose bool) error {
	if !chose {
		fmt.Fprintln(w, "nothing accepted yet: decide hunks with `shadow review`, or pass --all or PATHs")
	}
	return withCode(exitError, nil)
}

// printPlan lists what an apply will write and what it leaves out.
func printPlan(w io.Writer, p *session.ApplyPlan) {
	for _, f := range p.Files {
		how := "whole file"
		if !f.Whole {
			how = fmt.Sprintf("%s accepted, %d rejected, %d undecided", english.Count(f.Accepted, "hunk"), f.Rejected, f.Pending)
		}
		if f.Merged {
			how = "merged with your changes: " + how
		}
		fmt.Fprintf(w, "  %-6s %s (%s)\n", f.Action, diff.Escape(f.Path), how)
	}
	for _, s := range p.Skipped {
		fmt.Fprintf(w, "  skip   %s: %s\n", diff.Escape(s.Path), s.Reason)
	}
	for _, m := range p.Warnings {
		fmt.Fprintln(w, "  warning:", m)
	}
}
