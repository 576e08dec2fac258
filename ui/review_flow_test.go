package ui

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/charmbracelet/x/vt"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// numbered is n lines "<prefix>01".."<prefix>NN", each ending in a newline,
// with the lines of repl (by 1-based number) replaced by their text; an
// empty replacement drops the line, one with newlines stands for several.
func numbered(prefix string, n int, repl map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := repl[i]; ok {
			b.WriteString(r)
			continue
		}
		fmt.Fprintf(&b, "%s%02d\n", prefix, i)
	}
	return b.String()
}

// flowScreen replays the review program's output on a terminal emulator so
// the test waits for text as it is shown (the renderer sends only the cells
// that changed).
type flowScreen struct{ emu *vt.Emulator }

func newFlowScreen(t *testing.T, w, h int) *flowScreen {
	t.Helper()
	emu := vt.NewEmulator(w, h)
	// The emulator answers terminal queries through a pipe: drain it.
	go io.Copy(io.Discard, emu)
	t.Cleanup(func() {
		if c, ok := emu.InputPipe().(io.Closer); ok {
			c.Close()
		}
	})
	return &flowScreen{emu: emu}
}

// waitFor feeds the program's new output to the emulator until want is on
// the screen.
func (sc *flowScreen) waitFor(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	met := false
	defer func() {
		// WaitFor fails with the raw output; show the screen as well.
		if !met {
			t.Logf("waiting for %q, the screen is:\n%s", want, sc.emu.String())
		}
	}()
	fed := 0
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		// b is all the output read by this wait so far. The program's
		// output is no terminal, so it counts on the line discipline to turn
		// "\n" into "\r\n" (ONLCR); the emulator has none, so do it here.
		sc.emu.Write(bytes.ReplaceAll(b[fed:], []byte("\n"), []byte("\r\n")))
		fed = len(b)
		return strings.Contains(sc.emu.String(), want)
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	met = true
}

