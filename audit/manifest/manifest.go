// Package manifest parses the dependency manifests, lockfiles, package-manager
// configuration and build scripts that the preflight audit inspects.
//
// Every parser is a pure function over the bytes of one file: it returns a typed
// value and an error naming the file and, where it can, the line. No parser panics
// on any input, and each refuses input above a size cap with an error wrapping
// ErrTooLarge, so that a rule can report the check as skipped instead of passed.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrTooLarge is wrapped by every error about a file too large to parse or scan;
// a rule that meets it reports its check as skipped, never as passed.
var ErrTooLarge = errors.New("file too large to parse")

// Size caps, in bytes, above which parsers return an error wrapping ErrTooLarge.
const (
	// MaxManifestSize caps package.json and Cargo.toml.
	MaxManifestSize = 8 << 20
	// MaxConfigSize caps .npmrc, .yarnrc.yml and .cargo/config(.toml).
	MaxConfigSize = 1 << 20
	// MaxLockfileSize caps package-lock.json, yarn.lock, pnpm-lock.yaml and bun.lock.
	MaxLockfileSize = 64 << 20
	// MaxCargoLockSize caps Cargo.lock, which the TOML decoder holds in memory whole.
	MaxCargoLockSize = 16 << 20
	// MaxSourceSize caps build.rs and the JavaScript files run by lifecycle hooks.
	MaxSourceSize = 8 << 20
)

// Caps on the number of entries a parser builds, so that a degenerate file
// within the size caps cannot take gigabytes; real lockfiles stay far below.
const (
	maxEntries   = 1 << 20 // packages of one lockfile
	maxYAMLNodes = 1 << 22 // lines read by the yarn 1 lockfile reader
)

func tooMany(path string, what string, limit int) error {
	return &ParseError{Path: path, Err: fmt.Errorf("%w: more than %d %s", ErrTooLarge, limit, what)}
}

// ParseError reports a file that could not be parsed, with the line when known.
type ParseError struct {
	Path string // the file, as given to the parser
	Line int    // 1-based line of the problem; 0 when unknown
	Err  error  // what went wrong; may wrap ErrTooLarge
}

// Error formats the error as "path:line: message".
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error, so errors.Is(err, ErrTooLarge) works.
func (e *ParseError) Unwrap() error { return e.Err }

func parseErr(path string, line int, format string, args ...any) error {
	return &ParseError{Path: path, Line: line, Err: fmt.Errorf(format, args...)}
}

func tooLarge(path string, size, limit int) error {
	return &ParseError{Path: path, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, limit)}
}

// ReadFile reads path, which must be a regular file of at most limit bytes;
// a longer file gives an error wrapping ErrTooLarge without reading the rest.
func ReadFile(path string, limit int64) ([]byte, error) {
	// O_NONBLOCK keeps a FIFO planted under a manifest's name from blocking the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file (%v)", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &ParseError{Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}

// lineAt returns the 1-based line number of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off < 0 {
		return 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// lineCounter turns increasing byte offsets into line numbers in linear total time.
type lineCounter struct {
	data []byte
	off  int64
	line int
}

func newLineCounter(data []byte) *lineCounter { return &lineCounter{data: data, line: 1} }

func (c *lineCounter) at(off int64) int {
	if off > int64(len(c.data)) {
		off = int64(len(c.data))
	}
	if off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.off = off
	return c.line
}
