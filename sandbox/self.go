//go:build !shadowinit

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// RunSelf runs this shadow binary with args in a fresh jail built from p. Without p.Upper, the
// staging layers are throwaway ones, so nothing it writes reaches a session: that is how the
// preflight evaluates the environment the agent will really get (`shadow verify --inside`). With
// a session's layers in p, the binary sees the session's staged tree (the review-time audit).
// The binary is bound read-only at its own path; stdout receives its standard output.
func RunSelf(ctx context.Context, p Policy, args []string, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return &JailError{Step: "find shadow binary", Err: err}
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return &JailError{Step: "find shadow binary", Err: err}
	}
	if p.Upper == "" {
		layers, err := os.MkdirTemp("", "shadow-inside-")
		if err != nil {
			return &JailError{Step: "staging layer", Err: err}
		}
		defer removeLayers(layers)
		p.Upper = filepath.Join(layers, "upper")
		p.CacheDir = filepath.Join(layers, "cache")
	}
	p.RuntimeDir = ""
	p.Publish = nil
	p.ReadOnly = append(append([]string{}, p.ReadOnly...), exe)
	var stderr bytes.Buffer
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return &JailError{Step: "open /dev/null", Err: err}
	}
	defer devnull.Close()
	w := IO{Stdin: devnull, Stdout: stdout, Stderr: &headWriter{buf: &stderr, n: 4096}, Warnings: io.Discard}
	res, err := Run(ctx, p, append([]string{exe}, args...), w)
	if err != nil {
		return err
	}
	if res.StopReason != "" {
		return fmt.Errorf("%s %s in the jail: stopped: %s", filepath.Base(exe), strings.Join(args, " "), res.StopReason)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s %s exited with status %d in the jail: %s", filepath.Base(exe), strings.Join(args, " "),
			res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// headWriter keeps the first n bytes written to it and accepts the rest.
type headWriter struct {
	buf *bytes.Buffer
	n   int
}

func (h *headWriter) Write(b []byte) (int, error) {
	if k := min(len(b), h.n); k > 0 {
		h.buf.Write(b[:k])
		h.n -= k
	}
	return len(b), nil
}

// removeLayers deletes throwaway overlay layers; overlay leaves a mode-000 directory in its work
// dir that must be made writable before it can be removed.
func removeLayers(dir string) {
	openDirs(dir)
	os.RemoveAll(dir)
}
