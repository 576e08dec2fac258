package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/audit"
	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/session"
)

// verifyFlags are the flags of verify and exec.
type verifyFlags struct {
	trust   string
	format  string
	output  string
	project string
	// envRoot, hidden, points the environment rules at a directory standing for / (tests).
	envRoot string
}

func (f *verifyFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.trust, "trust", "dependency", "trust profile: repo, dependency or untrusted")
	cmd.Flags().StringVar(&f.format, "format", "text", "report format: text, json, sarif or markdown")
	cmd.Flags().StringVar(&f.output, "output", "", "write the report to FILE instead of standard output")
	cmd.Flags().StringVar(&f.project, "project", "", "project directory (default: the git top level, else the working directory)")
}

func newVerifyCmd() *cobra.Command {
	var f verifyFlags
	var inside, insideChild, stagedChild bool
	cmd := &cobra.Command{
		Use:   "verify [--trust P] [--format text|json|sarif|markdown] [--output FILE] [--project DIR] [--inside]",
		Short: "Audit the environment and the project's manifests and build hooks (preflight)",
		Long: `verify evaluates the 38 preflight rules: the environment it runs in (ENV, FS, NET) and the
project's dependency manifests, lockfiles and build hooks (DEP). A check that cannot be made is
skipped, and a skip is never a pass. With --inside, the ENV, FS and NET rules run inside a fresh
jail built with the run's policy instead, which is what the agent will get.

Exit status 0 when the profile allows, 3 when it blocks. On block SECURITY_REPORT.md is written
in the project; on allow, the attestation .sandbox/attestation.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if insideChild {
				return audit.StreamInside(cmd.Context(), cmd.OutOrStdout())
			}
			if stagedChild {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				return audit.StreamStaged(cmd.Context(), cmd.OutOrStdout(), wd)
			}
			rep, project, err := f.audit(cmd.Context(), inside, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return f.finish(cmd, rep, project, !inside)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.envRoot, "env-root", "", "")
	cmd.Flags().MarkHidden("env-root")
	cmd.Flags().BoolVar(&inside, "inside", false, "evaluate the ENV, FS and NET rules inside a fresh jail")
	cmd.Flags().BoolVar(&insideChild, "inside-child", false, "")
	cmd.Flags().MarkHidden("inside-child")
	cmd.Flags().BoolVar(&stagedChild, "staged-child", false, "")
	cmd.Flags().MarkHidden("staged-child")
	return cmd
}

func newExecCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "exec --trust P [--project DIR] -- CMD [ARG...]",
		Short: "Preflight gate for an environment that is already a sandbox: verify, then run CMD",
		Long: `exec is for a place that is already a sandbox (a CI container, a devcontainer): it runs
the audit on the environment it is in, and if the profile allows, runs CMD directly and passes
its exit status through. If the profile blocks, it writes SECURITY_REPORT.md, exits 3 and never
starts CMD.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, project, err := f.audit(cmd.Context(), false, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// finish fails when the profile blocks: CMD never starts.
			if err := f.finish(cmd, rep, project, false); err != nil {
				return err
			}
			c := exec.Command(args[0], args[1:]...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := c.Run(); err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					return withCode(exitStatus(ee), nil)
				}
				return withCode(exitError, fmt.Errorf("start %s: %w", args[0], err))
			}
			return nil
		},
	}
	f.register(cmd)
	// exec's report goes to stderr unless --output: stdout belongs to CMD.
	return cmd
}

// audit runs the rules on this environment, or with inside, the DEP rules here and the others
// in a fresh jail.
func (f *verifyFlags) audit(ctx context.Context, inside bool, stderr io.Writer) (audit.Report, string, error) {
	profile, err := audit.ParseProfile(f.trust)
	if err != nil {
		return audit.Report{}, "", usageError{msg: "--trust: " + err.Error()}
	}
	if _, err := audit.ParseFormat(f.format); err != nil {
		return audit.Report{}, "", usageError{msg: "--format: " + err.Error()}
	}
	project, err := session.ResolveProject(f.project)
	if err != nil {
		return audit.Report{}, "", err
	}
	// The project is audited as it is once an apply a kill interrupted is finished or undone.
	if err := recoverExisting(project, stderr); err != nil {
		return audit.Report{}, "", err
	}
	if !inside {
		opts := audit.Options{Project: project, Profile: profile}
		if f.envRoot != "" {
			opts.Env = audit.Env{Root: f.envRoot, Home: "/root"}
		}
		rep, err := audit.Verify(ctx, opts, nil)
		return rep, project, err
	}
	rf := runFlags{project: project}
	setup, err := rf.resolve()
	if err != nil {
		return audit.Report{}, "", err
	}
	rep, err := preflight(ctx, setup, profile, nil)
	return rep, project, err
}

