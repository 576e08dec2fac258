package session

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/overlayforms"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/history"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// TestEveryReaderReadsEveryForm: every form an entry of a layer can take (overlayforms.All) is
// read alike by the session's readers of a layer: the scan of the change set (what it deletes or
// hides of the project), the history (a layer's whiteouts and opaque directories) and the apply
// (whether the agent's tree still has a project directory below it), as sandbox/layers decides.
func TestEveryReaderReadsEveryForm(t *testing.T) {
	forms := overlayforms.All()
	dir := t.TempDir()
	layer, project := filepath.Join(dir, "layer"), filepath.Join(dir, "project")
	for _, d := range []string{layer, project} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := overlayforms.Write(layer, project, forms); err != nil {
		t.Fatal(err)
	}
	host, err := projectfs.OpenRoot(project)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	raw, err := changeset.ScanUpper(layer, host, changeset.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[string]byte{}
	for _, r := range raw {
		scanned[r.Path] = r.Kind
	}
	l, err := projectfs.OpenRoot(layer)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	for _, f := range forms {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(layer, f.Path), &st); err != nil {
			t.Fatal(err)
		}
		views := map[string]string{
			"layers.KindAt":    layers.KindAt(unix.AT_FDCWD, filepath.Join(layer, f.Path), &st).String(),
			"the change set":   scanView(scanned, f),
			"the history":      historyView(l, f.Path, &st),
			"the apply's dirs": applyView(layer, f),
		}
		for reader, got := range views {
			if got != f.Kind {
				t.Errorf("%s (%s): %s reads %q, want %q", f.Name, f.Path, reader, got, f.Kind)
			}
		}
	}
}

// scanView is what the change set makes of form f: a deletion of the project's file, a directory
// that hides the project's below it or shows them, or a staged entry.
func scanView(scanned map[string]byte, f overlayforms.Form) string {
	if f.IsDir() {
		if scanned[f.Path+"/below/file"] == 'w' {
			return "opaque directory"
		}
		return "directory"
	}
	switch scanned[f.Path] {
	case 'w':
		return "whiteout"
	case 'f':
		return "file"
	case 'l':
		return "symlink"
	case 'o':
		return "other"
	}
	return "missing"
}

// historyView is what the history makes of the entry p of the layer l.
func historyView(l *projectfs.Root, p string, st *unix.Stat_t) string {
	switch {
	case history.LayerWhiteout(l, p):
		return "whiteout"
	case history.LayerOpaque(l, p):
		return "opaque directory"
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFREG:
		return "file"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "other"
}

// applyView is what the apply makes of form f: whether the agent's tree still has the project's
// directory below it (a directory form), or no directory there at all (any other, the kind it
// should be is then taken as read).
func applyView(layer string, f overlayforms.Form) string {
	has := apply.AgentHasDir(layer, f.Path+"/below/dir")
	switch {
	case !f.IsDir() && !has:
		return f.Kind
	case !f.IsDir():
		return "a directory"
	case has:
		return "directory"
	}
	return "opaque directory"
}
