package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Benchmarks of SPEC §9 for the jail: start-up, a read-heavy and a
// copy-up-heavy workload, each next to the same workload outside. Fixtures
// are generated at bench time. bench/jail.sh compares whole processes.

const (
	readScript   = `find . -type f -exec cat {} + > /dev/null`
	appendScript = `find . -type f -exec sh -c 'for f; do echo line >> "$f"; done' _ {} +`
)

// benchProject writes 5,000 small files in 50 directories.
func benchProject(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "project")
	for d := 0; d < 50; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			content := fmt.Sprintf("file %d of dir %d\n%s", f, d, strings.Repeat("x", 200))
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// benchPolicy is a jail over project with a fresh staging layer.
func benchPolicy(b *testing.B, project string) Policy {
	b.Helper()
	state, err := os.MkdirTemp(filepath.Dir(project), "state-")
	if err != nil {
		b.Fatal(err)
	}
	return Policy{
		Project: project,
		Upper:   filepath.Join(state, "upper"),
		Home:    b.TempDir(),
		Env:     BuildEnv(os.Environ(), nil),
		Stdin:   strings.NewReader(""),
		Stdout:  io.Discard,
		Stderr:  io.Discard,
	}
}

func runJail(b *testing.B, p Policy, argv ...string) {
	b.Helper()
	res, err := Run(context.Background(), p, argv)
	if err != nil {
		b.Fatal(err)
	}
	if res.ExitCode != 0 {
		b.Fatalf("%q exited %d", argv, res.ExitCode)
	}
}

func runHost(b *testing.B, dir string, script string) {
	b.Helper()
	c := exec.Command("/bin/sh", "-c", script)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", script, err, out)
	}
}

func BenchmarkRunTrue(b *testing.B) {
	p := benchPolicy(b, benchProjectSmall(b))
	for b.Loop() {
		runJail(b, p, "/bin/true")
	}
}

func benchProjectSmall(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

func BenchmarkRead5000Host(b *testing.B) {
	dir := benchProject(b)
	for b.Loop() {
		runHost(b, dir, readScript)
	}
}

func BenchmarkRead5000Jail(b *testing.B) {
	dir := benchProject(b)
	p := benchPolicy(b, dir)
	for b.Loop() {
		runJail(b, p, "/bin/sh", "-c", readScript)
	}
}

func BenchmarkAppend5000Host(b *testing.B) {
	dir := benchProject(b)
	for b.Loop() {
		runHost(b, dir, appendScript)
	}
}

// BenchmarkAppend5000Jail copies up all 5,000 files each iteration (fresh
// staging layer), with the overlay mounted volatile as Run does.
func BenchmarkAppend5000Jail(b *testing.B) {
	benchAppendJail(b, true)
}

// BenchmarkAppend5000JailSync is the same without "volatile": every copy-up
// fsyncs. It shows what the option buys.
func BenchmarkAppend5000JailSync(b *testing.B) {
	benchAppendJail(b, false)
}

func benchAppendJail(b *testing.B, volatile bool) {
	old := overlayVolatile
	overlayVolatile = volatile
	defer func() { overlayVolatile = old }()
	dir := benchProject(b)
	for b.Loop() {
		b.StopTimer()
		p := benchPolicy(b, dir)
		b.StartTimer()
		runJail(b, p, "/bin/sh", "-c", appendScript)
	}
}
