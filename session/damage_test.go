package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/history"
)

// A checkpoint left unmerged by a run whose jail died is checked before it is merged: a damaged
// one is not merged in part (nor any step after it), and the session says why it is incomplete.
func TestDamagedCheckpointIsNotMerged(t *testing.T) {
	for _, damage := range []string{"none", "a file cut short", "meta.json cut short"} {
		t.Run(damage, func(t *testing.T) {
			f := newFixture(t, map[string]file{"a.txt": {Data: "1\n"}})
			dir := f.s.CheckpointDir()
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			for n, name := range []string{"x.txt", "y.txt"} {
				src := t.TempDir()
				if err := os.WriteFile(filepath.Join(src, name), []byte("staged "+name+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				c := history.Checkpoint{ID: "c" + string(rune('1'+n)), N: n + 1, Time: time.Now().UTC(), Trigger: "run end"}
				if err := history.WriteCheckpoint(dir, c, src); err != nil {
					t.Fatal(err)
				}
			}
			switch damage {
			case "a file cut short":
				if err := os.Truncate(filepath.Join(dir, "c1", "layer", "x.txt"), 3); err != nil {
					t.Fatal(err)
				}
			case "meta.json cut short":
				if err := os.Truncate(filepath.Join(dir, "c1", "meta.json"), 10); err != nil {
					t.Fatal(err)
				}
			}
			n, err := f.s.layers().MergeCheckpoints()
			if err != nil {
				t.Fatal(err)
			}
			_, errX := os.Lstat(filepath.Join(f.s.UpperDir(), "x.txt"))
			_, errY := os.Lstat(filepath.Join(f.s.UpperDir(), "y.txt"))
			why := f.s.Incomplete()
			t.Logf("merged %d; incomplete: %q", n, why)
			if damage == "a file cut short" {
				if n != 0 || errX == nil || errY == nil {
					t.Errorf("a damaged checkpoint was merged: %d merged, x.txt staged %v, y.txt staged %v", n, errX == nil, errY == nil)
				}
				if !strings.Contains(why, "checkpoint c1 is damaged (1 file (x.txt) not as taken)") {
					t.Errorf("the session does not say the damaged checkpoint is not staged: %q", why)
				}
				return
			}
			// Metadata alone damaged: the contents check against their sums, and are merged.
			if n != 2 || errX != nil || errY != nil || why != "" {
				t.Errorf("good checkpoints: %d merged, x.txt %v, y.txt %v, incomplete %q", n, errX, errY, why)
			}
		})
	}
}
