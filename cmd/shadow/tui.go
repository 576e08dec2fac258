package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

func newTUICmd() *cobra.Command {
	var f runFlags
	var attach, ask bool
	cmd := &cobra.Command{
		Use:   "tui [run flags] [--trust P] -- CMD [ARG...]",
		Short: "The whole flow in one app: live preflight, the agent in a jailed terminal pane, review",
		Long: `tui runs the preflight (doctor's host checks, the project's dependency audit and the
environment rules inside a fresh jail) with each finding appearing as it completes; if the trust
profile allows, it starts CMD in the jail in a terminal pane (ctrl+] opens shadow's commands:
review so far, stop the agent, detach, help); when the agent ends, the review screen opens on the
session: accept or reject each hunk, apply, roll back. Quitting before applying keeps the session
open for 'shadow review'.

Detaching leaves the agent running in its jail; 'shadow tui --attach' comes back to it, and the
review follows when it ends.

With --ask, a request the allow-list proxy has for a host not on the list is put to you in a
dialog over the pane (where it goes, its method and path when the proxy sees them): o lets it
through once, s for the rest of the run, d or esc denies it, and no answer in 30 s denies it. The
answer is the request's rule in 'shadow net'. Without --ask (and in 'shadow run') it is refused.
Asking needs the allow-list proxy: --allow-domain, or a preset's domains.

Exit status: as shadow run's once the agent ran: CMD's own; 124 when --timeout stopped it; 125 when
the jail could not be built; 128+N when it died of signal N. 3 when the preflight blocked it; 0 when
it keeps running detached.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if attach {
				if len(args) > 0 {
					return usageError{msg: "tui --attach takes no command: it connects to the running one"}
				}
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !isTerminal(cmd.OutOrStdout()) || !isTerminal(cmd.InOrStdin()) {
				return usageError{msg: "tui needs a terminal; use `shadow run` in scripts"}
			}
			setup, err := f.resolve()
			if err != nil {
				return err
			}
			if attach {
				return attachTUI(cmd.Context(), setup, f.session)
			}
			if argv, err = setup.applyPreset(argv); err != nil {
				return usageError{msg: err.Error()}
			}
			lk, s, created, err := f.openSession(setup, "tui", cmd.ErrOrStderr())
			if errors.Is(err, session.ErrBusy) {
				if cur, e := chosenSession(setup.store, setup.project, f.session); e == nil {
					if host, e := agenthost.Find(cur); e == nil {
						if host.Attached != nil {
							return heldAgent(cur, setup.project, host)
						}
						return fmt.Errorf("a detached agent still runs in session %s of %s: %s comes back to it",
							cur.Label(), setup.project, strings.Join(append([]string{"shadow", "tui", "--attach"}, sessionArgs(setup.store, cur)...), " "))
					}
				}
			}
			if err != nil {
				return err
			}
			setup.policy.NetLog = s.NetLog()
			trust := setup.trust
			if trust == "" {
				trust = "dependency"
			}
			jail := &ui.Jail{Lock: lk, Session: s, Store: setup.store, Policy: setup.policy, Granted: setup.granted,
				Apply: session.ApplyOptions{Protected: setup.cfg.Protected}, AskNetwork: ask}
			defer jail.Release()
			opts := ui.Options{
				Argv:      argv,
				Profile:   trust,
				Countdown: ui.DefaultCountdown,
				Keys:      setup.cfg.Keys,
				Jail:      jail,
			}
			if setup.cfg.PrefixKey != nil {
				opts.PrefixKey = *setup.cfg.PrefixKey
			}
			err = finishTUI(cmd.Context(), opts, jail, s, setup.preset)
			// The preflight blocked the agent: a session opened for it leaves nothing behind.
			var ec *exitCode
			if created && errors.As(err, &ec) && ec.code == exitBlocked {
				if e := jail.Session.Abandon(); e != nil {
					sayErr(cmd.ErrOrStderr(), "shadow: warning:", e)
				}
			}
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&attach, "attach", false, "come back to the agent a detached 'shadow tui' left running in the project's session")
	cmd.Flags().BoolVar(&ask, "ask", false, "put a request for a host off the allow-list to you (once, for the run, deny; 30 s without an answer denies) instead of refusing it")
	return cmd
}

// attachTUI opens the app on the agent running in the project's open session: the one named
// (by name or ID), else the only one.
func attachTUI(ctx context.Context, setup *runSetup, name string) error {
	st, err := setup.sessions()
	if err != nil {
		return err
	}
	s, err := chosenSession(st, setup.project, name)
	if errors.Is(err, session.ErrNoSession) {
		return fmt.Errorf("no agent is running for %s (it has no open session); start one with shadow tui -- CMD", setup.project)
	}
	if err != nil {
		return err
	}
	host, err := agenthost.Find(s)
	if errors.Is(err, agenthost.ErrNoAgent) {
		return fmt.Errorf("no agent is running in session %s of %s; start one with shadow tui -- CMD, or review it with shadow review", s.Label(), setup.project)
	}
	if err != nil {
		return err
	}
	if host.Attached != nil {
		return heldAgent(s, setup.project, host)
	}
	s.SetProtected(setup.cfg.Protected)
	jail := &ui.Jail{Session: s, Store: st, Policy: setup.policy, Granted: setup.granted, Attach: &host,
		Apply: session.ApplyOptions{Protected: setup.cfg.Protected}}
	defer jail.Release()
	opts := ui.Options{Argv: host.Argv, Keys: setup.cfg.Keys, Jail: jail}
	if setup.trust != "" {
		opts.Profile = setup.trust
	}
	if setup.cfg.PrefixKey != nil {
		opts.PrefixKey = *setup.cfg.PrefixKey
	}
	return finishTUI(ctx, opts, jail, s, setup.preset)
}

// chosenSession is the project's open session that name names (a name or an ID), or its only
// open one when name is "", read-only.
func chosenSession(st *session.Store, project, name string) (*session.Session, error) {
	if name == "" {
		return st.Current(project)
	}
	s, err := st.Find(project, name)
	if err == nil && s.Project() != project {
		return nil, fmt.Errorf("session %s belongs to project %s, not %s", s.ID(), s.Project(), project)
	}
	return s, err
}

// sessionArgs name s on the commands an app's last lines give: --session and its name; its ID
// when it has none and the project has other open sessions (a command without --session would
// not choose it); nothing when it is the project's only one.
func sessionArgs(st *session.Store, s *session.Session) []string {
	if s.Name() != "" {
		return []string{"--session", s.Name()}
	}
	if st != nil {
		if open, err := st.OpenSessions(s.Project()); err == nil {
			for _, o := range open {
				if o.ID() != s.ID() {
					return []string{"--session", s.ID()}
				}
			}
		}
	}
	return nil
}

// heldAgent is the error of an app that finds the project's agent attached to another app: who
// holds it (its process and terminal) and what can be done.
func heldAgent(s *session.Session, project string, host agenthost.State) error {
	return fmt.Errorf("the agent of session %s of %s runs in another shadow tui (%s): %s",
		s.ID(), project, host.Attached, ui.BusyAdvice())
}

// finishTUI runs the app and says how to come back to the session or the agent, and how to
// resume the agent's conversation when it said how (presetName is --preset's).
func finishTUI(ctx context.Context, opts ui.Options, jail *ui.Jail, s *session.Session, presetName string) error {
	in := currentInvocation(s.Project())
	var resume string
	if jail.Store != nil {
		opts.Others = ui.OtherSessions(jail.Store, s, func(a, b string) string { return in.command("compare", a, b) })
	}
	opts.Resume = func(screen string) string {
		resume = resumeInSession(in, jail.Store, s, presetName, opts.Argv, screen)
		return resume
	}
	code, err := ui.Run(ctx, opts)
	if err != nil {
		return withCode(code, err)
	}
	if resume != "" {
		fmt.Fprintf(os.Stderr, "the agent's conversation resumes inside shadow, where its state is: `%s`\n", resume)
	}
	switch {
	case jail.Detached():
		fmt.Fprintf(os.Stderr, "the agent keeps running in session %s: `%s` to come back to it\n", s.Label(), in.command(append([]string{"tui", "--attach"}, sessionArgs(jail.Store, s)...)...))
	case code != exitBlocked:
		fmt.Fprintln(os.Stderr, comeBackLine(jail.Store, s, in))
	}
	return withCode(code, nil)
}

// resumeInSession is the command that resumes the agent's conversation (invocation.resumeCommand)
// in session s, where its changes are staged: with --session when the project has others open.
func resumeInSession(in invocation, st *session.Store, s *session.Session, presetName string, argv []string, screen string) string {
	resume := in.resumeCommand(presetName, argv, screen)
	if rest, ok := strings.CutPrefix(resume, in.command("tui")); ok {
		if sel := sessionArgs(st, s); len(sel) > 0 {
			resume = in.command(append([]string{"tui"}, sel...)...) + rest
		}
	}
	return resume
}

// comeBackLine is the last line of an app that ends with the session still there: how to come
// back to what is still pending, or that nothing is.
func comeBackLine(st *session.Store, s *session.Session, in invocation) string {
	if st != nil {
		if cur, err := st.Get(s.ID()); err == nil {
			s = cur
		}
	}
	switch s.Meta.State {
	case session.StateApplied:
		return fmt.Sprintf("session %s is applied: nothing is pending (`%s` undoes the apply)", s.Label(), in.command("apply", "--rollback"))
	case session.StateDiscarded:
		return fmt.Sprintf("session %s is discarded", s.Label())
	}
	if cs, err := s.Changes(); err == nil && len(cs.Changes) == 0 {
		return fmt.Sprintf("session %s stays open, with nothing staged", s.Label())
	}
	return fmt.Sprintf("session %s: `%s` to come back to it", s.Label(), in.command(append([]string{"review"}, sessionArgs(st, s)...)...))
}
