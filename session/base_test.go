package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"golang.org/x/sys/unix"
)

// The index is written without reflection: it must be what encoding/json writes, and read back
// exactly, whatever the paths and targets hold.
func TestBaseIndexEncoding(t *testing.T) {
	host := projectfs.FileStat{Type: 'f', Mode: 0o644, Size: 12, Mtime: 1764517000123456789, Ino: 1 << 40}
	x := changeset.BaseIndex{Version: 1, Paths: map[string]changeset.BaseEntry{
		"a.txt":                       {Kind: changeset.BaseObject, Type: 'f', Mode: 0o644, Hash: strings.Repeat("ab", 32), Pack: "pack-123", Off: 7, Len: 12, Bin: true, Holes: 1 << 40, Host: host},
		"empty":                       {Kind: changeset.BaseObject, Type: 'f', Mode: 0o600, Hash: strings.Repeat("e3", 32), Pack: "pack-123", Host: projectfs.FileStat{Type: 'f', Mode: 0o600}},
		"obj":                         {Kind: changeset.BaseObject, Type: 'f', Mode: 0o4755, Hash: strings.Repeat("01", 32), Host: host},
		"link":                        {Kind: changeset.BaseObject, Type: 'l', Mode: 0o777, Target: "../a <&> \"b\"\\c", Host: projectfs.FileStat{Type: 'l', Mode: 0o777, Size: 3}},
		"bad-link":                    {Kind: changeset.BaseObject, Type: 'l', Target: "bad\xffutf8"},
		"gone":                        {Kind: changeset.BaseUnknown},
		"changed":                     {Kind: changeset.BaseUnknown, Host: projectfs.FileStat{Type: 'o', Mode: 0o644, Mtime: -1}},
		"was.txt":                     {Kind: changeset.BaseAbsent},
		"host":                        {Kind: changeset.BaseHost, Type: 'f', Mode: 0o644, Hash: strings.Repeat("cd", 32), Host: host},
		"évian/ü":                     {Kind: changeset.BaseUnknown},
		"tab\there\nnl\x1b[31m\u2028": {Kind: changeset.BaseUnknown},
		"html<&>":                     {Kind: changeset.BaseUnknown},
		"not\xffutf8":                 {Kind: changeset.BaseUnknown},
		"\x00nul-first":               {Kind: changeset.BaseUnknown},
		"a-":                          {Kind: changeset.BaseUnknown}, // sorts before "a.txt" and "a/b" by byte
		"a/b":                         {Kind: changeset.BaseUnknown},
	}}
	// Every field is set in some entry: a field added to changeset.BaseEntry or projectfs.FileStat must join the
	// fixture, where the comparison below tells whether the encoder writes it.
	for _, typ := range []reflect.Type{reflect.TypeFor[changeset.BaseEntry](), reflect.TypeFor[projectfs.FileStat]()} {
		for i := range typ.NumField() {
			set := false
			for _, e := range x.Paths {
				v := reflect.ValueOf(e)
				if typ != v.Type() {
					v = v.FieldByName("Host")
				}
				set = set || !v.Field(i).IsZero()
			}
			if !set {
				t.Errorf("no entry of the fixture sets %s.%s", typ.Name(), typ.Field(i).Name)
			}
		}
	}
	got, err := x.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// What encoding/json writes for the same index, paths and targets coded the same way.
	type plain changeset.BaseIndex
	ref := plain{Version: x.Version, Paths: map[string]changeset.BaseEntry{}}
	for k, e := range x.Paths {
		e.Target = changeset.EncS(e.Target)
		ref.Paths[changeset.EncS(k)] = e
	}
	want, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("index encoding differs from encoding/json:\n got %s\nwant %s", got, want)
	}
	var back changeset.BaseIndex
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(x) {
		t.Errorf("index read back differs:\n got %v\nwant %v", back, x)
	}
}

// projectfs.ReadSized reads a file in one go when its size is as its stat says, and says when it is not.
func TestReadSized(t *testing.T) {
	buf := make([]byte, 64)
	for _, tc := range []struct {
		name    string
		content string
		size    int64 // what the stat said
		data    string
		whole   bool
	}{
		{"as said", "hello\n", 6, "hello\n", true},
		{"empty", "", 0, "", true},
		{"grew since the stat", "hello\nmore\n", 6, "hello\nm", false},
		{"grew from empty", "x", 0, "x", false},
		{"shrank since the stat", "hel", 6, "hel", true},
		{"larger than the buffer", strings.Repeat("x", 100), 100, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(p, unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			data, whole, err := projectfs.ReadSized(fd, tc.size, buf)
			if err != nil || string(data) != tc.data || whole != tc.whole {
				t.Errorf("readSized = %q, %v, %v; want %q, %v", data, whole, err, tc.data, tc.whole)
			}
		})
	}
}