// preflight is the audit before a jailed run (audit.Preflight): the DEP rules on the project from
// the host, the ENV, FS and NET rules inside a fresh jail built with the run's policy.
func preflight(ctx context.Context, setup *runSetup, profile audit.Profile, onFinding func(audit.Finding)) (audit.Report, error) {
	var progress func(audit.PreflightEvent)
	if onFinding != nil {
		progress = func(ev audit.PreflightEvent) {
			if ev.Finding != nil {
				onFinding(*ev.Finding)
			}
		}
	}
	return audit.Preflight(ctx, setup.project, profile, setup.startInside, progress)
}

// startInside runs `shadow verify --inside-child` in a fresh jail with the run's policy.
func (s *runSetup) startInside(ctx context.Context, args []string, stdout io.Writer) error {
	return sandbox.RunSelf(ctx, s.insidePolicy(), args, stdout)
}

// finish writes the report where asked, SECURITY_REPORT.md on block or the attestation on allow,
// and maps the verdict to the exit status; its last line names the file it wrote. With here (a
// plain verify), a report of a shell that is not a sandbox begins by saying so.
func (f *verifyFlags) finish(cmd *cobra.Command, rep audit.Report, project string, here bool) error {
	format, _ := audit.ParseFormat(f.format)
	var out io.Writer = cmd.OutOrStdout()
	color := isTerminal(out)
	if cmd.Name() == "exec" {
		out, color = cmd.ErrOrStderr(), isTerminal(cmd.ErrOrStderr())
	}
	if f.output != "" {
		file, err := os.Create(f.output)
		if err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
		defer file.Close()
		out, color = file, false
	}
	if here && notSandbox(rep) {
		// The first line of a text report; beside a machine-readable one, on stderr.
		note := out
		if format != audit.FormatText {
			note = cmd.ErrOrStderr()
		}
		fmt.Fprintln(note, notSandboxLine)
	}
	if err := rep.Write(format, out, audit.WriteOptions{Color: color}); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if !rep.Allowed() {
		path, err := rep.WriteSecurityReport(project)
		if err != nil {
			return withCode(exitBlocked, fmt.Errorf("blocked under %s, and the security report could not be written: %w", rep.Profile, err))
		}
		return withCode(exitBlocked, fmt.Errorf("blocked under the %s profile by %v; wrote the report to %s", rep.Profile, rep.Verdict().Blocking, path))
	}
	digest, _ := audit.SelfDigest()
	path, err := rep.WriteAttestation(project, audit.AttestationInput{ShadowDigest: digest})
	if err != nil {
		sayErr(cmd.ErrOrStderr(), "shadow: warning: write the attestation:", err)
		return nil
	}
	sayErr(cmd.ErrOrStderr(), "shadow:", "allowed under the "+string(rep.Profile)+" profile; wrote the attestation to "+path)
	return nil
}

// notSandboxLine begins the report of a plain verify run where ENV002 finds no isolation: the
// findings are this shell's, not those of the jail an agent gets from shadow run.
const notSandboxLine = "shadow verify: this audits this shell, which is not a sandbox (ENV002), not the jail `shadow run` gives the agent; `shadow verify --inside` audits the jail."

// notSandbox reports whether the audit found this environment not isolated (ENV002 failed).
func notSandbox(rep audit.Report) bool {
	f, ok := rep.Finding("ENV002")
	return ok && f.Result == audit.Fail
}

// preflightGate runs the preflight before `run --trust` and refuses to start when it blocks.
func preflightGate(ctx context.Context, setup *runSetup, w io.Writer) error {
	profile, err := audit.ParseProfile(setup.trust)
	if err != nil {
		return usageError{msg: "--trust: " + err.Error()}
	}
	return gate(ctx, setup.project, profile, setup.startInside, w)
}

// gate is preflightGate's decision over audit.Preflight, start running the in-jail audit: nil
// lets the command start; a preflight that could not decide or that blocks refuses it.
func gate(ctx context.Context, project string, profile audit.Profile,
	start func(context.Context, []string, io.Writer) error, w io.Writer) error {
	rep, err := audit.Preflight(ctx, project, profile, start, nil)
	if err != nil {
		if sandbox.IsJailError(err) {
			sayErr(w, "shadow:", err)
			return withCode(exitNoJail, nil)
		}
		return fmt.Errorf("preflight: %w; the command was not started", err)
	}
	if rep.Allowed() {
		return nil
	}
	rep.WriteText(w, isTerminal(w))
	path, werr := rep.WriteSecurityReport(project)
	if werr != nil {
		path = "(the security report could not be written: " + werr.Error() + ")"
	}
	return withCode(exitBlocked, fmt.Errorf("preflight blocked under the %s profile by %v; the command was not started; see %s", profile, rep.Verdict().Blocking, path))
}

// exitStatus maps a child's end to shadow's exit status: its code, or 128+N for signal N.
func exitStatus(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
