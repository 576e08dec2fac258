package audit

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ANSI colours of the text report; used only when colour is asked for.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
)

// Mark is the one-character symbol of a result: ✓ pass, ✗ fail, ○ skipped.
func (r Result) Mark() string {
	switch r {
	case Pass:
		return "✓"
	case Fail:
		return "✗"
	}
	return "○"
}

// WriteText writes the human report: findings grouped by domain, each with its
// evidence, then the verdict. Passing rules are one line each.
func (r Report) WriteText(w io.Writer, color bool) error {
	bw := bufio.NewWriter(w)
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	v := r.Verdict()
	fmt.Fprintf(bw, "shadow preflight (%s) — profile %s — %s\n", r.RuleSetVersion, r.Profile, r.Project)
	for _, d := range Domains {
		var fs []Finding
		for _, f := range r.Findings {
			if f.Rule.Domain == d {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\n%s\n", paint(ansiBold, d.Title()))
		for _, f := range fs {
			mark := f.Result.Mark()
			switch {
			case f.Result == Pass:
				mark = paint(ansiGreen, mark)
			case f.Result == Fail && f.Blocks(r.Profile):
				mark = paint(ansiRed, mark)
			default:
				mark = paint(ansiYellow, mark)
			}
			tag := ""
			if f.Blocks(r.Profile) {
				tag = " " + paint(ansiRed, "[blocks]")
			}
			fmt.Fprintf(bw, "  %s %s %-8s %s%s\n", mark, f.Rule.ID, f.Severity, f.Rule.Title, tag)
			switch f.Result {
			case Skipped:
				fmt.Fprintf(bw, "      %s\n", paint(ansiDim, "not checked: "+f.SkipReason))
			case Fail:
				for _, e := range f.Evidence {
					fmt.Fprintf(bw, "      %s\n", oneLine(e.String()))
				}
				fmt.Fprintf(bw, "      %s\n", paint(ansiDim, "remedy: "+f.Rule.Remedy))
			}
		}
	}
	verdict := strings.ToUpper(v.Decision())
	if v.Blocked {
		verdict = paint(ansiRed+ansiBold, verdict)
	} else {
		verdict = paint(ansiGreen+ansiBold, verdict)
	}
	fmt.Fprintf(bw, "\n%s under %s: %d passed, %d failed, %d skipped", verdict, r.Profile, v.Passed, v.Failed, v.Skipped)
	if v.Blocked {
		fmt.Fprintf(bw, "; blocking: %s", strings.Join(v.Blocking, ", "))
	} else if v.Warned {
		fmt.Fprintf(bw, " (WARNED: a skip is never a pass)")
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}

// oneLine keeps evidence on one terminal line: control characters from file
// names or manifests are shown escaped, never interpreted.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
