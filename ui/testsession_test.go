package ui

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// testSession is a real session over a project in t.TempDir(), with the
// project's writer lock held.
type testSession struct {
	project string
	store   *session.Store
	lock    *session.ProjectLock
	s       *session.Session
}

func newTestSession(t testing.TB, files map[string]string) *testSession {
	t.Helper()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	writeFiles(t, project, files)
	st, err := session.Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	lk, err := st.LockProject(project, session.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Release() })
	s, err := lk.Create()
	if err != nil {
		t.Fatal(err)
	}
	return &testSession{project: project, store: st, lock: lk, s: s}
}

// stage writes files into the session's upper layer as a run would, and
// records the run so the pre-images are taken.
func (ts *testSession) stage(t testing.TB, files map[string]string) {
	t.Helper()
	if err := ts.s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ts.s.UpperDir(), files)
	if err := ts.s.EndRun(0); err != nil {
		t.Fatal(err)
	}
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	baseText   = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	stagedText = "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\nTWELVE\n"
)

func loadFile(t *testing.T, src *reviewsrc.Source, path string) diffview.File {
	t.Helper()
	files, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("Load has no %s among %d files", path, len(files))
	return diffview.File{}
}
