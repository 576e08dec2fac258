package english

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// countedPlural finds a number formatted straight into a plural noun ("%d hunks"), which reads
// "1 hunks" when the number is 1, and "(s)" plurals ("apply(s)").
var countedPlural = regexp.MustCompile(`%d (?:[a-z]+ )?([a-z]+s)\b|[a-z]\((s|es)\)`)

// pluralAllowed are the messages whose number is never 1, and the units that stay plural.
var pluralAllowed = map[string]string{
	"hand-off carried %d descriptors, want at least 1":                             "said only of 0 descriptors",
	"discover manifests: %s is nested more than %d directories deep; not searched": "the number is a limit well above 1",
	"no reachable daemon socket among %d locations":                                "a fixed list of many",
	"none of %d credential locations under %s is visible":                          "a fixed list of many",
}

// notCounted are the words after a number that are units or verbs, not counted nouns.
var notCounted = map[string]bool{"bytes": true, "is": true, "was": true, "has": true, "sends": true, "differs": true}

// TestNoCountedPlurals reads every Go file of shadow (tests aside) and fails on a message that
// writes a count into a plural noun: such counts go through Count.
func TestNoCountedPlurals(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range countedPlural.FindAllStringSubmatch(s, -1) {
				if notCounted[m[1]] || m[0] == "p(s)" {
					continue
				}
				if _, ok := pluralAllowed[s]; ok {
					continue
				}
				rel, _ := filepath.Rel(root, fset.Position(lit.Pos()).Filename)
				t.Errorf("%s:%d: %q writes a count into a plural: use english.Count", rel, fset.Position(lit.Pos()).Line, s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d Go files under %s", files, root)
	}
}
