package diffview

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/charmbracelet/x/vt"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

const mainGo = "cmd/app/main.go"

func TestDecideUndoSaved(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 24)
	m = selectPath(t, m, mainGo)
	f := m.file()
	if len(f.hunks) != 2 {
		t.Fatalf("main.go has %d hunks, want 2", len(f.hunks))
	}
	h0, h1 := f.hunks[0].ID, f.hunks[1].ID
	m = press(t, m, "a", "r")
	want := []string{mainGo + " " + h0 + " accept", mainGo + " " + h1 + " reject"}
	if strings.Join(src.saved, "\n") != strings.Join(want, "\n") {
		t.Fatalf("saved = %q, want %q", src.saved, want)
	}
	m = press(t, m, "u")
	if got := src.saved[len(src.saved)-1]; got != mainGo+" "+h1+" " {
		t.Errorf("undo saved %q, want the second hunk undecided", got)
	}
	if _, ok := src.decisions[mainGo][h1]; ok {
		t.Errorf("undone decision still stored")
	}
	if src.decisions[mainGo][h0].Verdict != diff.Accepted {
		t.Errorf("first decision lost by undo")
	}
	// R rejects the file; one undo restores both hunks' previous state.
	m = press(t, m, "R")
	if src.decisions[mainGo][h0].Verdict != diff.Rejected || src.decisions[mainGo][h1].Verdict != diff.Rejected {
		t.Fatalf("R did not reject both hunks: %v", src.decisions[mainGo])
	}
	press(t, m, "u")
	if src.decisions[mainGo][h0].Verdict != diff.Accepted {
		t.Errorf("undo of R: first hunk %q, want accept", src.decisions[mainGo][h0].Verdict)
	}
	if _, ok := src.decisions[mainGo][h1]; ok {
		t.Errorf("undo of R: second hunk still decided")
	}
}

func TestSplitApplyRollback(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 24)
	m = selectPath(t, m, mainGo)
	m = press(t, m, "s")
	if n := len(m.file().hunks); n != 3 {
		t.Fatalf("after split: %d hunks, want 3", n)
	}
	// Cursor is on the first piece: accept it, reject the deletion of
	// unused(), leave the last hunk undecided.
	m = press(t, m, "a", "r")
	m = press(t, m, "w")
	if m.mode != modeConfirmApply {
		t.Fatalf("w did not ask for confirmation")
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "Will write 1 file") || !strings.Contains(v, "cmd/app/main.go  1✓ 1✗ 1·") {
		t.Fatalf("confirmation does not list main.go:\n%s", v)
	}
	m = press(t, m, "y")
	want := strings.Replace(src.base[mainGo], "\tfmt.Println(\"hello\")\n", "\tfmt.Println(\"hello, world\")\n\tfmt.Println(\"again\")\n", 1)
	if got := src.project[mainGo]; got != want {
		t.Fatalf("applied main.go =\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(m.status, "apply done: 1 written") {
		t.Errorf("status after apply = %q", m.status)
	}
	// The reload brings the split back from the saved piece decisions.
	if n := len(m.file().hunks); n != 3 {
		t.Errorf("after reload: %d hunks, want the 3 split pieces", n)
	}
	m = press(t, m, "b")
	if m.mode != modeConfirmRollback {
		t.Fatalf("b did not ask for confirmation")
	}
	m = press(t, m, "n")
	if src.project[mainGo] != want {
		t.Fatalf("cancelled rollback changed the project")
	}
	press(t, m, "b", "y")
	if src.project[mainGo] != src.base[mainGo] {
		t.Errorf("rollback left %q", src.project[mainGo])
	}
}

func TestLineSelection(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 24)
	m = selectPath(t, m, "README.md")
	// Rows: note? no; hunk header, " # Demo", " ", "-Some text.", "+Some better text."
	m = press(t, m, "]")
	for i := 0; i < 4; i++ {
		m = press(t, m, "j")
	}
	rows := m.file().rows(false)
	r := rows[m.file().cursor]
	if r.kind != rowLine || m.file().hunks[r.hunk].Lines[r.line].Op != diff.Insert {
		t.Fatalf("cursor not on the added line: %+v", r)
	}
	m = press(t, m, "space")
	if !strings.Contains(ansi.Strip(m.View()), "1 selected") {
		t.Errorf("selection not shown")
	}
	m = press(t, m, "k", "k", "a", "w", "y")
	if got, want := src.project["README.md"], "# Demo\n\nSome text.\nSome better text.\n"; got != want {
		t.Errorf("partial apply = %q, want %q", got, want)
	}
}

