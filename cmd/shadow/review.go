package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/runner"
	"github.com/shadow-sandbox/shadow/ui/keymap"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

func newReviewCmd() *cobra.Command {
	var f sessionFlags
	var with string
	cmd := &cobra.Command{
		Use:   "review [--session ID|NAME] [--with OTHER]",
		Short: "Review the staged changes hunk by hunk, apply the accepted ones, roll back",
		Long: `review opens the hunk-level review screen on the session: the changed files on the left,
the diff on the right. Accept (a) or reject (r) each hunk, a whole file (A/R) or everything
(ctrl+a); split a hunk (s), pick single lines (space), edit a hunk in $EDITOR (e); apply (w) and
roll back (b). Decisions are saved as they are made: quit (q) and come back later. ? shows every
key.

While a run is going on the session, the review opens read-only.

With --with OTHER (another session of the project, by name or ID: two agents on one task), T
takes OTHER's version of the selected file into the reviewed session, as a step of its own that
'shadow log' lists and 'shadow revert' undoes; 'shadow compare' shows the two side by side, and
its --take --hunks takes single hunks.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !isTerminal(cmd.OutOrStdout()) {
				// Refused, but an apply a kill interrupted is put right all the same.
				if _, _, err := f.recoverSelected(cmd.ErrOrStderr()); err != nil {
					return err
				}
				return usageError{msg: "review needs a terminal; use `shadow diff` or `shadow diff --json` in scripts"}
			}
			src, s, release, err := openReview(&f, cmd, with)
			if err != nil {
				return err
			}
			defer release()
			cfg := configFor(s.Project())
			keys, appKeys := diffview.DefaultKeyMap(), keymap.DefaultKeyMap()
			if err := keymap.ApplyKeys(&appKeys, &keys, cfg.Keys); err != nil {
				return usageError{msg: "config keys: " + err.Error()}
			}
			_, readOnly := src.(reviewsrc.ReadOnly)
			m := diffview.New(diffview.WithSource(src), diffview.WithKeyMap(keys),
				diffview.WithEditor(editor()), diffview.WithReadOnly(readOnly))
			if _, err := tea.NewProgram(diffview.NewApp(m), tea.WithContext(cmd.Context())).Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
				return fmt.Errorf("review: %w", err)
			}
			// Said once the screen is the terminal's again, where it stays.
			warnDamaged(cmd.ErrOrStderr(), s)
			return nil
		},
	}
	f.register(cmd, true)
	cmd.Flags().StringVar(&with, "with", "", "review beside another session of the project (its name or ID): T takes its version of the selected file")
	return cmd
}

// openReview opens the session for review: writable under the project's writer lock, or, while
// another shadow (a run) holds that lock, read-only.
func openReview(f *sessionFlags, cmd *cobra.Command, with string) (diffview.Source, *session.Session, func(), error) {
	lk, s, err := f.writeSession("review", cmd.ErrOrStderr())
	if err == nil {
		// The review holds its session, not the project: another session of the project runs
		// or is reviewed meanwhile, and an apply takes the project's lock for itself.
		if err = lk.HandOver(s); err != nil {
			lk.Release()
			return nil, nil, nil, err
		}
		// The config's protected paths are the session's own (writeSession set them).
		found := stagedFindings(cmd.Context(), s, cmd.ErrOrStderr())
		src := reviewsrc.New(lk, s, reviewsrc.WithFindings(func(p string) []string { return found[p] }))
		if with == "" {
			return src, s, func() { lk.Release() }, nil
		}
		other, err := besideSession(s, with)
		if err != nil {
			lk.Release()
			return nil, nil, nil, err
		}
		return reviewsrc.Beside(src, other), s, func() { lk.Release() }, nil
	}
	if !errors.Is(err, session.ErrBusy) {
		return nil, nil, nil, err
	}
	_, s, rerr := f.readSession()
	if rerr != nil {
		return nil, nil, nil, rerr
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "shadow: another shadow is writing to the project; the review is read-only")
	why := "another shadow holds the project: decide once it ends"
	var busy *session.BusyError
	if errors.As(err, &busy) && busy.Holder != "" {
		why = fmt.Sprintf("shadow %s holds the project: decide once it ends", busy.Holder)
	}
	return reviewsrc.ReadOnly{Source: reviewsrc.New(nil, s), Why: why}, s, func() {}, nil
}

// besideSession is the session --with names (an ID, or the name of an open session of s's
// project), read-only: the review of s can take its version of a file.
func besideSession(s *session.Session, with string) (*session.Session, error) {
	st, err := openStore()
	if err != nil {
		return nil, err
	}
	other, err := st.Find(s.Project(), with)
	if err != nil {
		return nil, err
	}
	if other.ID() == s.ID() {
		return nil, usageError{msg: fmt.Sprintf("--with %s is the session reviewed: name another session of the project", with)}
	}
	if other.Project() != s.Project() {
		return nil, usageError{msg: fmt.Sprintf("--with %s is a session of %s, not of %s", with, other.Project(), s.Project())}
	}
	return other, nil
}

// editor is the command the review's `e` key runs.
func editor() string {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if e := os.Getenv(v); e != "" {
			return e
		}
	}
	return "vi"
}

// configFor is the effective config of a project; one that cannot be read is empty (the
// commands that depend on its policy report the error themselves).
func configFor(project string) session.Config {
	root, err := session.DefaultRoot()
	if err != nil {
		return session.Config{}
	}
	userPath, err := session.UserConfigPath()
	if err != nil {
		return session.Config{}
	}
	cfg, err := session.LoadConfig(userPath, project, root)
	if err != nil {
		return session.Config{}
	}
	return cfg.Config
}

// stagedFindings audits the session's staged tree (in a jail over it) against its base and
// returns the rules each file newly fails, for the review's badges. A failure to audit is
// reported and leaves the badges off; it never blocks the review.
func stagedFindings(ctx context.Context, s *session.Session, stderr io.Writer) map[string][]string {
	p := sandbox.Policy{Project: s.Project(), Env: sandbox.BuildEnv(os.Environ(), nil)}
	found, err := runner.StagedFindings(ctx, s, p)
	if err != nil {
		sayErr(stderr, "shadow: warning: the staged tree could not be audited:", err)
		return nil
	}
	return found
}
