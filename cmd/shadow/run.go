package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/doctor"
	"github.com/shadow-sandbox/shadow/sandbox/preset"
	"github.com/shadow-sandbox/shadow/session"
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
	if err := s.AwaitCheckpoints(cmd.ErrOrStderr()); err != nil {
		return err
	}
	p := setup.policy
	p.Upper = s.UpperDir()
	p.CacheDir, p.RuntimeDir = s.CacheDir(), s.RuntimeDir()
	p.NetLog = s.NetLog()

	if err := s.StartRun(argv); err != nil {
		return err
	}
	if p.Checkpoints, p.NextCheckpoint, err = s.Checkpointing(); err != nil {
		_ = s.EndRun(sandbox.ExitNoJail)
		return err
	}
	p.RunLayer = s.PrecaptureLayer
	// SIGTERM or SIGHUP stops the jail; Ctrl+C (SIGINT) is the command's own.
	in := catchInterrupts(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer in.stop()
	ctx := in.Context()
	// The run's record and its summary's change set come from one scan,
	// made while the jail is torn down when the jail reports the end.
	var (
		cs     *session.ChangeSet
		endErr error
		ended  bool
	)
	// A run that took no checkpoint staged nothing: its end reads nothing of what the session
	// staged before, so that a run's fixed cost does not grow with it.
	var took sync.Mutex
	staged := false
	p.Checkpointed = func(sandbox.Checkpoint) {
		took.Lock()
		staged = true
		took.Unlock()
	}
	unchanged := false
	p.Ended = func(res sandbox.Result) {
		took.Lock()
		unchanged = !staged && res.StagingError == ""
		took.Unlock()
		if unchanged {
			endErr = s.EndRunUnchanged(sandbox.ExitStatus(res, nil))
		} else {
			cs, endErr = s.EndRunChanges(sandbox.ExitStatus(res, nil))
		}
		ended = true
	}
	res, runErr := sandbox.Run(ctx, p, argv)
	code := sandbox.ExitStatus(res, runErr)
	if !ended {
		cs, endErr = s.EndRunChanges(code)
	}
	if runErr != nil {
		if endErr != nil {
			sayErr(cmd.ErrOrStderr(), "shadow:", endErr)
		}
		if !sandbox.IsJailError(runErr) {
			return withCode(exitNoJail, runErr)
		}
		sayErr(cmd.ErrOrStderr(), "shadow:", runErr)
		printDoctorProblems(cmd.Context(), cmd.ErrOrStderr())
		return withCode(exitNoJail, nil)
	}
	if sig := in.Signal(); sig != 0 && res.StopReason != "" {
		res.StopReason = fmt.Sprintf("shadow received %s, and stopped the command and everything it started", signalName(sig))
	}
	if res.StagingError != "" {
		// Some of what the run wrote is not staged (the state directory is full): the session
		// says so from now on, and the run does not end as a success.
		if err := s.MarkIncomplete(res.StagingError); err != nil {
			sayErr(cmd.ErrOrStderr(), "shadow:", err)
		}
		res.StagingError += " (shadow's state directory is " + setup.root + ")"
		if code == 0 {
			code = exitError
		}
	}
	printRunSummary(cmd.ErrOrStderr(), s, res, cs, session.ExplainFull(endErr, setup.root), unchanged)
	return withCode(code, nil)
}

// printRunSummary is the one-screen summary shown when a run ends, with the
// change set the run left, or why recording the run's end or reading the
// change set failed.
func printRunSummary(w io.Writer, s *session.Session, res sandbox.Result, cs *session.ChangeSet, endErr error, unchanged bool) {
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
	if res.StagingError != "" {
		sayErr(w, "shadow:", fmt.Sprintf("session %s is marked incomplete: staged files may be missing or cut short; `shadow diff` shows what is staged, `shadow discard` drops it", s.ID()))
	}
	if endErr != nil {
		sayErr(w, "shadow:", endErr)
	}
	var unread *session.ChangeSetError
	if errors.As(endErr, &unread) {
		return
	}
	if unchanged && endErr == nil {
		fmt.Fprintf(w, "session %s: this run staged no change (`shadow diff --stat` shows what the session holds)\n", s.ID())
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
	fmt.Fprintf(w, "session %s: %s\n", s.ID(), sum.Headline())
	for _, l := range sum.Lines {
		fmt.Fprintln(w, "  "+l)
	}
	if sum.More > 0 {
		fmt.Fprintf(w, "  … and %d more\n", sum.More)
	}
	if sum.Total()+sum.Ignored > 0 {
		fmt.Fprintln(w, "next: shadow diff | shadow review | shadow apply --all | shadow discard")
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
