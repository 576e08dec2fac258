package sandbox

import (
	"path/filepath"
	"testing"
	"time"
)

// TestMaskRescanDuringRun: a run that finds the cache stale walks again
// in the background, and Run returns once the new walk is recorded.
func TestMaskRescanDuringRun(t *testing.T) {
	t.Parallel()
	var dirs []string
	for _, g := range systemDirGlobs {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	cacheDir := t.TempDir()
	newMaskStore(cacheDir).systemMasks(dirs)
	c := loadMaskCache(cacheDir)
	var large string
	for tree, s := range c.Trees {
		if s.Entries >= defaultSmallTree {
			large = tree
		}
	}
	if large == "" {
		t.Skip("no system tree is large enough to be cached here")
	}
	old := time.Now().Add(-2 * time.Hour)
	setScanned(t, cacheDir, large, old)
	j := newTestJail(t)
	p := j.policy()
	p.MaskCache = cacheDir
	if res, _, _ := j.run(t, p, "/bin/true"); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if s := loadMaskCache(cacheDir).Trees[large]; !s.Scanned.After(old.Add(time.Hour)) {
		t.Errorf("%s: scanned %v after the run, want a new walk", large, s.Scanned)
	}
}
