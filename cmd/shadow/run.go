package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/doctor"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/runner"
)

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run a command in the jail over the project, staging every write",
		Long: `run starts CMD in an unprivileged jail: its own user, mount, PID, network, IPC and UTS
namespaces, the system read-only, an empty private $HOME and /tmp, no credentials, no host
network, Landlock and seccomp. The project is visible at its real path through an overlay, so
every write lands in the session's staging layer; the host project is never written.

When CMD ends, run prints what is staged. Look at it with 'shadow diff' or 'shadow review',
apply it with 'shadow apply', or drop it with 'shadow discard'.

Exit status: CMD's own; 124 when --timeout stopped it; 125 when the jail could not be built
(CMD is never run without the jail); 128+N when it died of signal N.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.explain {
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.explain {
				return explainPreset(cmd, &f, args)
			}
			return runJailed(cmd, &f, args)
		},
	}
	f.register(cmd)
	return cmd
}

func newShellCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "shell [flags]",
		Short: "Open an interactive shell in the jail over the session's staged view",
		Long: `shell opens $SHELL (or /bin/bash) in the jail over the project's open session, so you can
explore or test what the agent left. Its writes are staged like any run's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sh := os.Getenv("SHELL")
			if sh == "" {
				sh = "/bin/bash"
			}
			return runJailed(cmd, &f, []string{sh, "-i"})
		},
	}
	f.register(cmd)
	return cmd
}

// runJailed is `shadow run`: lock the project, open its session, run argv in the jail, record
// the run and print what is staged.
func runJailed(cmd *cobra.Command, f *runFlags, argv []string) error {
	setup, err := f.resolve()
	if err != nil {
		return err
	}
	made := setup.newPresetState(argv)
	if argv, err = setup.applyPreset(argv); err != nil {
		return usageError{msg: err.Error()}
	}
	if setup.trust != "" {
		if err := preflightGate(cmd.Context(), setup, cmd.ErrOrStderr()); err != nil {
			// The preset's state was made for the audit of what the agent would get; a refused
			// run leaves none behind.
			made.remove()
			return err
		}
	}
	lk, s, _, err := f.openSession(setup, "run", cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer lk.Release()
	// SIGTERM or SIGHUP stops the jail; Ctrl+C (SIGINT) is the command's own.
	in := catchInterrupts(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer in.stop()
	// The jail gets the user's signals as a command outside it would.
	relay := make(chan os.Signal, 8)
	signal.Notify(relay, sandbox.RelayedSignals()...)
	defer signal.Stop(relay)
	stderr := cmd.ErrOrStderr()
	out, err := runner.Run(in.Context(), s, setup.policy, argv, runner.Wiring{Notice: stderr, Signals: relay},
		runner.Options{StateRoot: setup.root, Summary: true})
	if err != nil {
		return err
	}
	if out.JailErr != nil {
		if out.EndErr != nil {
			sayErr(stderr, "shadow:", out.EndErr)
		}
		if !sandbox.IsJailError(out.JailErr) {
			return withCode(exitNoJail, out.JailErr)
		}
		sayErr(stderr, "shadow:", out.JailErr)
		printDoctorProblems(cmd.Context(), stderr)
		return withCode(exitNoJail, nil)
	}
	if sig := in.Signal(); sig != 0 && out.Result.StopReason != "" {
		out.Result.StopReason = fmt.Sprintf("shadow received %s, and stopped the command and everything it started", signalName(sig))
	}
	if out.MarkErr != nil {
		sayErr(stderr, "shadow:", out.MarkErr)
	}
	printRunSummary(stderr, s, out)
	return withCode(out.Code, nil)
}

// printRunSummary is the one-screen summary shown when a run ends, with the
// change set the run left, or why recording the run's end or reading the
// change set failed.
func printRunSummary(w io.Writer, s *session.Session, out runner.Outcome) {
	res, cs, endErr := out.Result, out.Changes, out.EndErr
	fmt.Fprintln(w)
	switch {
	case res.StopReason != "":
		sayErr(w, "shadow: stopped:", res.StopReason)
	case res.Signal != 0:
		sayErr(w, "shadow:", fmt.Sprintf("command killed by signal %d (%s) after %s", res.Signal, res.Signal, res.Duration.Round(1e6)))
	default:
		sayErr(w, "shadow:", fmt.Sprintf("command exited with status %d after %s", res.ExitCode, res.Duration.Round(1e6)))
	}
	for _, l := range sandbox.LayerNotes(res) {
		sayErr(w, "shadow:", l)
	}
	if out.Incomplete {
		sayErr(w, "shadow:", out.IncompleteNote())
	}
	if endErr != nil {
		sayErr(w, "shadow:", endErr)
	}
	var unread *session.ChangeSetError
	if errors.As(endErr, &unread) {
		return
	}
	if out.Unchanged && endErr == nil {
		fmt.Fprintln(w, out.UnchangedNote())
		return
	}
	if cs == nil {
		// The run's end could not be recorded: its change set may still read.
		var err error
		if cs, err = s.Changes(); err != nil {
			sayErr(w, "shadow:", err)
			return
		}
	}
	sum := session.Summarize(cs, 15)
	fmt.Fprintf(w, "session %s: %s\n", s.Label(), sum.Headline())
	for _, l := range sum.Lines {
		fmt.Fprintln(w, "  "+l)
	}
	if sum.More > 0 {
		fmt.Fprintf(w, "  … and %d more\n", sum.More)
	}
	if sum.Total()+sum.Ignored > 0 {
		sel := ""
		if s.Name() != "" {
			sel = " --session " + s.Name()
		}
		fmt.Fprintf(w, "next: shadow diff%[1]s | shadow review%[1]s | shadow apply%[1]s --all | shadow discard%[1]s\n", sel)
	}
}

// printDoctorProblems follows a jail that could not be built with what `shadow doctor` finds
// missing on this host, with the remedies, when it finds a check that the jail needs missing;
// otherwise the error alone says what failed, and nothing more is printed.
func printDoctorProblems(ctx context.Context, w io.Writer) {
	if ctx == nil {
		ctx = context.Background()
	}
	rep := doctor.Run(ctx)
	if rep.OK() {
		return
	}
	bad := doctor.Report{Distro: rep.Distro, Kernel: rep.Kernel}
	for _, c := range rep.Checks {
		if c.Status == doctor.StatusMissing {
			bad.Checks = append(bad.Checks, c)
		}
	}
	bad.Text(w, false)
}

// explainPreset prints what the preset of a run would grant, without running anything.
func explainPreset(cmd *cobra.Command, f *runFlags, argv []string) error {
	name := f.preset
	if !f.changed("preset") {
		if setup, err := f.resolve(); err == nil {
			name = setup.preset
		}
	}
	argv0 := ""
	if len(argv) > 0 {
		argv0 = argv[0]
	}
	p, err := preset.Select(name, argv0)
	if err != nil {
		return usageError{msg: err.Error()}
	}
	fmt.Fprint(cmd.OutOrStdout(), preset.Explain(p))
	return nil
}
