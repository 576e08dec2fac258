package session

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"golang.org/x/sys/unix"
)

// benchTree writes n small files under root in 100 directories.
func benchTree(b *testing.B, root string, n int, content string) {
	b.Helper()
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%100))
		if i < 100 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.txt", i)), []byte(fmt.Sprintf(content, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyAll10k scans a change set of 10,000 small files staged over a project of 5,000
// (half of them modified, half new) and applies it all, journal and fsyncs included.
func BenchmarkApplyAll10k(b *testing.B) {
	statefile.Durable = true
	defer func() { statefile.Durable = false }()
	for b.Loop() {
		b.StopTimer()
		f := newFixture(b, nil)
		benchTree(b, f.project, 5000, "line %d\n")
		// The manifest must know the project's files: start the session again over them.
		f.s.Discard()
		s, err := f.lock.Create()
		if err != nil {
			b.Fatal(err)
		}
		f.s = s
		benchTree(b, s.UpperDir(), 10000, "changed line %d\n")
		f.run(b)
		unix.Sync() // the setup's files are on disk before the clock starts, in both benchmarks
		b.StartTimer()
		cs, err := s.Changes()
		if err != nil || len(cs.Changes) != 10000 {
			b.Fatalf("changes: %d, %v", len(cs.Changes), err)
		}
		res, err := s.Apply(apply.ApplyOptions{All: true})
		if err != nil || len(res.Files) != 10000 {
			b.Fatalf("apply: %v", err)
		}
	}
}

// BenchmarkPlainCopy10k is the reference: copying the same 10,000 staged files over the project
// file by file (like cp -a, without any fsync).
func BenchmarkPlainCopy10k(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
		benchTree(b, dst, 5000, "line %d\n")
		benchTree(b, src, 10000, "changed line %d\n")
		unix.Sync()
		b.StartTimer()
		if err := copyTree(src, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, fi.Mode().Perm())
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