func TestNavigation(t *testing.T) {
	m := open(t, fixture(), 80, 24)
	m = selectPath(t, m, mainGo)
	m = press(t, m, "/")
	for _, r := range "again" {
		m = press(t, m, string(r))
	}
	m = press(t, m, "enter")
	f := m.file()
	if got := f.lineText(f.rows(false)[f.cursor]); got != "\tfmt.Println(\"again\")" {
		t.Errorf("search landed on %q", got)
	}
	m = press(t, m, "}")
	if m.file().Path == mainGo {
		t.Errorf("} did not move to the next file")
	}
	m = press(t, m, "{")
	if m.file().Path != mainGo {
		t.Errorf("{ did not come back")
	}
	// "." visits every undecided hunk, then reports none left once all
	// are decided.
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		m = press(t, m, ".")
		fv, hi := m.cursorHunk()
		if hi < 0 {
			break
		}
		seen[fv.Path+fv.hunks[hi].ID] = true
	}
	if len(seen) != 9 {
		t.Errorf(". visited %d hunks, want 9", len(seen))
	}
	m = press(t, m, "tab")
	if m.focus != treePane {
		t.Errorf("tab did not focus the tree")
	}
	before := m.cur
	m = press(t, m, "j")
	if m.cur != before+1 {
		t.Errorf("j in the tree: file %d, want %d", m.cur, before+1)
	}
	m = press(t, m, "?")
	helpView := ansi.Strip(m.View())
	for _, group := range m.helpKeys().FullHelp() {
		for _, b := range group {
			if b.Enabled() && !strings.Contains(helpView, b.Help().Desc) {
				t.Errorf("help at 80x24 lacks %q", b.Help().Desc)
			}
		}
	}
	m = press(t, m, "x")
	if m.mode != modeNormal {
		t.Errorf("a key did not close help")
	}
	m = press(t, m, "v")
	if !m.sideBySide {
		t.Errorf("v did not switch to side-by-side")
	}
}

func TestMouseWheel(t *testing.T) {
	src := &memSource{
		base:      map[string]string{"big.txt": numbered(1, 200)},
		staged:    map[string]string{"big.txt": strings.ReplaceAll(numbered(1, 200), "l", "L")},
		meta:      map[string]File{"big.txt": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile}},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{},
	}
	m := open(t, src, 80, 24)
	m, _ = m.Update(tea.MouseWheelMsg{X: 50, Y: 5, Button: tea.MouseWheelDown})
	if m.file().top != 3 {
		t.Errorf("wheel down: top = %d, want 3", m.file().top)
	}
	m, _ = m.Update(tea.MouseWheelMsg{X: 50, Y: 5, Button: tea.MouseWheelUp})
	if m.file().top != 0 {
		t.Errorf("wheel up: top = %d, want 0", m.file().top)
	}
}

func TestSmallScreens(t *testing.T) {
	for _, size := range [][2]int{{40, 10}, {20, 5}, {1, 1}} {
		m := open(t, fixture(), size[0], size[1])
		checkScreen(t, m.View(), size[0], size[1])
		m = press(t, m, "tab")
		checkScreen(t, m.View(), size[0], size[1])
	}
}

// teaModel runs the review as a program under teatest.
func startProgram(t *testing.T, src Source, opts ...Option) *teatest.TestModel {
	t.Helper()
	m := New(append([]Option{WithSource(src)}, opts...)...)
	return teatest.NewTestModel(t, NewApp(m), teatest.WithInitialTermSize(80, 24))
}

// screen replays a program's output on a terminal emulator, so a test
// waits for text as it appears on screen (the renderer only sends the
// cells that changed, so the raw stream need not hold it in one piece).
type screen struct{ emu *vt.Emulator }

