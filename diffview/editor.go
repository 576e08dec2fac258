package diffview

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// Editing a hunk in $EDITOR: the hunk goes to a temporary file, the editor
// gets the terminal, and the edited hunk comes back as an accepted decision.

// editCmd writes the hunk under the cursor to a temporary file for the
// editor.
func (m *Model) editCmd() tea.Cmd {
	f, hi := m.cursorHunk()
	if hi < 0 || f.hunks[hi].Lines == nil {
		return nil
	}
	h := f.hunks[hi]
	text := diff.EditText(h)
	if d := f.Decisions[h.ID]; d.Edit != "" {
		if e, err := diff.ParseEdit(h, d.Edit); err == nil {
			text = diff.EditText(e)
		}
	}
	fi := m.indexOf(f)
	return func() tea.Msg {
		tmp, err := os.CreateTemp("", "shadow-hunk-*.diff")
		if err != nil {
			return editReadyMsg{err: err}
		}
		_, werr := tmp.WriteString(text)
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return editReadyMsg{err: fmt.Errorf("write %s: %w", tmp.Name(), errors.Join(werr, cerr))}
		}
		return editReadyMsg{file: fi, id: h.ID, tmp: tmp.Name()}
	}
}

// editorCmd runs the editor on the hunk file, giving it the terminal (by run,
// or tea.ExecProcess when nil).
func editorCmd(run ExecFunc, editor string, msg editReadyMsg) tea.Cmd {
	args := strings.Fields(editor)
	if len(args) == 0 {
		args = []string{"vi"}
	}
	c := exec.Command(args[0], append(args[1:], msg.tmp)...)
	if run == nil {
		run = tea.ExecProcess
	}
	return run(c, func(err error) tea.Msg {
		return editExitMsg{file: msg.file, id: msg.id, tmp: msg.tmp, err: err}
	})
}

// readEdit reads back and removes the edited hunk file.
func readEdit(msg editExitMsg) tea.Cmd {
	return func() tea.Msg {
		defer os.Remove(msg.tmp)
		if msg.err != nil {
			return editedMsg{file: msg.file, id: msg.id, err: fmt.Errorf("editor: %w", msg.err)}
		}
		b, err := os.ReadFile(msg.tmp)
		return editedMsg{file: msg.file, id: msg.id, text: string(b), err: err}
	}
}

// edited validates an edited hunk and records it as accepted.
func (m *Model) edited(msg editedMsg) {
	if msg.err != nil {
		m.setError(fmt.Sprintf("edit hunk: %v", msg.err))
		return
	}
	if msg.file < 0 || msg.file >= len(m.files) {
		return
	}
	f := m.files[msg.file]
	for _, h := range f.hunks {
		if h.ID != msg.id {
			continue
		}
		e, err := diff.ParseEdit(h, msg.text)
		if errors.Is(err, diff.ErrEmptyEdit) {
			m.setStatus("edit abandoned")
			return
		}
		if err != nil {
			m.setError(fmt.Sprintf("edit hunk: %v", err))
			return
		}
		m.record(f, map[string]diff.Decision{h.ID: {Verdict: diff.Accepted, Edit: e.Text()}})
		m.setStatus("edited hunk accepted")
		return
	}
	m.setError("edit hunk: the hunk is gone (the changes were reloaded)")
}
