package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/jsonout"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session"
)

func newLogCmd() *cobra.Command {
	var f sessionFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log [--json] [--session ID]",
		Short: "List the session's checkpoints: what each step of the agent's work changed",
		Long: `log lists the session's checkpoints, oldest first, one a line: its id, when it was taken, what
took it (the end of a run, a prompt typed into the agent, writes followed by quiet, a manual
ctrl+] c) and the first line of the prompt the step answered, the command as given, and the
files and lines the step changed, and how many requests it made through the allow-list proxy,
DENIED ones counted ('shadow net' lists them). 'shadow diff --checkpoint ID'
shows a step, 'shadow revert --to ID' drops what came after it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, s, err := f.readSession()
			if err != nil {
				return err
			}
			steps, err := s.Log()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return jsonout.NewEncoder(out).Encode(steps)
			}
			if len(steps) == 0 {
				fmt.Fprintf(out, "session %s has no checkpoint yet\n", s.ID())
				return nil
			}
			damaged, err := s.DamagedSteps()
			if err != nil {
				return err
			}
			reqs, err := s.Requests()
			if err != nil {
				return err
			}
			net := map[string]session.StepRequests{}
			for _, c := range session.CountSteps(reqs) {
				net[c.Checkpoint] = c
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, st := range steps {
				when, trigger := st.Time.Local().Format("2006-01-02 15:04:05"), st.Trigger
				if st.Time.IsZero() {
					when, trigger = "?", "?"
				} else if st.Prompt != "" {
					trigger += fmt.Sprintf(" %q", st.Prompt)
				}
				mark := ""
				if slices.ContainsFunc(damaged, func(d session.DamagedStep) bool { return d.ID == st.ID }) {
					mark = "\tDAMAGED"
				}
				if len(reqs) > 0 {
					mark = "\t" + stepRequests(net[st.ID]) + mark
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t+%d -%d%s\n", st.ID, when,
					trigger, commandLine(st.Typed()), english.Count(st.Files, "file"), st.Added, st.Removed, mark)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if c, ok := net[""]; ok {
				fmt.Fprintf(out, "since %s: %s\n", steps[len(steps)-1].ID, stepRequests(c))
			}
			for _, d := range damaged {
				what := "those files are left out of the staged changes"
				if len(d.Paths) == 0 {
					what = "its files are as taken"
				}
				fmt.Fprintf(out, "%s is damaged: %s; %s\n", d.ID, d.Describe(), what)
			}
			return nil
		},
	}
	f.register(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checkpoints as JSON")
	return cmd
}

// stepRequests says how many requests a step made through the proxy, and how many were denied.
func stepRequests(c session.StepRequests) string {
	s := english.Count(c.Requests, "request")
	if c.Denied > 0 {
		s += fmt.Sprintf(" (%d DENIED)", c.Denied)
	}
	return s
}

// commandLine shows argv on one line, each word quoted when it needs it, at most 60 columns.
func commandLine(argv []string) string {
	if len(argv) == 0 {
		return "-"
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") || diff.QuotePath(a) != a {
			words[i] = fmt.Sprintf("%q", a)
		}
	}
	s := strings.Join(words, " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}