func newScreen(t *testing.T) *screen {
	emu := vt.NewEmulator(80, 24)
	// The emulator answers terminal queries through a pipe: drain it.
	go io.Copy(io.Discard, emu)
	t.Cleanup(func() {
		// Closing the pipe's write end ends the drain without racing on
		// the emulator's own state.
		if c, ok := emu.InputPipe().(io.Closer); ok {
			c.Close()
		}
	})
	return &screen{emu: emu}
}

// waitFor feeds new output to the emulator until s is on its screen.
func (sc *screen) waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	fed := 0
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		// The output is not a terminal, so lines end in a bare "\n" that a real terminal's
		// line discipline would turn into "\r\n"; the emulator needs the "\r" too.
		sc.emu.Write(bytes.ReplaceAll(b[fed:], []byte("\n"), []byte("\r\n")))
		fed = len(b)
		return strings.Contains(sc.emu.String(), s)
	}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func TestProgramAcceptAndQuit(t *testing.T) {
	src := fixture()
	tm := startProgram(t, src)
	sc := newScreen(t)
	sc.waitFor(t, tm, "file 1/8")
	tm.Send(keyMsg("ctrl+a"))
	sc.waitFor(t, tm, "accepted 6 undecided hunks")
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(15*time.Second))
	final := tm.FinalModel(t).(App).Model
	if !final.Quitting() {
		t.Errorf("q did not quit")
	}
	// Every decision reached the source before the program ended.
	n := 0
	for _, ds := range src.decisions {
		n += len(ds)
	}
	if n != 6 {
		t.Errorf("%d decisions saved, want 6", n)
	}
	if _, err := io.ReadAll(tm.FinalOutput(t)); err != nil {
		t.Fatal(err)
	}
}

func TestProgramEditHunk(t *testing.T) {
	src := fixture()
	// The "editor" rewrites the added line of README.md's hunk.
	tm := startProgram(t, src, WithEditor("sed -i s/^+Some.better.text.$/+Some\\x20edited\\x20text./"))
	sc := newScreen(t)
	sc.waitFor(t, tm, "file 1/8")
	for _, k := range []string{"tab", "j", "tab", "e"} {
		tm.Send(keyMsg(k))
	}
	sc.waitFor(t, tm, "edited hunk accepted")
	tm.Send(keyMsg("w"))
	sc.waitFor(t, tm, "Will write 1 file")
	tm.Send(keyMsg("y"))
	sc.waitFor(t, tm, "apply done")
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(15*time.Second))
	if got, want := src.project["README.md"], "# Demo\n\nSome edited text.\n"; got != want {
		t.Errorf("README.md after edit and apply = %q, want %q", got, want)
	}
}

func TestApplyWaitsForRunningSave(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 24)
	m = selectPath(t, m, "README.md")
	m, saveCmd := m.Update(keyMsg("a"))
	if saveCmd == nil {
		t.Fatal("a returned no save command")
	}
	m, _ = m.Update(keyMsg("w"))
	m, cmd := m.Update(keyMsg("y"))
	if cmd != nil {
		t.Fatalf("apply started while a save was running")
	}
	if _, ok := src.decisions["README.md"]; ok {
		t.Fatalf("decision saved before its command ran")
	}
	m, cmd = m.Update(saveCmd())
	if cmd == nil {
		t.Fatal("no apply after the save finished")
	}
	m = drain(t, m, cmd)
	if got := src.project["README.md"]; got != src.staged["README.md"] {
		t.Errorf("README.md = %q, want the staged content", got)
	}
	if m.busy {
		t.Errorf("still busy after the apply")
	}
}

func TestKeyMapBind(t *testing.T) {
	k := DefaultKeyMap()
	if err := k.Bind("accept", "y", "enter"); err != nil {
		t.Fatal(err)
	}
	if got := k.Accept.Keys(); len(got) != 2 || got[0] != "y" || k.Accept.Help().Key != "y" {
		t.Errorf("accept keys = %v, help %q", got, k.Accept.Help().Key)
	}
	if err := k.Bind("fly", "f"); err == nil || !strings.Contains(err.Error(), "next-undecided") {
		t.Errorf("unknown action: err = %v", err)
	}
	if err := k.Bind("quit"); err == nil {
		t.Errorf("no keys accepted")
	}
	// Every binding of the map has a name.
	if n := len(k.Actions()); n != 38 {
		t.Errorf("%d named actions, want 37", n)
	}
	m := open(t, fixture(), 80, 24, WithKeyMap(k))
	m = selectPath(t, m, "README.md")
	m = press(t, m, "y")
	if d := m.file().Decisions; len(d) != 1 {
		t.Errorf("rebound accept key did not decide: %v", d)
	}
}

