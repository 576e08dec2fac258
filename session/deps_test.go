package session

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The session is under every command, `shadow diff` into a pipe and the agent host included: it
// links the pure diff core (diffview/diff), never the review browser or a terminal library
// (SPEC §11). Every package either links is checked against the terminal stack's module paths.
func TestSessionLinksNoTerminal(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", ".", "../diffview/diff").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	terminal := []string{
		"charm.land/",                  // bubbletea, lipgloss, bubbles
		"github.com/charmbracelet/",    // x/ansi, x/vt, x/term, colorprofile, ultraviolet
		"github.com/alecthomas/chroma", // syntax colours
		"github.com/creack/pty",
		"github.com/shadow-sandbox/shadow/ui",
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/shadow-sandbox/shadow/diffview" {
			t.Errorf("session links %s", pkg)
		}
		for _, prefix := range terminal {
			if strings.HasPrefix(pkg, prefix) {
				t.Errorf("session links %s", pkg)
			}
		}
	}
}

// Each part of the session is a package readable alone (SPEC §11): it imports only the parts
// below it, never session itself or a part beside it, so that reading apply never means reading
// the history or git output. The table is every package under session/; one not in it fails.
func TestSessionPartsImportOnlyBelow(t *testing.T) {
	const mod = "github.com/shadow-sandbox/shadow/"
	below := map[string][]string{
		"statefile": nil,
		"projectfs": nil,
		"store":     {"statefile"},
		"config":    {"projectfs"},
		"changeset": {"projectfs", "statefile"},
		"history":   {"changeset", "projectfs", "statefile", "store"},
		"apply":     {"changeset", "projectfs", "statefile", "store"},
		"gitout":    {"changeset", "projectfs", "statefile", "store"},
		"runner":    {"session", "changeset", "store"},
	}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "testdata" {
			continue
		}
		allowed, ok := below[e.Name()]
		if !ok {
			t.Errorf("session/%s is not in the table of the session's parts: say what it may import", e.Name())
			continue
		}
		files, _ := filepath.Glob(filepath.Join(e.Name(), "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				rest, inSession := strings.CutPrefix(p, mod+"session")
				if !inSession {
					continue
				}
				part := strings.TrimPrefix(rest, "/")
				if part == "" {
					part = "session"
				}
				if !slices.Contains(allowed, part) {
					t.Errorf("%s imports %s: session/%s may import only %v", f, p, e.Name(), allowed)
				}
			}
		}
	}
}
