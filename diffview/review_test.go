package diffview

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
)

// memSource is an in-memory change set for tests: base and staged
// contents, saved decisions, and a project that Apply writes into.
type memSource struct {
	mu        sync.Mutex
	base      map[string]string
	staged    map[string]string // a missing key: deleted
	meta      map[string]File   // status, modes and badges by path
	decisions map[string]map[string]diff.Decision
	saved     []string // "path id verdict", in the order saved
	project   map[string]string
	undo      []map[string]*string
}

func (s *memSource) Load() ([]File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var files []File
	for p, f := range s.meta {
		f.Path = p
		f.Diff = diff.Compute(p, []byte(s.base[p]), []byte(s.staged[p]), diff.Options{})
		f.Decisions = maps.Clone(s.decisions[p])
		files = append(files, f)
	}
	return files, nil
}

func (s *memSource) Decide(path, id string, d diff.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decisions[path] == nil {
		s.decisions[path] = map[string]diff.Decision{}
	}
	if d.Verdict == diff.Undecided {
		delete(s.decisions[path], id)
	} else {
		s.decisions[path][id] = d
	}
	s.saved = append(s.saved, fmt.Sprintf("%s %s %s", path, id, d.Verdict))
	return nil
}

func (s *memSource) Apply(plan Plan) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prior := map[string]*string{}
	var out Outcome
	for _, pf := range plan.Write {
		p := pf.Path
		f := s.meta[p]
		f.Path = p
		f.Diff = diff.Compute(p, []byte(s.base[p]), []byte(s.staged[p]), diff.Options{})
		if old, ok := s.project[p]; ok {
			prior[p] = &old
		} else {
			prior[p] = nil
		}
		items := Items(f)
		if items[0].Lines == nil {
			if s.decisions[p][items[0].ID].Verdict == diff.Accepted {
				s.project[p] = s.staged[p]
			}
			out.Written = append(out.Written, p)
			continue
		}
		got, err := diff.Apply([]byte(s.base[p]), f.Diff.Hunks, s.decisions[p])
		if err != nil {
			return out, err
		}
		if _, ok := s.staged[p]; !ok && len(got) == 0 {
			delete(s.project, p)
			out.Deleted = append(out.Deleted, p)
			continue
		}
		s.project[p] = string(got)
		out.Written = append(out.Written, p)
	}
	s.undo = append(s.undo, prior)
	out.ApplyID = fmt.Sprintf("apply-%d", len(s.undo))
	return out, nil
}

func (s *memSource) Rollback() (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.undo) == 0 {
		return Outcome{}, fmt.Errorf("no apply to roll back")
	}
	prior := s.undo[len(s.undo)-1]
	s.undo = s.undo[:len(s.undo)-1]
	out := Outcome{Rollback: true, OlderApply: len(s.undo) > 0}
	for p, c := range prior {
		if c == nil {
			delete(s.project, p)
			out.Removed = append(out.Removed, p)
		} else {
			s.project[p] = *c
			out.Restored = append(out.Restored, p)
		}
	}
	sort.Strings(out.Restored)
	sort.Strings(out.Removed)
	return out, nil
}

// fixture is a small change set with every kind of file the review shows,
// including a name and content carrying escape sequences and bidi controls.
func fixture() *memSource {
	goOld := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n\nfunc unused() {}\n\n// one\n// two\n// three\n// four\n// five\n// six\nvar x = 1\n"
	goNew := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n\tfmt.Println(\"again\")\n}\n\n// one\n// two\n// three\n// four\n// five\n// six\nvar x = 2\n"
	evil := "evil\x1b[2J\u202ename.txt"
	s := &memSource{
		base: map[string]string{
			"cmd/app/main.go":   goOld,
			"README.md":         "# Demo\n\nSome text.\n",
			"old.txt":           "gone\n",
			"logo.png":          "\x89PNG\x00\x01",
			".github/ci.yml":    "on: push\n",
			"node_modules/x.js": "a\n",
		},
		staged: map[string]string{
			"cmd/app/main.go":   goNew,
			"README.md":         "# Demo\n\nSome better text.\n",
			"logo.png":          "\x89PNG\x00\x02\x03",
			".github/ci.yml":    "on: push\njobs: {steal: {run: curl x}}\n",
			"node_modules/x.js": "b\n",
			evil:                "ok\n\x1b]52;c;aGk=\x07clip\n\u202e} // admin only \u2066\n",
			"link":              "../../etc/passwd",
		},
		meta: map[string]File{
			"cmd/app/main.go":   {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile},
			"README.md":         {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile},
			"old.txt":           {Status: StatusDeleted, OldMode: diff.ModeFile},
			"logo.png":          {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile, Binary: true, OldSize: 6, NewSize: 7},
			".github/ci.yml":    {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile, Protected: true},
			"node_modules/x.js": {Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile, Ignored: true},
			evil:                {Status: StatusAdded, NewMode: diff.ModeExecutable, Findings: []string{"DEP013 exfiltration indicator"}},
			"link":              {Status: StatusAdded, NewMode: diff.ModeSymlink},
		},
		decisions: map[string]map[string]diff.Decision{},
		project:   map[string]string{},
	}
	// The binary file has no text hunks: it is decided whole.
	delete(s.staged, "old.txt")
	for p, c := range s.base {
		s.project[p] = c
	}
	return s
}

// open makes a loaded model of the fixture at a size.
func open(t testing.TB, src Source, w, h int, opts ...Option) Model {
	t.Helper()
	m := New(append([]Option{WithSource(src), WithStyles(DefaultStyles(true))}, opts...)...)
	m.SetSize(w, h)
	msg := m.Init()()
	m, _ = m.Update(msg)
	return m
}

// press sends keys to the model, running the commands they return
// (saves, applies, reloads) until none is left, like the program would.
func press(t testing.TB, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		var cmd tea.Cmd
		m, cmd = m.Update(keyMsg(k))
		m = drain(t, m, cmd)
	}
	return m
}

