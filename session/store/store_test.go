package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultRoot(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if r, _ := DefaultRoot(); r != "/x/state/shadow" {
		t.Errorf("DefaultRoot = %q", r)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if r, _ := DefaultRoot(); r != "/home/u/.local/state/shadow" {
		t.Errorf("DefaultRoot without XDG_STATE_HOME = %q", r)
	}
}

func TestResolveProject(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644)

	if got, err := ResolveProject(filepath.Join(dir, "link")); err != nil || got != real {
		t.Errorf("symlinked project: %q, %v; want %q", got, err, real)
	}
	_, err := ResolveProject(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing project: %v", err)
	}
	_, err = ResolveProject(filepath.Join(dir, "afile"))
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as project: %v", err)
	}

	// The default is the git top level of the working directory.
	if _, err := exec.LookPath("git"); err != nil {
		os.Mkdir(filepath.Join(real, ".git"), 0o755)
	} else if out, err := exec.Command("git", "init", "-q", real).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	t.Chdir(filepath.Join(real, "sub", "deep"))
	if got, err := ResolveProject(""); err != nil || got != real {
		t.Errorf("default project from a subdirectory: %q, %v; want %q", got, err, real)
	}
	// Outside any work tree the working directory itself is the project.
	plain := filepath.Join(dir, "plain")
	os.Mkdir(plain, 0o755)
	t.Chdir(plain)
	if got, err := ResolveProject(""); err != nil || got != plain {
		t.Errorf("default project outside git: %q, %v; want %q", got, err, plain)
	}
}

// An index line cut short (an append a crash interrupted) names no session and is kept for the
// loader to skip; anything else that is not an ID makes the index corrupt, so that the project's
// sessions are found by a scan instead.
func TestParseIndex(t *testing.T) {
	id := NewID(time.Date(2026, 12, 1, 14, 31, 43, 0, time.UTC))
	for _, tc := range []struct {
		data string
		ids  []string
		ok   bool
	}{
		{"", nil, true},
		{id + "\n", []string{id}, true},
		{id + "\n" + id[:9], []string{id, id[:9]}, true},
		{id + "\n\n" + id + "\n", []string{id, id}, true},
		{id + "x\n", nil, false},
		{"../etc\n", nil, false},
		{strings.ToUpper(id) + "\n", nil, false},
	} {
		ids, ok := ParseIndex([]byte(tc.data))
		if ok != tc.ok || strings.Join(ids, ",") != strings.Join(tc.ids, ",") {
			t.Errorf("ParseIndex(%q) = %q, %v; want %q, %v", tc.data, ids, ok, tc.ids, tc.ok)
		}
	}
}

// A record is read only when it is whole and its own: the right version, its directory's ID and a
// project; every other is refused with a line that names the directory to inspect.
func TestReadMeta(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := NewID(time.Now())
	dir := st.SessionDir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	good := Meta{Version: MetaVersion, ID: id, Project: "/p", State: StateOpen}
	if err := WriteMeta(dir, good); err != nil {
		t.Fatal(err)
	}
	if m, err := st.ReadMeta(id); err != nil || m.ID != id || m.Project != "/p" {
		t.Fatalf("ReadMeta = %+v, %v", m, err)
	}
	for name, m := range map[string]Meta{
		"version":    {Version: MetaVersion + 1, ID: id, Project: "/p"},
		"other id":   {Version: MetaVersion, ID: NewID(time.Now().Add(time.Hour)), Project: "/p"},
		"no project": {Version: MetaVersion, ID: id},
	} {
		if err := WriteMeta(dir, m); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ReadMeta(id); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: ReadMeta = %v, want an error naming %s", name, err, dir)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "session.json"), []byte(`{"version":1,`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReadMeta(id); err == nil || !strings.Contains(err.Error(), "corrupt session.json") {
		t.Errorf("cut short: ReadMeta = %v", err)
	}
	for _, bad := range []string{"", "../x", "a/b", strings.Repeat("1", 65)} {
		if _, err := st.ReadMeta(bad); err == nil || !strings.Contains(err.Error(), "unknown session id") {
			t.Errorf("ReadMeta(%q) = %v", bad, err)
		}
	}
	if st.Recorded(NewID(time.Now().Add(2 * time.Hour))) {
		t.Error("Recorded is true for a session never made")
	}
}
