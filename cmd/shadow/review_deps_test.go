package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReviewLinksNoApp: what `shadow review` is built from (the packages review.go imports, and
// theirs) holds neither the app nor its components: the review screen is diffview over the
// session, through ui/reviewsrc, with the keys of ui/keymap.
func TestReviewLinksNoApp(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "review.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		imports = append(imports, p)
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, append([]string{"list", "-deps"}, imports...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", imports, err)
	}
	app := []string{
		"github.com/shadow-sandbox/shadow/ui",           // the app
		"github.com/shadow-sandbox/shadow/ui/agenthost", // its daemon
		"github.com/shadow-sandbox/shadow/ui/pane",      // the agent's pane
		"github.com/charmbracelet/x/vt",                 // the pane's emulator
	}
	deps := strings.Fields(string(out))
	for _, pkg := range app {
		if slices.Contains(deps, pkg) {
			t.Errorf("review.go links %s (through %v)", pkg, imports)
		}
	}
	if !slices.Contains(deps, "github.com/shadow-sandbox/shadow/diffview") {
		t.Errorf("review.go does not link diffview: the test reads the wrong file (%v)", imports)
	}
}
