package termfilter

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// BenchmarkText measures throughput on typical agent output: text, UTF-8
// and colour sequences.
func BenchmarkText(b *testing.B) {
	line := "\x1b[32m✓\x1b[0m compiled \x1b[1mpackage\x1b[0m ok — 12 files, naïve résumé\r\n"
	chunk := []byte(strings.Repeat(line, 400))
	f := New(io.Discard)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		f.Write(chunk)
	}
}

// BenchmarkPlain measures throughput on plain ASCII.
func BenchmarkPlain(b *testing.B) {
	chunk := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 700)
	f := New(io.Discard)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		f.Write(chunk)
	}
}
