package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"
)

// Options selects what an audit looks at.
type Options struct {
	// Env is the environment view for the ENV, FS and NET rules. With Root
	// empty it is the live system, and unset fields come from LiveEnv().
	Env Env
	// Project is the project root the DEP rules (and FS006/FS008) read. A staged
	// tree works the same way, for review-time findings. Empty: the working directory.
	Project string
	// Profile decides what blocks; empty means DefaultProfile.
	Profile Profile
	// Domains limits the audit (verify --inside runs env, fs and net); empty means all.
	Domains []Domain
	// Rules, when set, limits the audit to these rule IDs (within Domains);
	// ProjectRules() is the set that reads only the project, for a staged tree.
	Rules []string
	// Concurrency is the number of checks run at once; 0 means a small default.
	Concurrency int
}

// checkFunc evaluates one rule.
type checkFunc func(s *scan) outcome

// outcome is what a check returns; the engine turns it into a Finding.
type outcome struct {
	result   Result
	severity Severity // 0: the rule's severity
	evidence []Evidence
	reason   string
}

func passed(ev ...Evidence) outcome { return outcome{result: Pass, evidence: ev} }
func failed(ev ...Evidence) outcome { return outcome{result: Fail, evidence: ev} }
func skipped(format string, args ...any) outcome {
	return outcome{result: Skipped, reason: fmt.Sprintf(format, args...)}
}

// note builds an evidence line without a file.
func note(format string, args ...any) Evidence { return Evidence{Text: fmt.Sprintf(format, args...)} }

// at builds an evidence line tied to a project file.
func at(file string, line int, format string, args ...any) Evidence {
	return Evidence{File: file, Line: line, Text: fmt.Sprintf(format, args...)}
}

// scan is the shared state of one audit: options and lazily read inputs that
// several rules need (each read once, whichever rule asks first).
type scan struct {
	ctx     context.Context
	env     Env
	project string

	statusOnce sync.Once
	status     ProcStatus
	statusErr  error

	mountsOnce sync.Once
	mounts     []Mount
	mountsErr  error

	depOnce sync.Once
	dep     *depState
}

func (s *scan) procStatus() (ProcStatus, error) {
	s.statusOnce.Do(func() {
		b, err := s.env.readFile("/proc/self/status", 1<<20)
		if err != nil {
			s.statusErr = fmt.Errorf("read /proc/self/status: %w", err)
			return
		}
		s.status, s.statusErr = ParseProcStatus(b)
		if s.statusErr != nil {
			s.statusErr = fmt.Errorf("parse /proc/self/status: %w", s.statusErr)
		}
	})
	return s.status, s.statusErr
}

func (s *scan) mountinfo() ([]Mount, error) {
	s.mountsOnce.Do(func() {
		b, err := s.env.readFile("/proc/self/mountinfo", 16<<20)
		if err != nil {
			s.mountsErr = fmt.Errorf("read /proc/self/mountinfo: %w", err)
			return
		}
		s.mounts, s.mountsErr = ParseMountinfo(b)
		if s.mountsErr != nil {
			s.mountsErr = fmt.Errorf("parse /proc/self/mountinfo: %w", s.mountsErr)
		}
	})
	return s.mounts, s.mountsErr
}

// Run evaluates the selected rules concurrently and sends each finding on the
// returned channel as soon as its check completes; the channel is closed when
// every rule has reported or ctx is done. Verify collects them in catalog order.
func Run(ctx context.Context, opts Options) <-chan Finding {
	s, rules := newScan(ctx, opts)
	return runScan(ctx, s, rules, opts.Concurrency)
}

