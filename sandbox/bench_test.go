package sandbox

import (
	"bufio"
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
func benchPolicy(b *testing.B, project string) setup {
	b.Helper()
	state, err := os.MkdirTemp(filepath.Dir(project), "state-")
	if err != nil {
		b.Fatal(err)
	}
	return setup{Policy: Policy{
		Project: project,
		Upper:   filepath.Join(state, "upper"),
		Home:    b.TempDir(),
		Env:     BuildEnv(os.Environ(), nil),
	}, IO: IO{
		Stdin:  strings.NewReader(""),
		Stdout: io.Discard,
		Stderr: io.Discard,
	}}
}

func runJail(b *testing.B, p setup, argv ...string) {
	b.Helper()
	res, err := runSetup(context.Background(), p, argv)
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
// staging layer) into the run's tmpfs layer, which the end of the run
// merges into the staging layer on disk; it reports the bytes the tmpfs
// layer held.
func BenchmarkAppend5000Jail(b *testing.B) {
	dir := benchProject(b)
	var layer int64
	for b.Loop() {
		b.StopTimer()
		p := benchPolicy(b, dir)
		b.StartTimer()
		res, err := runSetup(context.Background(), p, []string{"/bin/sh", "-c", appendScript})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("append: %v, exit %d", err, res.ExitCode)
		}
		layer = res.LayerBytes
	}
	b.ReportMetric(float64(layer), "layer-bytes")
}

// BenchmarkCheckpoint10Files times one checkpoint after the command edited
// 10 files: from the request to PID 1's report that it is on disk (SPEC §9:
// under 20 ms). The command edits the files when it reads a line, then
// says so.
func BenchmarkCheckpoint10Files(b *testing.B) {
	dir := benchProject(b)
	p := benchPolicy(b, dir)
	p.Checkpoints = filepath.Join(filepath.Dir(p.Upper), "checkpoints")
	p.QuietCheckpoint = -1
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p.Stdin, p.Stdout = inR, outW
	req := make(chan string)
	took := make(chan Checkpoint, 1)
	p.CheckpointRequests = req
	p.Checkpointed = func(c Checkpoint) {
		if c.Trigger == CheckpointManual {
			took <- c
		}
	}
	script := `n=0; while read -r line; do n=$((n+1)); for f in d00/f00*.txt; do echo "step $n" >> "$f"; done; echo ready; done`
	done := make(chan error, 1)
	go func() {
		_, err := runSetup(context.Background(), p, []string{"/bin/sh", "-c", script})
		outW.Close()
		done <- err
	}()
	lines := bufio.NewScanner(outR)
	for b.Loop() {
		b.StopTimer()
		if _, err := io.WriteString(inW, "go\n"); err != nil {
			b.Fatal(err)
		}
		if !lines.Scan() || lines.Text() != "ready" {
			b.Fatalf("the command did not edit its files: %q", lines.Text())
		}
		b.StartTimer()
		req <- CheckpointManual
		// The first holds the files' directory too.
		if c := <-took; len(c.Paths) < 10 || len(c.Paths) > 11 {
			b.Fatalf("checkpoint %s holds %d paths, want the 10 files", c.ID, len(c.Paths))
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
