package history

import (
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// A checkpoint is named c2 or 2 alike; an id that names none says where the list is.
func TestFindCheckpoint(t *testing.T) {
	cps := []Checkpoint{{ID: "c1", N: 1}, {ID: "c2", N: 2}, {ID: "c10", N: 10}}
	for id, want := range map[string]int{"c1": 0, "1": 0, "c2": 1, "2": 1, "10": 2, "c10": 2} {
		if i, err := FindCheckpoint(cps, id); err != nil || i != want {
			t.Errorf("FindCheckpoint(%q) = %d, %v; want %d", id, i, err, want)
		}
	}
	for _, id := range []string{"c3", "3", "0", "-1", "c", "", "c02", "C2"} {
		if _, err := FindCheckpoint(cps, id); err == nil || !strings.Contains(err.Error(), "shadow log") {
			t.Errorf("FindCheckpoint(%q) = %v, want an error naming shadow log", id, err)
		}
	}
}

// A step counts a file deleted and added elsewhere with the same bytes and mode as one rename
// of no lines, as `shadow log` says; other pairs stay two files.
func TestCountStepPairsRenames(t *testing.T) {
	file := func(path string, old, new string, oldMode, newMode uint32) diff.FilePatch {
		p := diff.FilePatch{OldMode: oldMode, NewMode: newMode, Old: []byte(old), New: []byte(new)}
		if oldMode != 0 {
			p.OldPath = path
		}
		if newMode != 0 {
			p.NewPath = path
		}
		return p
	}
	moved := []diff.FilePatch{file("a.txt", "x\ny\n", "", diff.ModeFile, 0), file("b.txt", "", "x\ny\n", 0, diff.ModeFile)}
	if files, added, removed := CountStep(moved); files != 1 || added != 0 || removed != 0 {
		t.Errorf("a rename counts %d files +%d -%d, want 1 file +0 -0", files, added, removed)
	}
	if moved[0].OldPath != "a.txt" || moved[1].OldPath != "" {
		t.Errorf("CountStep changed its argument: %+v", moved)
	}
	other := []diff.FilePatch{file("a.txt", "x\ny\n", "", diff.ModeFile, 0), file("b.txt", "", "x\ny\n", 0, diff.ModeExecutable)}
	if files, added, removed := CountStep(other); files != 2 || added != 2 || removed != 2 {
		t.Errorf("a delete and an add of another mode count %d files +%d -%d, want 2 +2 -2", files, added, removed)
	}
	edit := []diff.FilePatch{file("a.txt", "x\ny\n", "x\nz\n", diff.ModeFile, diff.ModeFile)}
	if files, added, removed := CountStep(edit); files != 1 || added != 1 || removed != 1 {
		t.Errorf("an edit counts %d files +%d -%d, want 1 +1 -1", files, added, removed)
	}
}
