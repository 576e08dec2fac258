package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"golang.org/x/sys/unix"
)

// waitPrecaptured waits until the precapture has looked at every path of want.
func waitPrecaptured(t *testing.T, took <-chan string, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case p := <-took:
			want = slices.DeleteFunc(want, func(w string) bool { return w == p })
		case <-deadline:
			t.Fatalf("the precapture never looked at %v", want)
		}
	}
}

// startPrecapture begins a run over the fixture's session with a precapture, and returns the
// paths the precapture looks at as it does.
func startPrecapture(t *testing.T, f *fixture) <-chan string {
	t.Helper()
	took := make(chan string, 64)
	precaptureLooked = func(p string) {
		select {
		case took <- p:
		default: // nobody waits for more: a precapture never blocks on a test
		}
	}
	t.Cleanup(func() {
		// Stopped first, should the test end before the run does.
		f.s.stopPrecapture().abandon()
		precaptureLooked = nil
	})
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	f.s.Precapture()
	return took
}

// Pre-images a precapture took while the run went are the run's: a host edit made after one was
// taken leaves its base known (the change is a conflict against it), where the run's end alone
// would have found the base unknown; what was staged later is taken at the end; the pack it
// wrote is the run's one pack.
func TestPrecaptureKeepsItsPreimages(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "d/b.txt": {Data: "b\n"}, "c.txt": {Data: "c\n"}})
	took := startPrecapture(t, f)
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}, "d/b.txt": {Data: "b2\n"}, "new.txt": {Data: "n\n"}})
	waitPrecaptured(t, took, "a.txt", "d/b.txt", "new.txt")
	if err := os.WriteFile(filepath.Join(f.project, "a.txt"), []byte("host edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.stage(t, map[string]file{"c.txt": {Data: "c2\n"}})
	cs, err := f.s.EndRunChanges(0)
	if err != nil {
		t.Fatal(err)
	}
	if runs := runsOf(t, f.s); runs[len(runs)-1].Captured != 3 || runs[len(runs)-1].Unknown != 0 {
		t.Errorf("run recorded %+v, want 3 pre-images and none unknown", runs[len(runs)-1])
	}
	got := map[string]*changeset.Change{}
	for i := range cs.Changes {
		got[cs.Changes[i].Path] = &cs.Changes[i]
	}
	if a := got["a.txt"]; a == nil || a.BaseUnknown || !strings.Contains(a.Reason, "since its pre-image was taken") {
		t.Errorf("a.txt: %+v, want a known base and a conflict with the host's edit", a)
	}
	if b := got["d/b.txt"]; b == nil || b.Reason != "" || b.Status != changeset.Modified {
		t.Errorf("d/b.txt: %+v, want a plain modification", b)
	}
	// The bases as base/ holds them now.
	b, err := f.s.source().LoadBases()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for p, want := range map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "c.txt": "c\n"} {
		e := b.Get(p)
		rc, err := b.Open(nil, p, e)
		if err != nil {
			t.Fatalf("base of %s (%+v): %v", p, e, err)
		}
		data := make([]byte, 64)
		n, _ := rc.Read(data)
		rc.Close()
		if string(data[:n]) != want {
			t.Errorf("base of %s: %q, want %q", p, data[:n], want)
		}
	}
	if packs := packsOf(t, f.s); len(packs) != 1 {
		t.Errorf("base/ holds the packs %v, want the run's one", packs)
	}
}

// A precapture whose pre-images the run's end does not keep (what it saw was unstaged again)
// leaves no pack behind, whether nothing else is staged or only an added file.
func TestPrecaptureUnusedLeavesNoPack(t *testing.T) {
	for _, added := range []bool{false, true} {
		f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
		took := startPrecapture(t, f)
		f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}})
		waitPrecaptured(t, took, "a.txt")
		if err := os.Remove(filepath.Join(f.s.UpperDir(), "a.txt")); err != nil {
			t.Fatal(err)
		}
		if added {
			f.stage(t, map[string]file{"new.txt": {Data: "n\n"}})
		}
		if err := f.s.EndRun(0); err != nil {
			t.Fatal(err)
		}
		if packs := packsOf(t, f.s); len(packs) != 0 {
			t.Errorf("added file staged: %v: base/ holds the packs %v, want none", added, packs)
		}
	}
}