// send presses keys in order; "space" is the space bar, anything else a
// single key.
func send(tm *teatest.TestModel, keys ...string) {
	for _, k := range keys {
		if k == "space" {
			tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		tm.Send(press(k))
	}
}

// startReview runs the review screen of `shadow review` over src.
func startReview(t *testing.T, src diffview.Source, editor string) *teatest.TestModel {
	t.Helper()
	m := diffview.New(diffview.WithSource(src), diffview.WithEditor(editor))
	tm := teatest.NewTestModel(t, diffview.NewApp(m), teatest.WithInitialTermSize(80, 24))
	t.Cleanup(func() { _ = tm.Quit() })
	return tm
}

// hunkWith finds the hunk of f whose changed lines include text.
func hunkWith(t *testing.T, f diffview.File, hunks []diff.Hunk, text string) diff.Hunk {
	t.Helper()
	for _, h := range hunks {
		for _, l := range h.Lines {
			if l.Op != diff.Context && l.Text == text {
				return h
			}
		}
	}
	t.Fatalf("%s: no hunk changes %q", f.Path, text)
	return diff.Hunk{}
}

// TestReviewFlowOverSession drives the review screen over a real session
// with the default keys: hunk accept and reject, a split with one piece
// accepted, two selected lines accepted, a hunk edited in $EDITOR, then
// apply; the project must hold exactly base + those changes, and a review
// reopened on the session must find the rejected and undecided hunks.
func TestReviewFlowOverSession(t *testing.T) {
	baseA := numbered("a", 40, nil)
	baseB := numbered("b", 12, nil)
	baseC := numbered("c", 6, nil)
	ts := newTestSession(t, map[string]string{"a.txt": baseA, "b.txt": baseB, "c.txt": baseC})
	ts.stage(t, map[string]string{
		// Three hunks: line 2, line 15, and lines 28 and 31 (close enough
		// to share a hunk, which splits in two).
		"a.txt": numbered("a", 40, map[int]string{2: "A02 first\n", 15: "A15 second\n", 28: "A28 third\n", 31: "A31 fourth\n"}),
		// One hunk: line 5 replaced by three new lines.
		"b.txt": numbered("b", 12, map[int]string{5: "new 1\nnew 2\nnew 3\n"}),
		"c.txt": numbered("c", 6, map[int]string{3: "C03\n"}),
	})

	// The layout the keys below rely on, as the session computes it.
	src := reviewsrc.New(ts.lock, ts.s)
	a, b, c := loadFile(t, src, "a.txt"), loadFile(t, src, "b.txt"), loadFile(t, src, "c.txt")
	if len(a.Diff.Hunks) != 3 || len(b.Diff.Hunks) != 1 || len(c.Diff.Hunks) != 1 {
		t.Fatalf("hunks: a.txt %d, b.txt %d, c.txt %d; want 3, 1, 1", len(a.Diff.Hunks), len(b.Diff.Hunks), len(c.Diff.Hunks))
	}
	if n := len(diff.Split(a.Diff.Hunks[2])); n != 2 {
		t.Fatalf("a.txt's third hunk splits into %d pieces, want 2", n)
	}
	var bLines []string
	for _, l := range b.Diff.Hunks[0].Lines {
		bLines = append(bLines, string(l.Op)+strings.TrimSuffix(l.Text, "\n"))
	}
	wantB := []string{" b02", " b03", " b04", "-b05", "+new 1", "+new 2", "+new 3", " b06", " b07", " b08"}
	if strings.Join(bLines, "|") != strings.Join(wantB, "|") {
		t.Fatalf("b.txt hunk lines = %q, want %q", bLines, wantB)
	}

	// The editor rewrites the added line of c.txt's hunk.
	editor := filepath.Join(t.TempDir(), "edit-hunk")
	script := "#!/bin/sh\nexec sed -i 's/^+C03$/+C03 edited/' \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	tm := startReview(t, src, editor)
	sc := newFlowScreen(t, 80, 24)
	sc.waitFor(t, tm, "file 1/3 · 0✓ 0✗ 5· undecided")

	// a.txt (the diff has the keys, the cursor is on the first hunk):
	// accept the first hunk, reject the second, split the third and accept
	// only its first piece.
	send(tm, "a")
	sc.waitFor(t, tm, "1✓ 0✗ 2·")
	send(tm, "r")
	sc.waitFor(t, tm, "1✓ 1✗ 1·")
	send(tm, "s")
	sc.waitFor(t, tm, "split into 2 hunks")
	send(tm, "a")
	sc.waitFor(t, tm, "2✓ 1✗ 1·")

	// b.txt: rows are the hunk header, then its lines. Select "-b05" (row
	// 4) and "+new 2" (row 6), then accept the selection.
	send(tm, "}", "j", "j", "j", "j", "space", "j", "space")
	sc.waitFor(t, tm, "2 selected")
	send(tm, "a")
	sc.waitFor(t, tm, "accepted (2 lines)")

	// c.txt: edit the hunk; the edit is accepted.
	send(tm, "}", "e")
	sc.waitFor(t, tm, "edited hunk accepted")

	send(tm, "w")
	sc.waitFor(t, tm, "Will write 3 files")
	send(tm, "y")
	sc.waitFor(t, tm, "apply done: 3 written")
	send(tm, "q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	// base + exactly the decided changes, written out by hand.
	want := map[string]string{
		"a.txt": numbered("a", 40, map[int]string{2: "A02 first\n", 28: "A28 third\n"}),
		"b.txt": "b01\nb02\nb03\nb04\nnew 2\nb06\nb07\nb08\nb09\nb10\nb11\nb12\n",
		"c.txt": "c01\nc02\nC03 edited\nc04\nc05\nc06\n",
	}
	for p, w := range want {
		if got := readFile(t, filepath.Join(ts.project, p)); got != w {
			t.Errorf("%s after apply =\n%q\nwant\n%q", p, got, w)
		}
	}

	// Reopened on the same session: the rejected hunk of a.txt and every
	// part not taken are there, nothing applied comes back.
	again := reviewsrc.New(ts.lock, ts.s)
	tm = startReview(t, again, editor)
	sc = newFlowScreen(t, 80, 24)
	sc.waitFor(t, tm, "file 1/3 · 0✓ 1✗ 3· undecided")
	send(tm, "q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	files := tm.FinalModel(t).(diffview.App).Model.Files()
	byPath := map[string]diffview.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	if len(files) != 3 {
		t.Fatalf("reopened review shows %d files, want a.txt, b.txt, c.txt", len(files))
	}
	ra := byPath["a.txt"]
	if len(ra.Diff.Hunks) != 2 {
		t.Fatalf("reopened a.txt has %d hunks, want the rejected one and the undecided piece", len(ra.Diff.Hunks))
	}
	if d := ra.Decisions[hunkWith(t, ra, ra.Diff.Hunks, "A15 second\n").ID]; d.Verdict != diff.Rejected {
		t.Errorf("reopened a.txt: the rejected hunk is %q, want rejected", d.Verdict)
	}
	if d := ra.Decisions[hunkWith(t, ra, ra.Diff.Hunks, "A31 fourth\n").ID]; d.Verdict != diff.Undecided {
		t.Errorf("reopened a.txt: the piece left undecided is %q", d.Verdict)
	}
	rb := byPath["b.txt"]
	if len(rb.Diff.Hunks) != 1 || len(rb.Decisions) != 0 {
		t.Errorf("reopened b.txt: %d hunks, decisions %+v; want the unselected lines undecided", len(rb.Diff.Hunks), rb.Decisions)
	} else {
		hunkWith(t, rb, rb.Diff.Hunks, "new 1\n")
		hunkWith(t, rb, rb.Diff.Hunks, "new 3\n")
	}
	rc := byPath["c.txt"]
	if len(rc.Diff.Hunks) != 1 || len(rc.Decisions) != 0 {
		t.Errorf("reopened c.txt: %d hunks, decisions %+v; want the staged line undecided against the edit", len(rc.Diff.Hunks), rc.Decisions)
	} else {
		hunkWith(t, rc, rc.Diff.Hunks, "C03 edited\n")
	}
}