// runScan evaluates rules on a small worker pool, sending each finding as it
// completes; the channel closes after the last one.
func runScan(ctx context.Context, s *scan, rules []*Rule, concurrency int) <-chan Finding {
	workers := concurrency
	if workers <= 0 {
		workers = min(4, max(2, runtime.NumCPU()))
	}
	out := make(chan Finding, len(rules))
	jobs := make(chan *Rule)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				f := evaluate(s, r)
				select {
				case out <- f:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(out)
		defer wg.Wait()
		defer close(jobs)
		for _, r := range rules {
			select {
			case jobs <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func newScan(ctx context.Context, opts Options) (*scan, []*Rule) {
	env := opts.Env
	if env.Root == "" {
		// The live system: what the caller left unset comes from LiveEnv, so
		// Env{Granted: names} alone still sees this process's variables.
		live := LiveEnv()
		env.Root = live.Root
		if env.Vars == nil {
			env.Vars = live.Vars
		}
		if env.Home == "" {
			env.Home = live.Home
		}
		if env.LandlockProbe == nil {
			env.LandlockProbe = live.LandlockProbe
		}
		if env.Granted == nil {
			env.Granted = live.Granted
		}
	}
	return &scan{ctx: ctx, env: env, project: projectRoot(opts.Project)}, RulesFor(opts)
}

// projectRoot makes the project path absolute; empty is the working directory.
func projectRoot(p string) string {
	if p == "" {
		p, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// ProjectRules are the rules that read only the project tree (all DEP rules,
// FS006 and FS008): the review-time audit of a staged tree runs these.
// They are listed on first use, not when the package loads: every process of
// the binary would otherwise build the catalog at start.
var ProjectRules = sync.OnceValue(func() []string {
	ids := []string{"FS006", "FS008"}
	for _, r := range Catalog() {
		if r.Domain == DomainDep {
			ids = append(ids, r.ID)
		}
	}
	return ids
})

// RulesFor lists the rules an audit with these options runs, in catalog
// order, so a live view can show every rule before its finding arrives.
func RulesFor(opts Options) []*Rule {
	var rules []*Rule
	for _, r := range Catalog() {
		if domainSelected(opts.Domains, r.Domain) && (len(opts.Rules) == 0 || containsID(opts.Rules, r.ID)) {
			rules = append(rules, r)
		}
	}
	return rules
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func domainSelected(ds []Domain, d Domain) bool {
	if len(ds) == 0 {
		return true
	}
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// evaluate runs one check, turning a panic in a check into a skip so one
// broken probe never stops the audit or reads as a pass.
func evaluate(s *scan, r *Rule) (f Finding) {
	defer func() {
		if p := recover(); p != nil {
			f = Finding{Rule: r, Result: Skipped, Severity: r.Severity,
				SkipReason: fmt.Sprintf("check failed internally: %v", p)}
		}
	}()
	if err := s.ctx.Err(); err != nil {
		return Finding{Rule: r, Result: Skipped, Severity: r.Severity, SkipReason: "audit cancelled: " + err.Error()}
	}
	o := r.check(s)
	sev := o.severity
	if sev == 0 {
		sev = r.Severity
	}
	f = Finding{Rule: r, Result: o.result, Severity: sev, Evidence: o.evidence, SkipReason: o.reason}
	if f.Result == Skipped && f.SkipReason == "" {
		f.SkipReason = "not checked"
	}
	return f
}

// Verify runs the audit to completion and returns the report. onFinding, when
// not nil, is called with each finding as it completes (from one goroutine).
// The error is set only when the project root is unusable or ctx ended early.
func Verify(ctx context.Context, opts Options, onFinding func(Finding)) (Report, error) {
	profile := opts.Profile
	if profile == "" {
		profile = DefaultProfile
	}
	if opts.Project != "" {
		st, err := os.Stat(opts.Project)
		if err != nil {
			return Report{}, fmt.Errorf("audit project %s: %w", opts.Project, err)
		}
		if !st.IsDir() {
			return Report{}, fmt.Errorf("audit project %s: not a directory", opts.Project)
		}
	}
	start := time.Now()
	s, rules := newScan(ctx, opts)
	var findings []Finding
	for f := range runScan(ctx, s, rules, opts.Concurrency) {
		if onFinding != nil {
			onFinding(f)
		}
		findings = append(findings, f)
	}
	if err := ctx.Err(); err != nil && len(findings) < len(rules) {
		return Report{}, fmt.Errorf("audit: %w", err)
	}
	order := make(map[string]int, len(rules))
	for i, r := range rules {
		order[r.ID] = i
	}
	sort.Slice(findings, func(i, j int) bool { return order[findings[i].Rule.ID] < order[findings[j].Rule.ID] })
	r := Report{
		Profile:        profile,
		RuleSetVersion: RuleSetVersion,
		Project:        s.project,
		Domains:        opts.Domains,
		Findings:       findings,
		Started:        start.UTC(),
		Duration:       time.Since(start),
	}
	// Every worker has finished: the dependency state, if a rule loaded it, is
	// complete, and its inventory spares the attestation a second walk.
	if s.dep != nil && s.dep.err == nil {
		r.manifests = manifestRels(s.dep.inv)
	}
	return r, nil
}