// The pre-image of a deleted file is kept from the precapture too: a host edit after it leaves
// the deletion's base known.
func TestPrecaptureKeepsDeletedFilesPreimage(t *testing.T) {
	f := newFixture(t, map[string]file{"gone.txt": {Data: "g\n"}})
	took := startPrecapture(t, f)
	f.whiteout(t, "gone.txt")
	waitPrecaptured(t, took, "gone.txt")
	if err := os.WriteFile(filepath.Join(f.project, "gone.txt"), []byte("host edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := f.s.EndRunChanges(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Changes) != 1 || cs.Changes[0].Status != changeset.Deleted || cs.Changes[0].BaseUnknown {
		t.Errorf("changes = %+v, want the deletion of gone.txt with a known base", cs.Changes)
	}
}

// The pack of a precapture whose process died during the run is removed when the run is closed
// as interrupted; the pre-images are taken again then.
func TestPrecapturePackOfACrashIsDropped(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n"}})
	took := startPrecapture(t, f)
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}})
	waitPrecaptured(t, took, "a.txt")
	// The process dies: its precapture's pack is flushed as far as it got, and left behind.
	pre := f.s.stopPrecapture()
	if pre == nil {
		t.Fatal("the precapture took nothing")
	}
	if err := pre.pack.Seal(); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(f.s.baseDir(), pre.pack.Name)
	f.s.Meta.Active.PIDStart++
	if err := f.s.saveMeta(); err != nil {
		t.Fatal(err)
	}
	f.stage(t, map[string]file{"b.txt": {Data: "b2\n"}})
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the dead precapture's pack %s is still there (%v)", orphan, err)
	}
	runs := runsOf(t, f.s)
	if len(runs) != 1 || runs[0].ExitCode != -1 || runs[0].Captured != 2 {
		t.Errorf("runs = %+v, want the interrupted run with its 2 pre-images", runs)
	}
	if packs := packsOf(t, f.s); len(packs) != 1 {
		t.Errorf("base/ holds the packs %v, want the interrupted run's one", packs)
	}
	if err := f.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	cs := f.changes(t)
	if len(cs.Changes) != 2 || cs.Changes[0].Reason != "" || cs.Changes[1].Reason != "" {
		t.Errorf("changes = %+v", statuses(cs))
	}
}

// Closing an interrupted run keeps the packs of earlier runs, even one that the index no longer
// names: an apply's journal still refers to it, and its rollback restores that base.
func TestInterruptedRunKeepsOlderPacks(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n"}, "c.txt": {Data: "c\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}})
	f.run(t)
	first := packsOf(t, f.s)
	if len(first) != 1 {
		t.Fatalf("packs after the first run: %v", first)
	}
	f.stage(t, map[string]file{"b.txt": {Data: "b2\n"}})
	f.run(t)
	if _, err := f.s.Apply(apply.ApplyOptions{Paths: []string{"a.txt"}}); err != nil {
		t.Fatal(err)
	}
	// The run that follows dies.
	f.stage(t, map[string]file{"c.txt": {Data: "c2\n"}})
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	f.s.Meta.Active.PIDStart++
	if err := f.s.saveMeta(); err != nil {
		t.Fatal(err)
	}
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first[0]); err != nil {
		t.Fatalf("the first run's pack is gone: %v", err)
	}
	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.project, "a.txt")); string(data) != "a\n" {
		t.Errorf("a.txt after the rollback = %q", data)
	}
	for _, c := range f.changes(t).Changes {
		if c.Path == "a.txt" && (c.Status != changeset.Modified || c.Reason != "" || c.BaseUnknown) {
			t.Errorf("a.txt after the rollback: %+v", c)
		}
	}
}

