package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/internal/jsonout"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session"
)

// netNow is what --checkpoint takes for the requests since the last checkpoint.
const netNow = "now"

func newNetCmd() *cobra.Command {
	var f sessionFlags
	var checkpoint string
	var denied, asJSON bool
	cmd := &cobra.Command{
		Use:   "net [--checkpoint ID] [--denied] [--json] [--session ID]",
		Short: "List the requests the session's commands made through the allow-list proxy, step by step",
		Long: `net lists every request the jail's allow-list proxy saw in the session (--allow-domain), oldest
first, each with the step it falls in: the first checkpoint taken after it ('shadow log' lists
them), or "now" for the requests since the last one. A line gives the time, the method, where it
went (the URL for plain HTTP and for HTTPS the proxy terminated to put a secret in, the CONNECT
target of a tunnel otherwise), the status, the bytes sent and received, the time it took, and
the allow-list rule that let it through or why it was DENIED; a secret the proxy put in is
named with a '+'. --checkpoint ID shows one step's, --denied only the refused ones.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, s, err := f.readSession()
			if err != nil {
				return err
			}
			reqs, err := s.Requests()
			if err != nil {
				return err
			}
			if checkpoint != "" {
				step := checkpoint
				if step == netNow {
					step = ""
				} else if err := checkCheckpoint(s, step); err != nil {
					return err
				}
				reqs = slices.DeleteFunc(reqs, func(r session.Request) bool { return r.Checkpoint != step })
			}
			if denied {
				reqs = slices.DeleteFunc(reqs, func(r session.Request) bool { return r.Allowed })
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if reqs == nil {
					reqs = []session.Request{}
				}
				return jsonout.NewEncoder(out).Encode(reqs)
			}
			if len(reqs) == 0 {
				fmt.Fprintf(out, "session %s has no request%s\n", s.ID(), netScope(checkpoint, denied))
				return nil
			}
			return writeRequests(out, reqs)
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", `only the requests of this step (a checkpoint's id, or "now" for those since the last)`)
	cmd.Flags().BoolVar(&denied, "denied", false, "only the requests the proxy refused")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the requests as JSON")
	return cmd
}

// checkCheckpoint refuses an id that names no checkpoint of s.
func checkCheckpoint(s *session.Session, id string) error {
	cps, err := s.Checkpoints()
	if err != nil {
		return err
	}
	for _, c := range cps {
		if c.ID == id {
			return nil
		}
	}
	return usageError{msg: fmt.Sprintf("--checkpoint %s: session %s has no such checkpoint ('shadow log' lists them; %q is the requests since the last)",
		quote.Path(id), s.ID(), netNow)}
}

func netScope(checkpoint string, denied bool) string {
	var s string
	if denied {
		s = " denied"
	}
	switch checkpoint {
	case "":
	case netNow:
		s += " since the last checkpoint"
	default:
		s += " in step " + checkpoint
	}
	return s
}

// writeRequests prints one request a line, in columns.
func writeRequests(w io.Writer, reqs []session.Request) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tTIME\tMETHOD\tDESTINATION\tSTATUS\tUP\tDOWN\tMS\tVERDICT")
	for _, r := range reqs {
		step := r.Checkpoint
		if step == "" {
			step = netNow
		}
		status := "-"
		if r.Status != 0 {
			status = strconv.Itoa(r.Status)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.1f\t%s\n", step, r.Time.Local().Format("15:04:05.000"),
			quote.Path(r.Method), destination(r), status, r.Up, r.Down, r.Duration, verdict(r))
	}
	return tw.Flush()
}

// destination is where a request went, escaped for the terminal: the URL
// where the proxy saw one, the CONNECT target (or host:port) otherwise.
func destination(r session.Request) string { return quote.Path(r.Destination()) }

func verdict(r session.Request) string {
	var v string
	if r.Allowed {
		v = "allowed"
		if r.Rule != "" {
			v += " by " + r.Rule
		}
		if r.Reason != "" {
			v += ", failed: " + r.Reason
		}
	} else {
		v = "DENIED"
		if r.Reason != "" {
			v += ": " + r.Reason
		}
	}
	for _, s := range r.Secrets {
		v += " +" + s
	}
	return quote.Text(strings.ReplaceAll(v, "\n", " "))
}