// drain runs a command and feeds its messages back.
func drain(t testing.TB, m Model, cmd tea.Cmd) Model {
	t.Helper()
	for i := 0; cmd != nil && i < 100; i++ {
		msg := cmd()
		if msg == nil {
			return m
		}
		switch msg := msg.(type) {
		case tea.QuitMsg:
			return m
		case tea.BatchMsg:
			for _, c := range msg {
				m = drain(t, m, c)
			}
			return m
		}
		m, cmd = m.Update(msg)
	}
	return m
}

// keyMsg builds a key press from its name as bubbletea spells it.
func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "ctrl+a":
		return tea.KeyPressMsg{Code: 'a', Mod: tea.ModCtrl}
	case "ctrl+d":
		return tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
	}
	r := []rune(k)
	if len(r) == 1 {
		code := r[0]
		if code >= 'A' && code <= 'Z' {
			return tea.KeyPressMsg{Code: code + 'a' - 'A', ShiftedCode: code, Text: k, Mod: tea.ModShift}
		}
		return tea.KeyPressMsg{Code: code, Text: k}
	}
	panic("unknown key " + k)
}

// selectPath moves the selection to the file at path.
func selectPath(t testing.TB, m Model, path string) Model {
	t.Helper()
	for i, f := range m.files {
		if f.Path == path {
			m.selectFile(i)
			return m
		}
	}
	t.Fatalf("no file %q", path)
	return m
}

func TestViewGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			t.Run("main.go", func(t *testing.T) {
				m := open(t, fixture(), size.w, size.h)
				m = selectPath(t, m, "cmd/app/main.go")
				checkScreen(t, m.View(), size.w, size.h)
				golden.RequireEqual(t, m.View())
			})
			t.Run("escapes", func(t *testing.T) {
				m := open(t, fixture(), size.w, size.h)
				m = selectPath(t, m, "evil\x1b[2J\u202ename.txt")
				v := m.View()
				checkScreen(t, v, size.w, size.h)
				plain := ansi.Strip(v)
				for _, want := range []string{`evil\x1b[2J<U+202E>name.txt`, `\x1b]52;c;aGk=\x07clip`, `<U+202E>} // admin only <U+2066>`} {
					if !strings.Contains(plain, want) {
						t.Errorf("screen lacks %q:\n%s", want, plain)
					}
				}
				golden.RequireEqual(t, v)
			})
			t.Run("side-by-side", func(t *testing.T) {
				m := open(t, fixture(), size.w, size.h, WithSideBySide(true))
				m = selectPath(t, m, "cmd/app/main.go")
				checkScreen(t, m.View(), size.w, size.h)
				golden.RequireEqual(t, m.View())
			})
			t.Run("light", func(t *testing.T) {
				m := open(t, fixture(), size.w, size.h, WithStyles(DefaultStyles(false)))
				m = selectPath(t, m, mainGo)
				m = press(t, m, "/", "h", "e", "l", "l", "o", "enter")
				checkScreen(t, m.View(), size.w, size.h)
				golden.RequireEqual(t, m.View())
			})
			t.Run("result", func(t *testing.T) {
				m := open(t, fixture(), size.w, size.h)
				m = press(t, m, "ctrl+a", "w", "y")
				v := m.View()
				checkScreen(t, v, size.w, size.h)
				if plain := ansi.Strip(v); !strings.Contains(plain, "Written (4):") || !strings.Contains(plain, "Deleted (1):") {
					t.Errorf("result does not list the written files:\n%s", ansi.Strip(v))
				}
				golden.RequireEqual(t, v)
			})
			t.Run("confirm", func(t *testing.T) {
				m := open(t, fixture(), size.w, size.h)
				m = press(t, m, "ctrl+a", "w")
				checkScreen(t, m.View(), size.w, size.h)
				golden.RequireEqual(t, m.View())
			})
		})
	}
}

// checkScreen asserts the view fills the screen exactly and that nothing
// but SGR colour sequences reaches the terminal: no raw control
// characters, bidi or zero-width characters from the files.
func checkScreen(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n != w {
			t.Errorf("line %d is %d cells wide, want %d: %q", i, n, w, ansi.Strip(l))
		}
	}
	plain := ansi.Strip(v)
	for _, r := range plain {
		if r != '\n' && quote.Unsafe(r) {
			t.Fatalf("raw %U on screen", r)
		}
	}
	// Every escape sequence left is SGR (ESC [ ... m).
	rest := v
	for {
		i := strings.IndexByte(rest, 0x1b)
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		j := strings.IndexFunc(rest, func(r rune) bool { return r >= 0x40 && r <= 0x7e && r != '[' })
		if !strings.HasPrefix(rest, "[") || j < 0 || rest[j] != 'm' {
			t.Fatalf("non-SGR escape sequence on screen: %q", rest[:min(len(rest), 20)])
		}
	}
}

func TestHelpGolden(t *testing.T) {
	m := open(t, fixture(), 80, 24)
	m = press(t, m, "?")
	v := m.View()
	checkScreen(t, v, 80, 24)
	if strings.Contains(ansi.Strip(v), "…") {
		t.Errorf("help is cut at 80x24:\n%s", ansi.Strip(v))
	}
	golden.RequireEqual(t, v)
}
