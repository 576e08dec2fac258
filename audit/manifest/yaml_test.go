package manifest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// yamlParsers are the parsers that read YAML, each with what a document needs to be its kind.
var yamlParsers = map[string]struct {
	head  string
	parse func(path string, data []byte) error
}{
	"pnpm-lock.yaml": {"lockfileVersion: '9.0'\n", func(p string, d []byte) error { _, err := ParsePnpmLock(p, d); return err }},
	"yarn.lock (2+)": {"__metadata:\n  version: 8\n", func(p string, d []byte) error { _, err := ParseYarnLock(p, d); return err }},
	".yarnrc.yml":    {"enableScripts: false\n", func(p string, d []byte) error { _, err := ParseYarnrc(p, d); return err }},
}

// billionLaughs is the classic alias bomb: ten aliases of ten aliases, levels deep; expanded, the
// last key holds 10^levels leaves.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// mergeLaughs is billionLaughs with merge keys: each level merges the one below twice, and
// adds no key of its own.
func mergeLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("m0: &m0 {}\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	return b.String()
}

// Every YAML parser refuses a document whose aliases expand past what the file holds (a billion
// laughs, an alias within itself, a wide fan-out of one big anchor) as too large, reported with
// the file, in bounded time and memory; a document with a few aliases still parses.
func TestYAMLAliasBombs(t *testing.T) {
	bombs := map[string]string{
		"billion laughs":   billionLaughs(9),
		"alias in itself":  "loop: &a [*a, *a]\n",
		"merges of merges": mergeLaughs(60),
		"fan-out":          "big: &b [" + strings.Repeat("x, ", 5000) + "x]\nuse: [" + strings.Repeat("*b, ", 500) + "*b]\n",
	}
	for kind, p := range yamlParsers {
		for name, bomb := range bombs {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			err := p.parse("bomb.yaml", []byte(p.head+bomb))
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Path != "bomb.yaml" || !errors.Is(err, ErrTooLarge) && name != "alias in itself" {
				t.Errorf("%s, %s: err = %v, want a ParseError (too large)", kind, name, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 || took > 60*time.Second { // the time bound is for a busy machine; quiet, milliseconds
				t.Errorf("%s, %s: %d MB allocated in %v", kind, name, alloc>>20, took)
			}
		}
		if err := p.parse("ok.yaml", []byte(p.head+"base: &base {a: 1}\nuse: *base\n")); err != nil {
			t.Errorf("%s: a document with an alias: %v", kind, err)
		}
	}
}

// A YAML file with more node indicators than maxYAMLMarks is refused before the library builds
// its tree (at the cap, "k: v" lines build some 600 MB, in seconds).
func TestYAMLMarksCap(t *testing.T) {
	over := strings.Repeat("k: v\n", maxYAMLMarks/2) + "x:\n" // two marks a line: ": " and "\n"
	if n := yamlMarks([]byte(over)); n != maxYAMLMarks+2 {
		t.Fatalf("yamlMarks = %d, want %d", n, maxYAMLMarks+2)
	}
	for kind, p := range yamlParsers {
		start := time.Now()
		if err := p.parse("f.yaml", []byte(p.head+over)); !errors.Is(err, ErrTooLarge) || time.Since(start) > 60*time.Second {
			t.Errorf("%s over the cap: err = %v after %v, want ErrTooLarge at once", kind, err, time.Since(start))
		}
	}
}

// What the audit reads from a pnpm lockfile is what pnpm (js-yaml) reads: an alias and a merge
// key stand for their anchor's entries, a key given twice is an error, and of the two documents
// pnpm may write the lockfile is the second. The hand-written subset read "*evil" as the text
// of the resolution, so a tarball behind an alias went unseen.
func TestPnpmLockReadsLikePnpm(t *testing.T) {
	const head = "lockfileVersion: '9.0'\n"
	lock := head + "x: &evil {tarball: https://evil.invalid/a.tgz}\npackages:\n  a@1.0.0:\n    resolution: *evil\n  b@1.0.0:\n    <<: {requiresBuild: true}\n    resolution: {integrity: sha512-b}\n"
	l, err := ParsePnpmLock("pnpm-lock.yaml", []byte(lock))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Packages) != 2 || l.Packages[0].Tarball != "https://evil.invalid/a.tgz" || !l.Packages[1].RequiresBuild || l.Packages[1].Integrity != "sha512-b" {
		t.Errorf("packages = %+v", l.Packages)
	}
	two := "---\nlockfileVersion: '9.0'\nimporters:\n  .:\n    configDependencies: {}\n---\n" + head + "packages:\n  c@1.0.0:\n    resolution: {integrity: sha512-c}\n"
	if l, err := ParsePnpmLock("pnpm-lock.yaml", []byte(two)); err != nil || len(l.Packages) != 1 || l.Packages[0].Name != "c" {
		t.Errorf("two documents: %+v, %v", l, err)
	}
	for name, in := range map[string]string{
		"key twice":       head + "packages:\n  a@1.0.0:\n    resolution: {integrity: sha512-a}\n  a@1.0.0:\n    resolution: {tarball: https://evil.invalid/a.tgz}\n",
		"three documents": two + "---\n" + head,
	} {
		var pe *ParseError
		if _, err := ParsePnpmLock("pnpm-lock.yaml", []byte(in)); !errors.As(err, &pe) || pe.Line == 0 {
			t.Errorf("%s: err = %v, want a ParseError with a line", name, err)
		}
	}
}

// A yarn.lock is read as yarn reads it: yarn 1's format when its comment header says so, YAML
// otherwise; a syntax error in either is reported with its line.
func TestYarnLockFormat(t *testing.T) {
	classic := "# yarn lockfile v1\n\n\"a@^1\", \"a@^1.1\":\n  version \"1.1.0\"\n  resolved \"https://r.invalid/a-1.1.0.tgz\"\n"
	y, err := ParseYarnLock("yarn.lock", []byte(classic))
	if err != nil || y.Berry || len(y.Entries) != 1 || y.Entries[0].Version != "1.1.0" || len(y.Entries[0].Specs) != 2 {
		t.Errorf("classic = %+v, %v", y, err)
	}
	berry := "__metadata:\n  version: 8\n\n\"a@npm:^1\":\n  version: 1.1.0\n  resolution: \"a@npm:1.1.0\"\n  dependencies:\n    b: \"npm:^2\"\n"
	y, err = ParseYarnLock("yarn.lock", []byte(berry))
	if err != nil || !y.Berry || len(y.Entries) != 1 || y.Entries[0].Resolved != "a@npm:1.1.0" || y.Entries[0].Dependencies["b"] != "npm:^2" {
		t.Errorf("berry = %+v, %v", y, err)
	}
	for name, in := range map[string]string{
		"YAML":   "__metadata:\n  version: 8\n\"a@npm:^1\":\n  version: [1\n",
		"yarn 1": "# yarn lockfile v1\na@^1:\n  version \"1\n",
	} {
		var pe *ParseError
		if _, err := ParseYarnLock("yarn.lock", []byte(in)); !errors.As(err, &pe) || pe.Line == 0 {
			t.Errorf("%s: err = %v, want a ParseError with a line", name, err)
		}
	}
}
