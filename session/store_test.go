package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/store"
)

func TestOneOpenSessionPerProject(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	for _, d := range []string{"upper", "work", "base", "journal", "cache", "runtime"} {
		if fi, err := os.Stat(filepath.Join(f.s.Dir(), d)); err != nil || !fi.IsDir() {
			t.Errorf("session lacks %s/: %v", d, err)
		}
	}
	for _, p := range []string{"session.json", "decisions.json", "net.log", "manifest"} {
		if _, err := os.Stat(filepath.Join(f.s.Dir(), p)); err != nil {
			t.Errorf("session lacks %s: %v", p, err)
		}
	}
	_, err := f.lock.Create()
	if err == nil || !strings.Contains(err.Error(), "shadow apply") || !strings.Contains(err.Error(), "shadow discard") {
		t.Fatalf("second Create while one is open: %v", err)
	}
	cur, err := f.lock.Current()
	if err != nil || cur.ID() != f.s.ID() {
		t.Fatalf("Current = %v, %v; want %s", cur, err, f.s.ID())
	}
	if s, created, err := f.lock.CurrentOrCreate(); err != nil || created || s.ID() != f.s.ID() {
		t.Fatalf("CurrentOrCreate continued %v created=%v err=%v", s, created, err)
	}
	if err := cur.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Current(f.project); !errors.Is(err, store.ErrNoSession) {
		t.Fatalf("Current after discard: %v", err)
	}
	s2, err := f.lock.Create()
	if err != nil {
		t.Fatalf("Create after discard: %v", err)
	}
	if s2.ID() == f.s.ID() {
		t.Fatal("new session reused the id")
	}
}

func TestListSessions(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}, "new.txt": {Data: "n\n"}})
	f.run(t)
	os.WriteFile(f.s.NetLog(), []byte("GET https://example.com/ 200\nCONNECT api.example.com:443 200\n"), 0o600)
	list, err := f.store.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("List = %+v", list)
	}
	got := list[0]
	if got.ID != f.s.ID() || got.Project != f.project || got.Runs != 1 || got.FilesStaged != 2 || got.Network != 2 || got.State != store.StateOpen {
		t.Errorf("List row = %+v", got)
	}
	if _, err := json.Marshal(list); err != nil {
		t.Fatal(err)
	}
}

