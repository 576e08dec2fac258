package reviewsrc

import (
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/internal/testsession"
)

// A review beside another session takes that session's version of a file into the reviewed one,
// and the next load shows it; the other session is left as it was.
func TestBesideTakesTheOtherSessionsFile(t *testing.T) {
	ts := testsession.New(t, map[string]string{"a.txt": "base\n"})
	testsession.Stage(t, ts.S, map[string]string{"a.txt": "mine\n"})
	other, err := ts.Lock.CreateNamed("codex")
	if err != nil {
		t.Fatal(err)
	}
	testsession.Stage(t, other, map[string]string{"a.txt": "theirs\n"})
	var src diffview.Source = Beside(New(ts.Lock, ts.S), other)
	taker, ok := src.(diffview.Taker)
	if !ok || !strings.Contains(taker.Other(), "codex") {
		t.Fatalf("the source beside codex is no Taker naming it: %v", src)
	}
	if err := taker.TakeOther("a.txt"); err != nil {
		t.Fatal(err)
	}
	files, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || !strings.Contains(files[0].Diff.Hunks[0].Text(), "+theirs") {
		t.Fatalf("after the take the review loads %+v", files)
	}
	cs, err := other.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := other.Contents(&cs.Changes[0], 0); err != nil || string(n) != "theirs\n" {
		t.Errorf("codex's a.txt after the take: %q, %v", n, err)
	}
	if _, ok := diffview.Source(New(ts.Lock, ts.S)).(diffview.Taker); ok {
		t.Error("a review of one session is a Taker")
	}
}
