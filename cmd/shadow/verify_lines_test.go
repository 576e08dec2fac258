package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envRoot writes a directory standing for / to verify's environment rules: a plain host (an
// identity uid_map, no container mark, no hypervisor) or, with sandbox, a container's; bashrc
// leaves a writable ~/.bashrc, which FS003 blocks on.
func envRoot(t *testing.T, sandbox, bashrc bool) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/self/uid_map": "         0          0 4294967295\n",
		"proc/cpuinfo":      "flags\t\t: fpu vme\n",
	}
	if sandbox {
		files[".dockerenv"] = ""
	}
	if bashrc {
		files["root/.bashrc"] = "# rc\n"
	}
	for p, content := range files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// finalLine is the last non-empty line of s.
func finalLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestVerifyFirstAndLastLines: in every format, a plain verify of a shell that is not a sandbox
// (ENV002 fails) begins by saying it audits this shell, not the jail, and names --inside (the
// text report's first line; beside json, sarif and markdown, on stderr), and verify's last line
// names the file it wrote: SECURITY_REPORT.md when it blocks, .sandbox/attestation.json when it
// allows. In a sandbox the first line is the report's own.
func TestVerifyFirstAndLastLines(t *testing.T) {
	c := newCLI(t)
	for _, format := range []string{"text", "json", "sarif", "markdown"} {
		for _, tc := range []struct {
			name            string
			sandbox, bashrc bool
			code            int
			wrote           string
		}{
			{"host, ~/.bashrc writable", false, true, 3, "wrote the report to %s/SECURITY_REPORT.md"},
			{"host", false, false, 0, "wrote the attestation to %s/.sandbox/attestation.json"},
			{"container", true, false, 0, "wrote the attestation to %s/.sandbox/attestation.json"},
		} {
			p := fixture(t, map[string]string{"a.txt": "1\n"})
			out, errs, code := c.run(p, "verify", "--format", format, "--env-root", envRoot(t, tc.sandbox, tc.bashrc))
			if code != tc.code {
				t.Fatalf("%s, %s: exit %d, want %d\n%s\n%s", format, tc.name, code, tc.code, out, errs)
			}
			first, _, _ := strings.Cut(out, "\n")
			hinted := first == notSandboxLine
			if format != "text" {
				hinted = strings.HasPrefix(errs, notSandboxLine+"\n")
				if strings.Contains(out, notSandboxLine) {
					t.Errorf("%s, %s: the note is mixed into the %s report", format, tc.name, format)
				}
				if format != "markdown" && !json.Valid([]byte(out)) {
					t.Errorf("%s, %s: the report is not JSON:\n%s", format, tc.name, out)
				}
			}
			if hinted == tc.sandbox {
				t.Errorf("%s, %s: noted %v, want %v\nstdout: %s\nstderr: %s", format, tc.name, hinted, !tc.sandbox, first, errs)
			}
			want := strings.Replace(tc.wrote, "%s", p, 1)
			if last := finalLine(errs); !strings.HasSuffix(last, want) {
				t.Errorf("%s, %s: last line %q does not end %q", format, tc.name, last, want)
			}
			file := want[strings.Index(want, p):]
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s, %s: %v", format, tc.name, err)
			}
		}
	}
	if !strings.Contains(notSandboxLine, "shadow verify --inside") {
		t.Errorf("the note does not name --inside: %s", notSandboxLine)
	}

	// On this machine as it is: the note appears exactly when ENV002 fails.
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	js, _, _ := c.run(p, "verify", "--format", "json")
	var rep struct {
		Findings []struct {
			ID     string `json:"id"`
			Result string `json:"result"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("verify --format json: %v\n%s", err, js)
	}
	env002 := ""
	for _, f := range rep.Findings {
		if f.ID == "ENV002" {
			env002 = f.Result
		}
	}
	text, _, _ := c.run(p, "verify")
	if first, _, _ := strings.Cut(text, "\n"); (first == notSandboxLine) != (env002 == "fail") {
		t.Errorf("ENV002 is %q here, and the first line is %q", env002, first)
	}
}
