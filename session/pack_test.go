package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// packsOf lists the pack files in the session's base/.
func packsOf(t *testing.T, s *Session) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(s.baseDir(), "pack-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A run's pre-images go into one pack file, and every one of them reads back as it was.
func TestPreimagesPackedPerRun(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a1\n"}, "d/b.txt": {Data: "b1\n"}, "d/e.bin": {Data: "\x00bin\n"}, "empty": {}})
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}, "d/b.txt": {Data: "b2\n"}, "d/e.bin": {Data: "text now\n"}, "empty": {Data: "now\n"}})
	f.run(t)
	if got := runsOf(t, f.s)[0].Captured; got != 4 {
		t.Errorf("captured %d pre-images, want 4", got)
	}
	if packs := packsOf(t, f.s); len(packs) != 1 {
		t.Fatalf("pack files after one run = %v, want one", packs)
	}
	// The host moves on: what is read must be the packed pre-image, not the host file.
	writeTree(t, f.project, map[string]file{"a.txt": {Data: "host\n"}, "d/b.txt": {Data: "host\n"}})
	cs := f.changes(t)
	for p, want := range map[string]string{"a.txt": "a1\n", "d/b.txt": "b1\n", "d/e.bin": "\x00bin\n", "empty": ""} {
		c, ok := cs.Find(p)
		if !ok {
			t.Fatalf("%s: not in the change set", p)
		}
		old, _, err := f.s.Contents(c, 0)
		if err != nil || string(old) != want {
			t.Errorf("base of %s = %q, %v; want %q", p, old, err, want)
		}
	}
	if c, _ := cs.Find("d/e.bin"); !c.Binary {
		t.Errorf("d/e.bin: binary pre-image not detected: %+v", c)
	}

	// A run whose only change is a file the host created after the session started has no
	// pre-image to take.
	f.stage(t, map[string]file{"c.txt": {Data: "new\n"}})
	writeTree(t, f.project, map[string]file{"c.txt": {Data: "c-host\n"}})
	f.run(t)
	if packs := packsOf(t, f.s); len(packs) != 1 {
		t.Errorf("a run that captured nothing wrote a pack: %v", packs)
	}
	// A new session over the project as it is now: two capturing runs, two packs.
	writeTree(t, f.project, map[string]file{"z.txt": {Data: "z1\n"}})
	f.s.Discard()
	s, err := f.lock.Create()
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	f.stage(t, map[string]file{"z.txt": {Data: "z2\n"}})
	f.run(t)
	f.stage(t, map[string]file{"a.txt": {Data: "a3\n"}})
	f.run(t)
	if packs := packsOf(t, f.s); len(packs) != 2 {
		t.Errorf("two capturing runs: packs = %v, want two", packs)
	}
	// The second pack holds a.txt only; z.txt's base is still read from the first.
	cs = f.changes(t)
	for p, want := range map[string]string{"z.txt": "z1\n", "a.txt": "host\n"} {
		c, _ := cs.Find(p)
		if old, _, err := f.s.Contents(c, 0); err != nil || string(old) != want {
			t.Errorf("base of %s = %q, %v; want %q", p, old, err, want)
		}
	}
}

// A run that staged nothing writes nothing into base/.
func TestEmptyRunCapturesNothing(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	f.run(t)
	ents, err := os.ReadDir(f.s.baseDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("base/ after an empty run holds %v", ents)
	}
	if runs := runsOf(t, f.s); len(runs) != 1 || runs[0].End.IsZero() || f.s.Meta.Active != nil {
		t.Errorf("run not recorded: %+v", f.s.Meta)
	}
}

// A damaged pack is an error of one line naming the pack, never a silent conflict or a wrong base.
func TestCorruptPackReported(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, pack string)
		want   string
	}{
		{"flipped byte", func(t *testing.T, pack string) {
			data, err := os.ReadFile(pack)
			if err != nil {
				t.Fatal(err)
			}
			data[0] ^= 0xff
			if err := os.WriteFile(pack, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "does not match its hash"},
		{"truncated", func(t *testing.T, pack string) {
			if err := os.Truncate(pack, 2); err != nil {
				t.Fatal(err)
			}
		}, "truncated"},
		{"removed", func(t *testing.T, pack string) {
			if err := os.Remove(pack); err != nil {
				t.Fatal(err)
			}
		}, "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]file{"a.txt": {Data: "first\n"}, "b.txt": {Data: "second\n"}})
			f.stage(t, map[string]file{"a.txt": {Data: "changed\n"}, "b.txt": {Data: "changed too\n"}})
			f.run(t)
			packs := packsOf(t, f.s)
			if len(packs) != 1 {
				t.Fatalf("packs = %v", packs)
			}
			tc.damage(t, packs[0])
			// A pack that is missing or too short fails the change set; damaged content fails
			// as soon as it is read.
			cs, err := f.s.Changes()
			for i := 0; err == nil && i < len(cs.Changes); i++ {
				_, _, err = f.s.Contents(&cs.Changes[i], 0)
			}
			if err == nil {
				t.Fatal("a damaged pack went unnoticed")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, filepath.Base(packs[0])) || !strings.Contains(msg, tc.want) {
				t.Errorf("error = %q; want one line naming %s and saying %q", msg, filepath.Base(packs[0]), tc.want)
			}
		})
	}
}
