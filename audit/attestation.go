package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// In-toto identifiers of the attestation.
const (
	InTotoStatementType = "https://in-toto.io/Statement/v1"
	TestResultPredicate = "https://in-toto.io/attestation/test-result/v0.1"
	// AttestationPath is where shadow writes the attestation, relative to the project.
	AttestationPath = ".sandbox/attestation.json"
)

// Statement is an in-toto Statement v1.
type Statement struct {
	Type          string              `json:"_type"`
	Subject       []ResourceDesc      `json:"subject"`
	PredicateType string              `json:"predicateType"`
	Predicate     TestResultStatement `json:"predicate"`
}

// ResourceDesc is an in-toto ResourceDescriptor (the fields shadow uses).
type ResourceDesc struct {
	Name        string            `json:"name,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Digest      map[string]string `json:"digest,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// TestResultStatement is the test-result v0.1 predicate: the result, the
// configuration that produced it, and the rule IDs by outcome.
type TestResultStatement struct {
	Result        string         `json:"result"`
	Configuration []ResourceDesc `json:"configuration"`
	URL           string         `json:"url,omitempty"`
	PassedTests   []string       `json:"passedTests"`
	WarnedTests   []string       `json:"warnedTests"`
	FailedTests   []string       `json:"failedTests"`
}

// AttestationInput is what the attestation records beyond the report.
type AttestationInput struct {
	// ShadowDigest is the sha256 (hex) of the shadow binary that ran the audit
	// (SelfDigest gives it).
	ShadowDigest string
	// Kernel is the kernel release; empty means uname of this machine.
	Kernel string
}

// SelfDigest returns the sha256 (hex) of the running executable.
func SelfDigest() (string, error) {
	return fileSHA256("/proc/self/exe")
}

func fileSHA256(p string) (string, error) {
	f, err := openRegular(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// KernelRelease returns uname -r.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// Attestation builds the in-toto statement of the report: subjects are the git
// HEAD commit and the sha256 of every manifest and lockfile of the project;
// the result is PASSED only when nothing failed and nothing was skipped.
func (r Report) Attestation(in AttestationInput) (Statement, error) {
	v := r.Verdict()
	var subjects []ResourceDesc
	if commit, ref, err := GitHead(r.Project); err == nil {
		subjects = append(subjects, ResourceDesc{Name: "git+HEAD", Digest: map[string]string{"gitCommit": commit},
			Annotations: map[string]string{"ref": ref}})
	}
	files := r.manifests
	if files == nil {
		var err error
		if files, err = ManifestFiles(r.Project); err != nil {
			return Statement{}, fmt.Errorf("attestation: list manifests of %s: %w", r.Project, err)
		}
	}
	for _, rel := range files {
		d, err := fileSHA256(filepath.Join(r.Project, rel))
		if err != nil {
			return Statement{}, fmt.Errorf("attestation: digest %s: %w", rel, err)
		}
		subjects = append(subjects, ResourceDesc{Name: filepath.ToSlash(rel), Digest: map[string]string{"sha256": d}})
	}
	if len(subjects) == 0 {
		// in-toto requires a subject: with no git and no manifest, the project's
		// findings themselves are what is attested.
		var buf bytes.Buffer
		_ = json.NewEncoder(&buf).Encode(r.JSON().Findings)
		h := sha256.Sum256(buf.Bytes())
		subjects = append(subjects, ResourceDesc{Name: "shadow-audit-findings", Digest: map[string]string{"sha256": hex.EncodeToString(h[:])}})
	}
	kernel := in.Kernel
	if kernel == "" {
		kernel = KernelRelease()
	}
	domains := r.Domains
	if len(domains) == 0 {
		domains = Domains
	}
	var ds []string
	for _, d := range domains {
		ds = append(ds, string(d))
	}
	shadow := ResourceDesc{Name: "shadow", Annotations: map[string]string{
		"profile": string(r.Profile), "ruleSetVersion": r.RuleSetVersion, "kernel": kernel, "domains": strings.Join(ds, ","),
	}}
	if in.ShadowDigest != "" {
		shadow.Digest = map[string]string{"sha256": in.ShadowDigest}
	}
	pred := TestResultStatement{
		Result: v.Result(),
		Configuration: []ResourceDesc{shadow,
			{Name: "trust-profile", Annotations: map[string]string{"value": string(r.Profile)}},
			{Name: "rule-set", URI: RulesDocURL, Annotations: map[string]string{"version": r.RuleSetVersion}},
			{Name: "kernel", Annotations: map[string]string{"release": kernel}},
		},
		PassedTests: []string{}, WarnedTests: []string{}, FailedTests: []string{},
	}
	for _, f := range r.Findings {
		switch {
		case f.Result == Pass:
			pred.PassedTests = append(pred.PassedTests, f.Rule.ID)
		case f.Result == Fail && f.Blocks(r.Profile):
			pred.FailedTests = append(pred.FailedTests, f.Rule.ID)
		default:
			pred.WarnedTests = append(pred.WarnedTests, f.Rule.ID)
		}
	}
	return Statement{Type: InTotoStatementType, Subject: subjects, PredicateType: TestResultPredicate, Predicate: pred}, nil
}

// WriteAttestation writes the attestation to projectDir/.sandbox/attestation.json
// and returns its path.
func (r Report) WriteAttestation(projectDir string, in AttestationInput) (string, error) {
	st, err := r.Attestation(in)
	if err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", fmt.Errorf("attestation: encode: %w", err)
	}
	p := filepath.Join(projectDir, AttestationPath)
	if err := writeFileAtomic(p, append(b, '\n')); err != nil {
		return "", fmt.Errorf("write attestation %s: %w", p, err)
	}
	return p, nil
}

// GitHead returns the commit HEAD points at and the ref it names ("HEAD" when
// detached), reading .git/HEAD, loose refs and packed-refs directly; worktrees
// (.git file and commondir) are followed.
func GitHead(project string) (commit, ref string, err error) {
	gitDir, err := resolveGitDir(project)
	if err != nil {
		return "", "", fmt.Errorf("git head of %s: %w", project, err)
	}
	b, err := readRegular(filepath.Join(gitDir, "HEAD"), 4096)
	if err != nil {
		return "", "", fmt.Errorf("git head: %w", err)
	}
	head := strings.TrimSpace(string(b))
	if isHexID(head) {
		return strings.ToLower(head), "HEAD", nil
	}
	ref, ok := strings.CutPrefix(head, "ref:")
	if !ok {
		return "", "", fmt.Errorf("git head: %s/HEAD: unrecognised content", gitDir)
	}
	ref = strings.TrimSpace(ref)
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return "", "", fmt.Errorf("git head: %s/HEAD: bad ref %q", gitDir, ref)
	}
	dirs := []string{gitDir}
	if c, err := readRegular(filepath.Join(gitDir, "commondir"), 4096); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
		dirs = append(dirs, common)
	}
	for range 5 { // symbolic refs may chain
		next := ""
		for _, d := range dirs {
			if rb, err := readRegular(filepath.Join(d, filepath.FromSlash(ref)), 4096); err == nil {
				v := strings.TrimSpace(string(rb))
				if isHexID(v) {
					return strings.ToLower(v), ref, nil
				}
				if r2, ok := strings.CutPrefix(v, "ref:"); ok {
					next = strings.TrimSpace(r2)
					break
				}
			}
			if id, ok := packedRef(filepath.Join(d, "packed-refs"), ref); ok {
				return id, ref, nil
			}
		}
		if next == "" || !strings.HasPrefix(next, "refs/") || strings.Contains(next, "..") {
			break
		}
		ref = next
	}
	return "", ref, fmt.Errorf("git head: %s not found in %s (unborn branch?)", ref, gitDir)
}

func packedRef(path, ref string) (string, bool) {
	f, err := openRegular(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, name, ok := strings.Cut(line, " ")
		if ok && name == ref && isHexID(id) {
			return strings.ToLower(id), true
		}
	}
	return "", false
}

// isHexID reports a SHA-1 (40) or SHA-256 (64) object id.
func isHexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
