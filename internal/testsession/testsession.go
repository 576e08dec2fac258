// Package testsession makes real sessions for tests: a project in the test's temporary
// directory, a state directory beside it, the project's writer lock held.
package testsession

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shadow-sandbox/shadow/session"
)

// Session is a session over a project of its own, with the project's writer lock held until
// the test ends.
type Session struct {
	Project string
	Store   *session.Store
	Lock    *session.ProjectLock
	S       *session.Session
}

// New makes a project holding files and opens a session over it.
func New(t testing.TB, files map[string]string) *Session {
	t.Helper()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	WriteFiles(t, project, files)
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
	return &Session{Project: project, Store: st, Lock: lk, S: s}
}

// Stage writes files into s's upper layer as a run would, and records the run so the
// pre-images are taken.
func Stage(t testing.TB, s *session.Session, files map[string]string) {
	t.Helper()
	if err := s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	WriteFiles(t, s.UpperDir(), files)
	if err := s.EndRun(0); err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes files (slash-separated paths to contents) below root.
func WriteFiles(t testing.TB, root string, files map[string]string) {
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

// ReadFile is the content of path.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