func TestMouseClick(t *testing.T) {
	m := open(t, fixture(), 80, 24)
	// Tree row 1 is .github/ci.yml (row 0 is its directory).
	m, _ = m.Update(tea.MouseClickMsg{X: 3, Y: 1, Button: tea.MouseLeft})
	if m.file().Path != ".github/ci.yml" || m.focus != treePane {
		t.Errorf("click on tree row 1 selected %q (focus %d)", m.file().Path, m.focus)
	}
	m = selectPath(t, m, mainGo)
	m, _ = m.Update(tea.MouseClickMsg{X: 40, Y: 4, Button: tea.MouseLeft})
	f := m.file()
	if m.focus != diffPane || f.cursor != 3 {
		t.Errorf("click on diff row 4: cursor %d focus %d, want 3 and the diff", f.cursor, m.focus)
	}
}

func TestLongLineRendersFast(t *testing.T) {
	long := strings.Repeat("var a=function(b){return b+1};", 40000) // 1.2 MB, one line
	src := &memSource{
		base:      map[string]string{"app.min.js": long + "\n"},
		staged:    map[string]string{"app.min.js": strings.Replace(long, "b+1", "b+2", 1) + "\n"},
		meta:      map[string]File{"app.min.js": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile}},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{},
	}
	m := open(t, src, 160, 48)
	start := time.Now()
	v := m.View()
	if d := time.Since(start); d > 60*time.Second { // a bound for a busy machine: quiet, well under a second
		t.Errorf("first frame of a 1.2 MB line took %v", d)
	}
	checkScreen(t, v, 160, 48)
	if !strings.Contains(ansi.Strip(v), "var a=function(b){return b+2}") {
		t.Errorf("the changed line is not shown")
	}
}

func TestSplitDecidedThenUndo(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 24)
	m = selectPath(t, m, mainGo)
	h0 := m.file().hunks[0].ID
	m = press(t, m, "a", "k", "k", "k", "k", "k", "k", "k", "k", "k", "k", "s")
	f := m.file()
	if len(f.hunks) != 3 {
		t.Fatalf("split: %d hunks, want 3", len(f.hunks))
	}
	if _, ok := src.decisions[mainGo][h0]; ok {
		t.Fatalf("splitting kept the whole hunk's decision")
	}
	m = press(t, m, "u")
	f = m.file()
	if len(f.hunks) != 2 || f.hunks[0].ID != h0 {
		t.Fatalf("undo of the split decision: %d hunks, first %s; want the whole hunk back", len(f.hunks), f.hunks[0].ID)
	}
	if src.decisions[mainGo][h0].Verdict != diff.Accepted {
		t.Errorf("undo did not restore the accepted hunk")
	}
}

func TestReadOnly(t *testing.T) {
	src := fixture()
	m := open(t, src, 80, 24, WithReadOnly(true))
	m = selectPath(t, m, mainGo)
	m = press(t, m, "a", "A", "ctrl+a", "s", "w", "b")
	if len(src.saved) != 0 || m.mode != modeNormal || len(m.file().hunks) != 2 {
		t.Errorf("read-only review changed something: saved %v, mode %d, %d hunks", src.saved, m.mode, len(m.file().hunks))
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "READ-ONLY") {
		t.Errorf("status does not say read-only:\n%s", v)
	}
	m = press(t, m, "?")
	if v := ansi.Strip(m.View()); strings.Contains(v, "accept hunk") || !strings.Contains(v, "next hunk") {
		t.Errorf("read-only help lists the wrong keys:\n%s", v)
	}
}

// numbered is the lines "l<from>\n" … "l<to>\n".
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}