func TestBadSessionInput(t *testing.T) {
	f := newFixture(t, map[string]file{"a": {Data: "x"}})
	for _, id := range []string{"nope", "../../etc", "", "a/b", "20990101-000000-abcdef"} {
		_, err := f.store.Get(id)
		if err == nil || !strings.Contains(err.Error(), "unknown session id") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Get(%q) = %v", id, err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.s.Dir(), "session.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := f.store.Get(f.s.ID())
	if err == nil || !strings.Contains(err.Error(), "corrupt session.json") || strings.Contains(err.Error(), "\n") {
		t.Errorf("corrupt session.json: %v", err)
	}
	list, err := f.store.List()
	if err != nil || len(list) != 1 || !strings.Contains(list[0].Error, "corrupt") {
		t.Errorf("List with a corrupt session: %+v, %v", list, err)
	}
	// A corrupt session is not silently replaced: the file is left as it is for inspection.
	if data, _ := os.ReadFile(filepath.Join(f.s.Dir(), "session.json")); string(data) != "{not json" {
		t.Errorf("corrupt session.json was rewritten")
	}
}

func TestWriterLock(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.store.LockProject(f.project, store.LockOptions{Command: "apply"})
	if err == nil || !strings.Contains(err.Error(), "busy") || !strings.Contains(err.Error(), "test (pid") {
		t.Fatalf("second writer: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		lk, err := f.store.LockProject(f.project, store.LockOptions{Wait: true})
		if err == nil {
			lk.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a waiting writer got the lock while it was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	f.lock.Release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting writer never got the lock")
	}
}

func TestReadersWorkDuringRun(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	if err := f.s.BeginRun([]string{"agent", "--go"}); err != nil {
		t.Fatal(err)
	}
	f.stage(t, map[string]file{"a.txt": {Data: "changed\n"}})
	// A second terminal: read-only access, no writer lock.
	r, err := f.store.Current(f.project)
	if err != nil {
		t.Fatal(err)
	}
	if !r.RunActive() {
		t.Error("the run is not seen as active")
	}
	done := make(chan *changeset.ChangeSet, 1)
	go func() {
		cs, err := r.Changes()
		if err != nil {
			t.Error(err)
		}
		done <- cs
	}()
	select {
	case cs := <-done:
		if len(cs.Changes) != 1 || cs.Changes[0].Path != "a.txt" {
			t.Errorf("changes during the run: %v", statuses(cs))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a reader blocked on the running session")
	}
	if _, err := r.Apply(apply.ApplyOptions{All: true}); err == nil {
		t.Error("apply through a read-only session succeeded")
	}
	if _, err := f.s.Apply(apply.ApplyOptions{All: true}); err == nil || !strings.Contains(err.Error(), "run is active") {
		t.Errorf("apply during a run: %v", err)
	}
	if err := f.s.EndRun(3); err != nil {
		t.Fatal(err)
	}
	if runs := runsOf(t, f.s); len(runs) != 1 || runs[0].ExitCode != 3 || runs[0].Argv[1] != "--go" || f.s.Meta.Active != nil {
		t.Errorf("runs = %+v", runs)
	}
}

func TestStaleRunIsNotActive(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	// The process that started the run died: a pid whose start time does not match.
	f.s.Meta.Active.PIDStart++
	if err := f.s.saveMeta(); err != nil {
		t.Fatal(err)
	}
	if f.s.RunActive() {
		t.Fatal("a run of a dead process counts as active")
	}
	f.stage(t, map[string]file{"a.txt": {Data: "b\n"}})
	if _, err := f.s.Apply(apply.ApplyOptions{All: true}); err != nil {
		t.Fatalf("apply after a crashed run: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.project, "a.txt")); string(data) != "b\n" {
		t.Errorf("project a.txt = %q", data)
	}
	if runs := runsOf(t, f.s); len(runs) != 1 || runs[0].ExitCode != -1 {
		t.Errorf("stale run not closed: %+v", runs)
	}
}

// A run whose process died after it recorded the run's end, but before it cleared the run as
// active (or whose clearing a crash lost, runs later), is recorded once.
func TestRunRecordedBeforeACrashIsNotRecordedTwice(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	if err := f.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	active := *f.s.Meta.Active
	if err := f.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	// The crash: session.json came back saying the first run is active, from a process that is
	// gone.
	active.PIDStart++
	f.s.Meta.Active = &active
	if err := f.s.saveMeta(); err != nil {
		t.Fatal(err)
	}
	if infos, err := f.store.List(); err != nil || infos[0].Runs != 2 {
		t.Fatalf("sessions: %+v, %v", infos, err)
	}
	if err := f.s.BeginRun([]string{"agent", "again"}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.EndRun(2); err != nil {
		t.Fatal(err)
	}
	runs := runsOf(t, f.s)
	if len(runs) != 3 || runs[0].ExitCode != 0 || runs[2].ExitCode != 2 {
		t.Fatalf("runs = %+v", runs)
	}
}

// Runs recorded in session.json, before runs.jsonl, stay the first runs and are kept as they are.
func TestLegacyRunsAreKept(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	path := filepath.Join(f.s.Dir(), "session.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["runs"] = []map[string]any{{"argv": []string{"old"}, "start": "2026-01-02T03:04:05Z", "end": "2026-01-02T03:04:06Z", "exit_code": 4}}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f.run(t) // reloads session.json, and writes it back
	f.run(t)
	runs := runsOf(t, f.s)
	if len(runs) != 3 || runs[0].Argv[0] != "old" || runs[0].ExitCode != 4 || runs[1].Argv[0] != "agent" {
		t.Fatalf("runs = %+v", runs)
	}
	if infos, err := f.store.List(); err != nil || infos[0].Runs != 3 {
		t.Fatalf("sessions: %+v, %v", infos, err)
	}
}

// A line that a crash cut short is not a run, and spoils neither the runs before it nor the next.
func TestPartialRunLineIsSkippedAndEnded(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	f.run(t)
	path := filepath.Join(f.s.Dir(), runsFile)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(`{"argv":["cut`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if runs := runsOf(t, f.s); len(runs) != 1 {
		t.Fatalf("with a partial last line: runs = %+v", runs)
	}
	f.run(t)
	if runs := runsOf(t, f.s); len(runs) != 2 {
		t.Fatalf("after a run that followed a partial line: runs = %+v", runs)
	}
	infos, err := f.store.List()
	if err != nil || len(infos) != 1 || infos[0].Runs != 2 || infos[0].Error != "" {
		t.Fatalf("sessions: %+v, %v", infos, err)
	}
	// A last line whose line feed alone was lost is still a run.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.TrimSuffix(data, []byte("\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if runs := runsOf(t, f.s); len(runs) != 2 {
		t.Fatalf("without the last line feed: runs = %+v", runs)
	}
}

// A project's sessions are found through its index, so another project's unreadable session
// does not hold it up; a store without the index (from before it) is scanned, and there an
// unreadable session blocks a new one, as it may be the project's, until the index can be made.
func TestProjectSessionIndex(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	index := f.store.ProjectFile(f.project, "sessions")
	other := t.TempDir()
	lk, err := f.store.LockProject(other, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	lk.Release()
	if data, err := os.ReadFile(index); err != nil || string(data) != f.s.ID()+"\n" {
		t.Fatalf("the index of the project holds %q (%v), want its one session", data, err)
	}
	if err := f.s.Discard(); err != nil {
		t.Fatal(err)
	}
	// The other project's session becomes unreadable.
	if err := os.WriteFile(filepath.Join(o.Dir(), "session.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, created, err := f.lock.CurrentOrCreate()
	if err != nil || !created {
		t.Fatalf("with the index, a new session: %v, %v", created, err)
	}
	if data, _ := os.ReadFile(index); string(data) != f.s.ID()+"\n"+s.ID()+"\n" {
		t.Fatalf("the index holds %q after a new session", data)
	}
	if latest, err := f.store.Latest(f.project); err != nil || latest.ID() != s.ID() {
		t.Fatalf("latest: %v, %v", latest, err)
	}

	// A store from before the index.
	if err := s.Discard(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	f.lock.Release()
	lk, err = f.store.LockProject(f.project, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	if _, err := os.Lstat(index); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an index was made while a session was unreadable: %v", err)
	}
	if _, _, err := lk.CurrentOrCreate(); err == nil || !strings.Contains(err.Error(), o.ID()) {
		t.Fatalf("without the index, a new session over an unreadable one: %v", err)
	}
	// Once every session reads, the next writer indexes the project's sessions, from the scan.
	if err := os.Remove(filepath.Join(o.Dir(), "session.json")); err != nil {
		t.Fatal(err)
	}
	lk.Release()
	lk, err = f.store.LockProject(f.project, store.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	if data, _ := os.ReadFile(index); string(data) != f.s.ID()+"\n"+s.ID()+"\n" {
		t.Fatalf("the index made from a scan holds %q", data)
	}
	// A write of the index cut short (a full disk) is ended before the next session's ID.
	w, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("2026113"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	n, created, err := lk.CurrentOrCreate()
	if err != nil || !created {
		t.Fatalf("a new session after a cut index line: %v, %v", created, err)
	}
	if cur, err := f.store.Current(f.project); err != nil || cur.ID() != n.ID() {
		t.Fatalf("the new session after a cut index line is not found: %v, %v", cur, err)
	}
}

// A corrupt session index never hides an open session, nor lets a second one start: readers find
// it by a scan, the next writer continues it and rebuilds the index.
func TestCorruptIndexKeepsOneOpenSession(t *testing.T) {
	for _, c := range []struct {
		name    string
		garbage []byte
	}{
		{"binary", []byte("\x00\xff\x1b[31mgarbage\x7f\n\x01")},
		{"words", []byte("hello\nworld\n")},
		{"emptied", nil},
		{"other ID", []byte("20200101-000000-abcdef\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
			id := f.s.ID()
			f.lock.Release()
			index := f.store.ProjectFile(f.project, "sessions")
			if err := os.WriteFile(index, c.garbage, 0o600); err != nil {
				t.Fatal(err)
			}
			if cur, err := f.store.Current(f.project); err != nil || cur.ID() != id {
				t.Fatalf("a reader with a corrupt index: %v, %v; want session %s", cur, err, id)
			}
			lk, err := f.store.LockProject(f.project, store.LockOptions{Command: "test"})
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Release()
			s, created, err := lk.CurrentOrCreate()
			if err != nil || created || s.ID() != id {
				t.Fatalf("a run with a corrupt index: created %v, %v; want to continue session %s", created, err, id)
			}
			if _, err := lk.Create(); err == nil || !strings.Contains(err.Error(), id) {
				t.Fatalf("--new with a corrupt index: %v; want a refusal naming %s", err, id)
			}
			if data, _ := os.ReadFile(index); string(data) != id+"\n" {
				t.Errorf("the index was not rebuilt: %q", data)
			}
		})
	}
}
