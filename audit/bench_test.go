package audit

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchPackages is the size of the generated node_modules (SPEC §9).
const benchPackages = 1500

// genNodeModules writes a project with a node_modules of n packages (a tenth
// scoped, a tenth nested under another package, a few with install scripts)
// and a package-lock.json covering them.
func genNodeModules(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	var lock strings.Builder
	var deps []string
	lock.WriteString(`{"name":"bench","version":"1.0.0","lockfileVersion":3,"packages":{"":{"name":"bench","version":"1.0.0"}`)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("pkg-%04d", i)
		rel := "node_modules/" + name
		switch {
		case i%10 == 1:
			name = fmt.Sprintf("@scope%d/pkg-%04d", i%7, i)
			rel = "node_modules/" + name
		case i%10 == 2 && i > 10:
			rel = fmt.Sprintf("node_modules/pkg-%04d/node_modules/%s", i-2, name)
		}
		if !strings.Contains(rel, "/node_modules/pkg") || strings.Count(rel, "node_modules") == 1 {
			deps = append(deps, fmt.Sprintf("%q:\"1.%d.0\"", name, i%9))
		}
		scripts := `"test":"node test.js"`
		if i%150 == 7 {
			scripts = `"postinstall":"node install.js","test":"node test.js"`
			writeFile(tb, filepath.Join(root, rel, "install.js"), "require('fs').writeFileSync('built.txt', 'ok')\n")
		}
		pj := fmt.Sprintf(`{
  "name": %q,
  "version": "1.%d.0",
  "description": "generated package %d for the audit benchmark",
  "main": "index.js",
  "license": "MIT",
  "repository": {"type": "git", "url": "https://github.com/example/%s.git"},
  "scripts": {%s},
  "dependencies": {"pkg-%04d": "^1.0.0", "pkg-%04d": "~1.2.0"},
  "keywords": ["bench", "generated", "audit"],
  "engines": {"node": ">=18"}
}
`, name, i%9, i, strings.ReplaceAll(name, "/", "-"), scripts, (i+1)%n, (i+2)%n)
		writeFile(tb, filepath.Join(root, rel, "package.json"), pj)
		fmt.Fprintf(&lock, `,%q:{"version":"1.%d.0","resolved":"https://registry.npmjs.org/%s/-/x-1.%d.0.tgz","integrity":"sha512-%s=="%s}`,
			rel, i%9, name, i%9, strings.Repeat("A", 86), map[bool]string{true: `,"hasInstallScript":true`, false: ""}[i%150 == 7])
	}
	lock.WriteString("}}\n")
	writeFile(tb, filepath.Join(root, "package-lock.json"), lock.String())
	writeFile(tb, filepath.Join(root, "package.json"), `{"name":"bench","version":"1.0.0","dependencies":{`+strings.Join(deps, ",")+"}}\n")
	return root
}

// readEveryPackageJSON is the baseline: find every package.json and read it once.
func readEveryPackageJSON(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "package.json" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n += len(b)
		}
		return nil
	})
	return n, err
}

func BenchmarkReadEveryPackageJSON1500(b *testing.B) {
	root := genNodeModules(b, benchPackages)
	b.ResetTimer()
	for b.Loop() {
		if _, err := readEveryPackageJSON(root); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAuditNodeModules1500(b *testing.B) {
	root := genNodeModules(b, benchPackages)
	opts := Options{Env: LiveEnv(), Project: root, Profile: ProfileDependency}
	b.ResetTimer()
	for b.Loop() {
		r, err := Verify(context.Background(), opts, nil)
		if err != nil {
			b.Fatal(err)
		}
		if f, _ := r.Finding("DEP003"); f.Result != Fail {
			b.Fatalf("DEP003 %s: the generated install scripts were not seen", f.Result)
		}
	}
}

func BenchmarkAuditDepOnly1500(b *testing.B) {
	root := genNodeModules(b, benchPackages)
	opts := Options{Env: LiveEnv(), Project: root, Profile: ProfileDependency, Domains: []Domain{DomainDep}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Verify(context.Background(), opts, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGeneratedNodeModulesAudit checks the benchmark's generator makes what it
// claims (at a fifth of the size, to keep the test quick): every installed
// package found, the lockfile covering them, the install scripts seen.
func TestGeneratedNodeModulesAudit(t *testing.T) {
	const n = benchPackages / 5
	root := genNodeModules(t, n)
	r := verify(t, fixtureEnv(t, "jail"), root, ProfileDependency, DomainDep)
	d := finding(t, r, "DEP000")
	if d.Result != Pass || !strings.Contains(evidenceText(d), fmt.Sprintf("installed packages ×%d", n)) {
		t.Fatalf("DEP000: %s %s", d.Result, evidenceText(d))
	}
	for _, id := range []string{"DEP001", "DEP002", "DEP016"} {
		if f := finding(t, r, id); f.Result != Pass {
			t.Errorf("%s: %s %s", id, f.Result, evidenceText(f))
		}
	}
	if f := finding(t, r, "DEP003"); f.Result != Fail || len(f.Evidence) != n/150 {
		t.Errorf("DEP003: %s, %d lines: %s", f.Result, len(f.Evidence), evidenceText(f))
	}
}

// BenchmarkAuditVsReadRatio alternates the baseline and the whole audit in
// each iteration, so both see the same machine load and page cache, and
// reports audit time / baseline time as "ratio" (SPEC §9 target: ≤ 2).
func BenchmarkAuditVsReadRatio(b *testing.B) {
	root := genNodeModules(b, benchPackages)
	opts := Options{Env: LiveEnv(), Project: root, Profile: ProfileDependency}
	if _, err := readEveryPackageJSON(root); err != nil { // warm the page cache
		b.Fatal(err)
	}
	var base, audit time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := readEveryPackageJSON(root); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := Verify(context.Background(), opts, nil); err != nil {
			b.Fatal(err)
		}
		base += t1.Sub(t0)
		audit += time.Since(t1)
	}
	b.ReportMetric(float64(base.Microseconds())/float64(b.N)/1000, "read-ms/op")
	b.ReportMetric(float64(audit.Microseconds())/float64(b.N)/1000, "audit-ms/op")
	b.ReportMetric(float64(audit)/float64(base), "ratio")
}