// A precapture never follows a symlink the jail put where it had seen a directory, even when the
// directory above is not read again (the swap fell in the same tick of the change-time clock).
func TestPrecaptureDoesNotFollowSymlinks(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	outside := t.TempDir()
	writeTree(t, outside, map[string]file{"secret.txt": {Data: "s\n"}})
	upper := f.s.UpperDir()
	if err := os.Mkdir(filepath.Join(upper, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := f.s.source().LoadBases()
	if err != nil {
		t.Fatal(err)
	}
	host, err := projectfs.OpenRoot(f.project)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	p := &precapture{stop: make(chan struct{}), upper: upper, b: b, got: map[string]changeset.BaseEntry{},
		seen: map[string]bool{}, dirs: map[string]*upperDir{}}
	look := func() {
		t.Helper()
		fd, err := os.Open(upper)
		if err != nil {
			t.Fatal(err)
		}
		fd2, err := unix.Dup(int(fd.Fd()))
		fd.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.walk(host, fd2, ""); err != nil {
			t.Fatal(err)
		}
	}
	look()
	if !slices.Equal(p.dirs[""].subdirs, []string{"sub"}) {
		t.Fatalf("the first look found %+v", p.dirs[""])
	}
	if err := os.Remove(filepath.Join(upper, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(upper, "sub")); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(upper, &st); err != nil {
		t.Fatal(err)
	}
	p.dirs[""].ctime = st.Ctim.Nano() // as if the swap had not moved it
	look()
	if p.seen["sub/secret.txt"] {
		t.Error("the precapture followed a symlink of the upper layer")
	}
}

// While a run goes, its precapture counts the paths the run's own layer holds beyond the staging
// layer, for any process to read (RunStaged): a path staged before is not counted again, one in
// a new directory is; the count goes when the run ends.
func TestPrecaptureCountsTheRunsWrites(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "staged before\n"}})
	took := startPrecapture(t, f)
	if n := f.s.RunStaged(); n != 0 {
		t.Fatalf("before the run wrote: RunStaged %d", n)
	}
	layer := t.TempDir()
	writeTree(t, layer, map[string]file{"a.txt": {Data: "again\n"}, "new.txt": {Data: "n\n"}, "d/deep.txt": {Data: "d\n"}})
	dir, err := os.Open(layer)
	if err != nil {
		t.Fatal(err)
	}
	f.s.PrecaptureLayer(dir)
	dir.Close()
	waitPrecaptured(t, took, "new.txt", "d/deep.txt")
	for deadline := time.Now().Add(time.Minute); f.s.RunStaged() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("RunStaged %d, want new.txt and d/deep.txt", f.s.RunStaged())
		}
	}
	writeTree(t, layer, map[string]file{"d/more.txt": {Data: "m\n"}})
	for deadline := time.Now().Add(time.Minute); f.s.RunStaged() != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("RunStaged %d after one more write, want 3", f.s.RunStaged())
		}
	}
	f.s.stopPrecapture().abandon()
	if n := f.s.RunStaged(); n != 0 {
		t.Errorf("after the precapture stopped: RunStaged %d, want 0", n)
	}
}

// A run that stages nothing costs its precapture no read of the manifest, which lists every file
// of the project: the bases are loaded at the first staged path. The manifest is made a FIFO, so
// that a read of it shows (a writer opens it without blocking only while it has a reader).
func TestPrecaptureReadsTheManifestOnlyForAStagedPath(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	f.s.man = nil // as a later command has it: the process that made the session keeps its manifest
	read := manifestFIFO(t, f.s)
	took := startPrecapture(t, f)
	// Looks at the upper layer go on meanwhile: the first comes after precaptureEvery, the
	// pause then doubles to precaptureIdle.
	for end := time.Now().Add(2 * precaptureIdle); time.Now().Before(end); time.Sleep(precaptureEvery / 2) {
		if read() {
			t.Fatal("the precapture read the manifest, with nothing staged")
		}
	}
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}})
	for end := time.Now().Add(time.Minute); !read(); time.Sleep(precaptureEvery / 2) {
		if time.Now().After(end) {
			t.Fatal("the precapture never read the manifest for the staged a.txt")
		}
	}
	waitPrecaptured(t, took, "a.txt")
}

// The process that made a session does not read its manifest back for the session's first run:
// the precapture and the run's end use the manifest it recorded.
func TestNewSessionsRunReadsNoManifest(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	read := manifestFIFO(t, f.s)
	// Whoever reads the manifest is given it, so that nothing waits on the FIFO; the reads are
	// counted.
	stop, reads := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				reads <- n
				return
			case <-time.After(precaptureEvery / 2):
				if read() {
					n++
				}
			}
		}
	}()
	took := startPrecapture(t, f)
	f.stage(t, map[string]file{"a.txt": {Data: "a2\n"}})
	waitPrecaptured(t, took, "a.txt")
	_, err := f.s.EndRunChanges(0)
	close(stop)
	if n := <-reads; n > 0 {
		t.Errorf("the session's first run read back the manifest its process recorded (%d reads)", n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// manifestFIFO makes the manifest of s a FIFO of the same content, so that a read of it shows: the
// function returned reports whether it has a reader (a writer opens a FIFO without blocking only
// while it has one), and gives that reader the manifest.
func manifestFIFO(t *testing.T, s *Session) (read func() bool) {
	t.Helper()
	man := filepath.Join(s.dir, "manifest")
	data, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(man); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(man, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() bool {
		fd, err := unix.Open(man, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, data); err != nil {
			t.Errorf("give the manifest to its reader: %v", err)
		}
		return true
	}
}
