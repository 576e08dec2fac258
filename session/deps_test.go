package session

import (
	"os/exec"
	"path/filepath"
	"runtime"
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
