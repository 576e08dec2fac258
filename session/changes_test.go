package session

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

func TestChangeSetFromUpper(t *testing.T) {
	f := newFixture(t, map[string]file{
		"keep.txt":                   {Data: "same\n"},
		"edit.txt":                   {Data: "one\ntwo\n"},
		"gone.txt":                   {Data: "bye\n"},
		"old/name.txt":               {Data: "moved content\n"},
		"script.sh":                  {Data: "#!/bin/sh\n"},
		"replaced/a.txt":             {Data: "a\n"},
		"replaced/b.txt":             {Data: "b\n"},
		"wiped/x/y.txt":              {Data: "y\n"},
		"link":                       {Link: "keep.txt"},
		"touched.txt":                {Data: "untouched content\n"},
		"bin.dat":                    {Data: "a\x00b"},
		"dir-becomes-file/inner.txt": {Data: "i\n"},
	})

	f.stage(t, map[string]file{
		"edit.txt":       {Data: "one\nTWO\n"},
		"new/added.txt":  {Data: "fresh\n"},
		"new/name.txt":   {Data: "moved content\n"},
		"script.sh":      {Data: "#!/bin/sh\n", Mode: 0o755},
		"replaced/b.txt": {Data: "b\n"},
		"link":           {Link: "edit.txt"},
		"bin.dat":        {Data: "a\x00c"},
		// A copy-up without change: same content and mode (overlay does this on touch/chmod back).
		"touched.txt":      {Data: "untouched content\n"},
		"dir-becomes-file": {Data: "now a file\n"},
	})
	f.whiteout(t, "gone.txt")
	f.whiteout(t, "old/name.txt")
	f.whiteout(t, "wiped")
	f.opaque(t, "replaced")
	if err := syscall.Mkfifo(filepath.Join(f.s.UpperDir(), "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	got := statuses(f.changes(t))
	want := []string{
		"M bin.dat [binary]",
		"D dir-becomes-file/inner.txt",
		"A dir-becomes-file",
		"M edit.txt",
		"D gone.txt",
		"M link",
		"A new/added.txt",
		"R new/name.txt <- old/name.txt",
		"A pipe [special]",
		"D replaced/a.txt",
		"M script.sh [mode]",
		"D wiped/x/y.txt",
	}
	slices.Sort(want)
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("change set:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cs := f.changes(t)
	c, _ := cs.Find("link")
	if c.Old.Target != "keep.txt" || c.New.Target != "edit.txt" {
		t.Errorf("symlink change %+v", c)
	}
	sum := changeset.Summarize(cs, 5)
	if sum.Added != 3 || sum.Deleted != 4 || sum.Renamed != 1 || len(sum.Lines) != 5 || sum.More != sum.Total()-5 {
		t.Errorf("summary %+v", sum)
	}
}

func TestTrustedOpaqueAndNestedWhiteout(t *testing.T) {
	f := newFixture(t, map[string]file{"d/a": {Data: "a"}, "d/b": {Data: "b"}, "e": {Data: "e"}})
	full := filepath.Join(f.s.UpperDir(), "d")
	os.MkdirAll(full, 0o755)
	if err := syscall.Setxattr(full, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("trusted xattrs unavailable: %v", err)
	}
	f.stage(t, map[string]file{"d/a": {Data: "a"}})
	// A whiteout written as a zero-size file with the overlay.whiteout xattr (nested overlays).
	os.WriteFile(filepath.Join(f.s.UpperDir(), "e"), nil, 0o644)
	if err := syscall.Setxattr(filepath.Join(f.s.UpperDir(), "e"), "user.overlay.whiteout", nil, 0); err != nil {
		t.Skipf("user xattrs unavailable: %v", err)
	}
	got := statuses(f.changes(t))
	if strings.Join(got, ",") != "D d/b,D e" {
		t.Errorf("changes = %v", got)
	}
}

func TestPreimagesAndConflicts(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a1\n"}, "b.txt": {Data: "b1\n"}, "c.txt": {Data: "c1\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}, "b.txt": {Data: "b2\n"}})
	// The host edits b.txt during the run, before the pre-image is taken.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(f.project, "b.txt"), []byte("host edit\n"), 0o644)
	f.run(t)
	// After the run the host edits a.txt: the base still holds the pre-image.
	os.WriteFile(filepath.Join(f.project, "a.txt"), []byte("host later\n"), 0o644)
	// And creates a file the agent also creates.
	os.WriteFile(filepath.Join(f.project, "d.txt"), []byte("host\n"), 0o644)
	f.stage(t, map[string]file{"d.txt": {Data: "agent\n"}})

	cs := f.changes(t)
	a, _ := cs.Find("a.txt")
	old, _, err := f.s.Contents(a, 0)
	if err != nil || string(old) != "a1\n" {
		t.Errorf("base of a.txt = %q, %v; want the pre-image", old, err)
	}
	for _, p := range []string{"a.txt", "b.txt", "d.txt"} {
		c, ok := cs.Find(p)
		if !ok || !c.Conflict || c.Reason == "" {
			t.Errorf("%s: want a conflict, got %+v", p, c)
		}
	}
	b, _ := cs.Find("b.txt")
	if !b.BaseUnknown || !strings.Contains(b.Reason, "base unknown") {
		t.Errorf("b.txt: %+v", b)
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 0 || len(res.Skipped) != 3 {
		t.Errorf("apply over conflicts: %+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(f.project, "a.txt")); string(data) != "host later\n" {
		t.Errorf("a conflict was overwritten: %q", data)
	}
}

func TestCopyUpIsNotAChange(t *testing.T) {
	f := newFixture(t, map[string]file{"x.txt": {Data: "x\n", Mode: 0o640}})
	f.stage(t, map[string]file{"x.txt": {Data: "x\n", Mode: 0o640}})
	f.run(t)
	if cs := f.changes(t); len(cs.Changes) != 0 {
		t.Errorf("an identical copy-up is a change: %v", statuses(cs))
	}
	os.Chmod(filepath.Join(f.s.UpperDir(), "x.txt"), 0o600)
	if got := statuses(f.changes(t)); strings.Join(got, ",") != "M x.txt [mode]" {
		t.Errorf("mode change: %v", got)
	}
}

func TestSummaryEscapesNames(t *testing.T) {
	cs := &changeset.ChangeSet{Changes: []changeset.Change{{Path: "evil\x1b]52;c;AAAA\x07\nname", Status: changeset.Added}, {Path: "bad\xffutf8", Status: changeset.Added}}}
	for _, l := range changeset.Summarize(cs, 10).Lines {
		if strings.ContainsAny(l, "\x1b\x07\n") || !strings.Contains(l, `\`) {
			t.Errorf("summary line not escaped: %q", l)
		}
	}
}

func TestConfigProtectedPatterns(t *testing.T) {
	f := newFixture(t, map[string]file{"deploy/prod.yaml": {Data: "a\n"}, "src/x.go": {Data: "x\n"}})
	f.stage(t, map[string]file{"deploy/prod.yaml": {Data: "b\n"}, "src/x.go": {Data: "y\n"}})
	f.run(t)
	f.s.SetProtected([]string{"deploy/"})
	got := statuses(f.changes(t))
	if strings.Join(got, ",") != "M deploy/prod.yaml [protected],M src/x.go" {
		t.Errorf("changes = %v", got)
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil || len(res.Skipped) != 1 || res.Skipped[0].Path != "deploy/prod.yaml" {
		t.Errorf("apply: %+v, %v", res, err)
	}
}

func TestCorruptSessionFiles(t *testing.T) {
	f := newFixture(t, map[string]file{"a": {Data: "1\n"}})
	f.stage(t, map[string]file{"a": {Data: "2\n"}})
	f.run(t)
	before := snapshot(t, f.project)
	os.WriteFile(filepath.Join(f.s.Dir(), "decisions.json"), []byte("[[["), 0o600)
	_, err := f.s.Apply(apply.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "corrupt decisions.json") || strings.Contains(err.Error(), "\n") {
		t.Errorf("corrupt decisions.json: %v", err)
	}
	os.WriteFile(filepath.Join(f.s.Dir(), "manifest"), []byte("garbage"), 0o600)
	_, err = f.s.Changes()
	if err == nil || !strings.Contains(err.Error(), "corrupt manifest") {
		t.Errorf("corrupt manifest: %v", err)
	}
	if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
		t.Errorf("bad input changed the project:\n%s", d)
	}
}

func TestGitShapedDirectoriesAreProtected(t *testing.T) {
	f := newFixture(t, map[string]file{"src/a.go": {Data: "a\n"}})
	f.stage(t, map[string]file{
		"vendor/evil/HEAD":               {Data: "ref: refs/heads/main\n"},
		"vendor/evil/objects/.keep":      {Data: ""},
		"vendor/evil/hooks/post-merge":   {Data: "#!/bin/sh\n", Mode: 0o755},
		"mirror.git/hooks/post-checkout": {Data: "#!/bin/sh\n", Mode: 0o755},
		"src/b.go":                       {Data: "b\n"},
	})
	f.run(t)
	for _, c := range f.changes(t).Changes {
		if want := c.Path != "src/b.go"; c.Protected != want {
			t.Errorf("%s: protected = %v, want %v", c.Path, c.Protected, want)
		}
	}
}

// TestManyChangesInOrder checks a change set large enough to be computed by several workers: every
// change is there once, in path order, with the right status and hash, and one unchanged copy-up
// per chunk is left out.
func TestManyChangesInOrder(t *testing.T) {
	project := map[string]file{}
	for i := range 200 {
		project[fmt.Sprintf("d%d/f%03d.txt", i%3, i)] = file{Data: fmt.Sprintf("base %d\n", i)}
	}
	f := newFixture(t, project)
	staged := map[string]file{}
	want := map[string]changeset.Status{}
	for i := range 200 {
		p := fmt.Sprintf("d%d/f%03d.txt", i%3, i)
		switch i % 4 {
		case 0:
			staged[p] = file{Data: fmt.Sprintf("changed %d\n", i)}
			want[p] = changeset.Modified
		case 1:
			staged[p] = file{Data: fmt.Sprintf("base %d\n", i)} // copied up, not changed
		case 2:
			f.whiteout(t, p)
			want[p] = changeset.Deleted
		}
		if i%5 == 0 {
			q := fmt.Sprintf("d%d/new%03d.txt", i%3, i)
			staged[q] = file{Data: fmt.Sprintf("new %d\n", i)}
			want[q] = changeset.Added
		}
	}
	f.stage(t, staged)
	f.run(t)
	cs := f.changes(t)
	if len(cs.Changes) != len(want) {
		t.Errorf("%d changes, want %d", len(cs.Changes), len(want))
	}
	for i, c := range cs.Changes {
		if i > 0 && cs.Changes[i-1].Path >= c.Path {
			t.Fatalf("changes out of order: %s before %s", cs.Changes[i-1].Path, c.Path)
		}
		if want[c.Path] != c.Status {
			t.Errorf("%s: status %q, want %q", c.Path, c.Status, want[c.Path])
		}
		if c.New.Kind == changeset.KindFile {
			sum := sha256.Sum256([]byte(staged[c.Path].Data))
			if c.New.Hash != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: staged hash %s is not the hash of its content", c.Path, c.New.Hash)
			}
		}
	}
}
