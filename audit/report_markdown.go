package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SecurityReportName is the file shadow writes in the project when it blocks.
const SecurityReportName = "SECURITY_REPORT.md"

// WriteMarkdown writes the SECURITY_REPORT.md form: verdict, profile, every
// failed and skipped rule with evidence and remedy, and the passing rules listed.
func (r Report) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	v := r.Verdict()
	fmt.Fprintf(bw, "# shadow security report\n\n")
	fmt.Fprintf(bw, "- **Verdict:** %s\n", strings.ToUpper(v.Decision()))
	fmt.Fprintf(bw, "- **Result:** %s\n", v.Result())
	fmt.Fprintf(bw, "- **Profile:** `%s`\n", r.Profile)
	fmt.Fprintf(bw, "- **Project:** `%s`\n", mdCode(r.Project))
	fmt.Fprintf(bw, "- **Rule set:** `%s`\n", r.RuleSetVersion)
	if !r.Started.IsZero() {
		fmt.Fprintf(bw, "- **Audited:** %s\n", r.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	fmt.Fprintf(bw, "- **Counts:** %d passed, %d failed, %d skipped\n", v.Passed, v.Failed, v.Skipped)
	if v.Blocked {
		fmt.Fprintf(bw, "- **Blocking rules:** %s\n", strings.Join(v.Blocking, ", "))
	}
	if v.Skipped > 0 {
		fmt.Fprintf(bw, "\nA skipped rule could not be checked. A skip is never a pass: under `untrusted` a skipped blocking rule blocks, and under the other profiles the result is WARNED.\n")
	}
	section := func(title string, want Result) {
		var fs []Finding
		for _, f := range r.Findings {
			if f.Result == want {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(bw, "\n## %s\n", title)
		for _, f := range fs {
			block := ""
			if f.Blocks(r.Profile) {
				block = " — **blocks**"
			}
			fmt.Fprintf(bw, "\n### %s %s (%s, %s)%s\n\n", f.Rule.ID, mdText(f.Rule.Title), f.Severity, f.Rule.Domain, block)
			if f.Result == Skipped {
				fmt.Fprintf(bw, "Not checked: %s\n\n", mdText(f.SkipReason))
			} else {
				fmt.Fprintf(bw, "Evidence:\n\n")
				for _, e := range f.Evidence {
					fmt.Fprintf(bw, "- %s\n", mdEvidence(e))
				}
				fmt.Fprintln(bw)
			}
			fmt.Fprintf(bw, "Reads: %s\n\n", mdText(f.Rule.Reads))
			fmt.Fprintf(bw, "Remedy: %s\n", mdText(f.Rule.Remedy))
		}
	}
	section("Failed rules", Fail)
	section("Skipped rules", Skipped)
	var pass []string
	for _, f := range r.Findings {
		if f.Result == Pass {
			pass = append(pass, f.Rule.ID)
		}
	}
	if len(pass) > 0 {
		fmt.Fprintf(bw, "\n## Passed rules\n\n%s\n", strings.Join(pass, ", "))
	}
	return bw.Flush()
}

// mdText neutralises characters that would turn evidence into markup or
// terminal control sequences.
func mdText(s string) string {
	s = oneLine(s)
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "`", "'", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]")
	return r.Replace(s)
}

func mdCode(s string) string { return strings.ReplaceAll(oneLine(s), "`", "'") }

func mdEvidence(e Evidence) string {
	text := mdText(e.Text)
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("`%s:%d` %s", mdCode(e.File), e.Line, text)
	case e.File != "":
		return fmt.Sprintf("`%s` %s", mdCode(e.File), text)
	}
	return text
}

// WriteSecurityReport writes SECURITY_REPORT.md in projectDir (atomically,
// through a temporary file) and returns its path.
func (r Report) WriteSecurityReport(projectDir string) (string, error) {
	var buf bytes.Buffer
	if err := r.WriteMarkdown(&buf); err != nil {
		return "", err
	}
	p := filepath.Join(projectDir, SecurityReportName)
	if err := writeFileAtomic(p, buf.Bytes()); err != nil {
		return "", fmt.Errorf("write security report %s: %w", p, err)
	}
	return p, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames it
// into place, so a reader never sees a half-written report.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
