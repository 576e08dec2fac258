package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RunSelf runs this shadow binary with args in a fresh jail built from p, with throwaway staging
// layers: nothing it writes reaches a session. It is how the preflight evaluates the environment
// the agent will really get (`shadow verify --inside`). The binary is bound read-only at its own
// path; stdout receives the binary's standard output.
func RunSelf(ctx context.Context, p Policy, args []string, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return &JailError{Step: "find shadow binary", Err: err}
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return &JailError{Step: "find shadow binary", Err: err}
	}
	layers, err := os.MkdirTemp("", "shadow-inside-")
	if err != nil {
		return &JailError{Step: "staging layer", Err: err}
	}
	defer removeLayers(layers)
	p.Upper = filepath.Join(layers, "upper")
	p.Work = filepath.Join(layers, "work")
	p.CacheDir = filepath.Join(layers, "cache")
	p.RuntimeDir = ""
	p.Publish = nil
	p.ReadOnly = append(append([]string{}, p.ReadOnly...), exe)
	p.Stdin = nil
	p.Stdout = stdout
	p.Stderr = io.Discard
	p.Warnings = io.Discard
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return &JailError{Step: "open /dev/null", Err: err}
	}
	defer devnull.Close()
	p.Stdin = devnull
	res, err := Run(ctx, p, append([]string{exe}, args...))
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s %v exited with status %d in the jail", filepath.Base(exe), args, res.ExitCode)
	}
	return nil
}

// removeLayers deletes throwaway overlay layers; overlay leaves a mode-000 directory in its work
// dir that must be made writable before it can be removed.
func removeLayers(dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