// A pre-image is a copy of the file the manifest recorded, taken whole: a file that is written
// while it is copied, replaced, or turned into a symlink or a FIFO gets an unknown base, and what
// a symlink points to is never read.
func TestPreimageOfAChangingFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET outside the project\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// during changes the host file p while its pre-image is being copied (after the read,
		// before the check); before, between the lookup of the path and its open.
		during, before func(t *testing.T, p string)
	}{
		{name: "appended to while copied", during: func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("host edit\n")
			f.Close()
		}},
		{name: "rewritten in place while copied, same size", during: func(t *testing.T, p string) {
			time.Sleep(5 * time.Millisecond) // a later mtime, however coarse the clock
			if err := os.WriteFile(p, []byte("HOST1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "replaced by another file while copied", during: func(t *testing.T, p string) {
			// The path names another inode now; the copy was of the old one, which is fine, but
			// the check must look at the path, not just the descriptor.
			if err := os.WriteFile(p+".new", []byte("base1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "swapped for a symlink before the open", before: func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "swapped for a FIFO before the open", before: func(t *testing.T, p string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]file{"d/a.txt": {Data: "base1\n"}, "d/b.txt": {Data: "base2\n"}})
			f.stage(t, map[string]file{"d/a.txt": {Data: "agent1\n"}, "d/b.txt": {Data: "agent2\n"}})
			p := filepath.Join(f.project, "d", "a.txt")
			b, err := f.s.source().LoadBases()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			e := b.Get("d/a.txt")
			dir, err := unix.Open(filepath.Join(f.project, "d"), unix.O_DIRECTORY|unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dir)
			var once sync.Once
			changeset.PreimageCopied = func(_ int, name string) {
				if name == "a.txt" && tc.during != nil {
					once.Do(func() { tc.during(t, p) })
				}
			}
			defer func() { changeset.PreimageCopied = nil }()
			if tc.before != nil {
				tc.before(t, p)
			}
			got, err := b.CaptureFile(dir, "a.txt", e)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != changeset.BaseUnknown {
				t.Errorf("pre-image of a file %s: %+v, want an unknown base", tc.name, got)
			}
			if b.Pack != nil {
				b.Pack.Flush()
				data, _ := os.ReadFile(b.Pack.File.Name())
				if bytes.Contains(data, []byte("SECRET")) {
					t.Errorf("the pack holds what a symlink pointed to: %q", data)
				}
				b.Pack.Abandon()
			}
			// The same through the end of a run, which takes every pre-image.
			if tc.during != nil {
				writeTree(t, f.project, map[string]file{"d/a.txt": {Data: "base1\n"}})
				f.s.Discard()
				s, err := f.lock.Create()
				if err != nil {
					t.Fatal(err)
				}
				f.s = s
				f.stage(t, map[string]file{"d/a.txt": {Data: "agent1\n"}, "d/b.txt": {Data: "agent2\n"}})
				once = sync.Once{}
				f.run(t)
				if r := runsOf(t, f.s)[0]; r.Captured != 1 || r.Unknown != 1 {
					t.Errorf("run took %d pre-images and %d unknown bases, want 1 and 1", r.Captured, r.Unknown)
				}
				cs := f.changes(t)
				if c, _ := cs.Find("d/a.txt"); c == nil || !c.BaseUnknown || !c.Conflict {
					t.Errorf("d/a.txt: %+v, want a conflict with an unknown base", c)
				}
				c, _ := cs.Find("d/b.txt")
				if old, _, err := f.s.Contents(c, 0); err != nil || string(old) != "base2\n" {
					t.Errorf("base of d/b.txt = %q, %v", old, err)
				}
			}
		})
	}
}

// EndRunChanges gives the change set Changes gives right after EndRun, and records the run the
// same way, whatever the upper layer holds: many directories, one larger than a scan's part, a
// .gitignore the agent changed (its pre-image read while the pack is being made durable),
// deletions, renames, symlinks, special files and host edits.
func TestEndRunChangesIsEndRunThenChanges(t *testing.T) {
	build := func(t *testing.T) *fixture {
		project := map[string]file{
			".gitignore": {Data: "*.log\n"}, "keep.txt": {Data: "same\n"}, "gone.txt": {Data: "bye\n"},
			"old/name.txt": {Data: "moved content\n"}, "link": {Link: "keep.txt"}, "host.txt": {Data: "h\n"},
			"wiped/x/y.txt": {Data: "y\n"}, "bin.dat": {Data: "a\x00b"},
		}
		staged := map[string]file{
			".gitignore": {Data: "*.tmp\n"}, "new/name.txt": {Data: "moved content\n"}, "link": {Link: "host.txt"},
			"x.log": {Data: "ignored by the base's rules\n"}, "x.tmp": {Data: "not ignored\n"},
			"host.txt": {Data: "agent\n"}, "bin.dat": {Data: "a\x00c"}, "keep.txt": {Data: "same\n"},
		}
		for i := range 3 * changeset.ScanChunk {
			p := fmt.Sprintf("big/f%04d.txt", i)
			project[p] = file{Data: fmt.Sprintf("base %d\n", i)}
			staged[p] = file{Data: fmt.Sprintf("changed %d\n", i), Mode: os.FileMode(0o644 | i%2*0o111)}
		}
		for i := range 40 {
			p := fmt.Sprintf("d%02d/sub/f.txt", i)
			project[p] = file{Data: "base\n"}
			staged[p] = file{Data: fmt.Sprintf("changed %d\n", i)}
		}
		f := newFixture(t, project)
		f.stage(t, staged)
		f.whiteout(t, "gone.txt")
		f.whiteout(t, "old/name.txt")
		f.whiteout(t, "wiped")
		if err := syscall.Mkfifo(filepath.Join(f.s.UpperDir(), "pipe"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The host edits a file the agent changed before its pre-image is taken.
		time.Sleep(5 * time.Millisecond)
		writeTree(t, f.project, map[string]file{"host.txt": {Data: "host edit\n"}})
		if err := f.s.BeginRun([]string{"agent"}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	encode := func(t *testing.T, cs *changeset.ChangeSet) string {
		data, err := json.MarshalIndent(cs, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	a := build(t)
	if err := a.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	want := a.changes(t)

	b := build(t)
	got, err := b.s.EndRunChanges(0)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := encode(t, got), encode(t, want); g != w {
		t.Errorf("EndRunChanges:\n%s\nEndRun then Changes:\n%s", strings.Join(statuses(got), "\n"), strings.Join(statuses(want), "\n"))
	}
	if again := b.changes(t); encode(t, again) != encode(t, got) {
		t.Errorf("Changes after EndRunChanges differs from what it returned:\n%s", strings.Join(statuses(again), "\n"))
	}
	ra, rb := runsOf(t, a.s), runsOf(t, b.s)
	if len(rb) != 1 || b.s.Meta.Active != nil || rb[0].End.IsZero() || rb[0].Captured != ra[0].Captured || rb[0].Unknown != ra[0].Unknown {
		t.Errorf("run recorded as %+v, want as EndRun records it: %+v", rb, ra)
	}
	if ra[0].Unknown != 1 {
		t.Errorf("%d unknown bases, want 1 (host.txt)", ra[0].Unknown)
	}
	for p, ignored := range map[string]bool{"x.log": true, "x.tmp": false} {
		if c, ok := got.Find(p); !ok || c.Ignored != ignored {
			t.Errorf("%s: ignored = %v, want %v (rules of the base's .gitignore)", p, c != nil && c.Ignored, ignored)
		}
	}

	// No run to end: the error says the run could not be recorded, and no change set comes.
	if cs, err := b.s.EndRunChanges(0); cs != nil || err == nil || !strings.HasPrefix(err.Error(), "record the run: ") {
		t.Errorf("ending a run twice: %v, %v", cs, err)
	}

	// A run that staged nothing: an empty change set, the run recorded.
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	if err := f.s.BeginRun([]string{"true"}); err != nil {
		t.Fatal(err)
	}
	cs, err := f.s.EndRunChanges(0)
	if runs := runsOf(t, f.s); err != nil || len(cs.Changes) != 0 || len(runs) != 1 {
		t.Errorf("empty run: %v, %v, runs %+v", cs, err, runs)
	}
}

// The change set of EndRunChanges is computed while the run's pack is made durable: what the
// pack holds can be read already (a .gitignore's pre-image, say).
func TestPreimagesReadableBeforeDurable(t *testing.T) {
	f := newFixture(t, map[string]file{".gitignore": {Data: "*.log\n"}})
	f.stage(t, map[string]file{".gitignore": {Data: "*.tmp\n"}})
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	v, err := f.s.takePreimages(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	e := v.b.Get(".gitignore")
	if e.Kind != changeset.BaseObject || e.Pack == "" {
		t.Fatalf("base of .gitignore: %+v, want a packed pre-image", e)
	}
	rc, err := v.b.Open(v.host, ".gitignore", e)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(data) != "*.log\n" {
		t.Errorf("pre-image read before the pack is durable: %q, %v", data, err)
	}
	if err := v.saveCaptured(); err != nil {
		t.Fatal(err)
	}
}
