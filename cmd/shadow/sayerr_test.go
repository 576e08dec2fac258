package main

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every line of shadow's own that prints something besides a fixed text ("shadow: ...", an
// error, a warning) goes through sayErr, which escapes what a terminal would act on: the test
// reads every call of fmt.Fprint, Fprintln and Fprintf in the command's files, and one whose
// first text starts with "shadow:" and that prints more fails. sayErr itself prints an error
// naming every hostile name with none of its control bytes raw.
func TestShadowLinesGoThroughSayErr(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 3 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(sel.Sel.Name, "Fprint") {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fmt" {
				return true
			}
			lit, ok := call.Args[1].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, _ := strconv.Unquote(lit.Value); strings.HasPrefix(s, "shadow:") {
				t.Errorf("%s: a \"shadow:\" line printed with fmt.%s, not sayErr", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}

	for _, n := range []string{"osc\x1b]52;c;aGk=\x07\x1b[6n", "c1\u009b31m\u009d", "raw\x9b\x9d\xff", "bidi\u202etxt", "nl\nname", "cr\rname\x7f"} {
		var b bytes.Buffer
		sayErr(&b, "shadow:", errors.New("open /state/upper/"+n+": file name too long"))
		if bad := rawControls(strings.TrimSuffix(b.String(), "\n")); len(bad) > 0 || strings.Count(b.String(), "\n") != strings.Count(n, "\n")+1 {
			t.Errorf("sayErr of a path %q printed %q", n, b.String())
		}
	}
}
