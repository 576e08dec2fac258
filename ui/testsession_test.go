package ui

import (
	"testing"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/internal/testsession"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// testSession is a real session over a project in t.TempDir(), with the
// project's writer lock held (internal/testsession).
type testSession struct {
	project string
	store   *session.Store
	lock    *session.ProjectLock
	s       *session.Session
}

func newTestSession(t testing.TB, files map[string]string) *testSession {
	t.Helper()
	x := testsession.New(t, files)
	return &testSession{project: x.Project, store: x.Store, lock: x.Lock, s: x.S}
}

// stage writes files into the session's upper layer as a run would, and
// records the run so the pre-images are taken.
func (ts *testSession) stage(t testing.TB, files map[string]string) {
	t.Helper()
	testsession.Stage(t, ts.s, files)
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	testsession.WriteFiles(t, root, files)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	return testsession.ReadFile(t, path)
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
