package diffview

import (
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"
)

// classes tokenises one line and returns "type:text" for each token that is
// not plain text, names or whitespace.
func classes(t *testing.T, path, line string) []string {
	t.Helper()
	lx := lexerFor(path)
	if lx == nil {
		t.Fatalf("no lexer for %s", path)
	}
	toks, err := chroma.Tokenise(lx, &chroma.TokeniseOptions{State: "root"}, line)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var joined strings.Builder
	for _, tk := range toks {
		joined.WriteString(tk.Value)
		switch {
		case tk.Type == chroma.Text, tk.Type == chroma.TextWhitespace, tk.Type == chroma.Name:
			continue
		case tk.Type.InCategory(chroma.Comment):
			out = append(out, "comment:"+tk.Value)
		case tk.Type.InSubCategory(chroma.LiteralString):
			out = append(out, "string:"+tk.Value)
		case tk.Type.InSubCategory(chroma.LiteralNumber):
			out = append(out, "number:"+tk.Value)
		case tk.Type == chroma.KeywordType:
			out = append(out, "type:"+tk.Value)
		case tk.Type.InCategory(chroma.Keyword):
			out = append(out, "keyword:"+tk.Value)
		case tk.Type == chroma.NameFunction:
			out = append(out, "func:"+tk.Value)
		case tk.Type == chroma.NameVariable:
			out = append(out, "var:"+tk.Value)
		}
	}
	if joined.String() != line {
		t.Errorf("%s: tokens %q do not rebuild the line %q", path, joined.String(), line)
	}
	return out
}

func TestSyntaxLines(t *testing.T) {
	for _, tc := range []struct {
		path, line string
		want       []string
	}{
		{"main.go", `func main() { x := "a\"b" + 0x1F // done`,
			[]string{"keyword:func", "func:main", `string:"a\"b"`, "number:0x1F", "comment:// done"}},
		{"a/b/server.go", "return nil, fmt.Errorf(`raw %d`, 42) /* c */",
			[]string{"keyword:return", "type:nil", "func:Errorf", "string:`raw %d`", "number:42", "comment:/* c */"}},
		{"index.tsx", `const x: number = await fetch('u'); // ok`,
			[]string{"keyword:const", "type:number", "keyword:await", "func:fetch", "string:'u'", "comment:// ok"}},
		{"setup.py", `def f(self): return """doc""" # note`,
			[]string{"keyword:def", "func:f", "type:self", "keyword:return", `string:"""doc"""`, "comment:# note"}},
		{"install.sh", `if [ -n "$HOME" ]; then echo 'x#y' ${A}; fi # end`,
			[]string{"keyword:if", `string:"$HOME"`, "keyword:then", "type:echo", "string:'x#y'", "var:${A}", "keyword:fi", "comment:# end"}},
		{"lib.rs", `pub fn new() -> Option<u8> { None }`,
			[]string{"keyword:pub", "keyword:fn", "func:new", "type:Option", "type:u8", "type:None"}},
		{"x.c", `#include <stdio.h> /* unterminated`,
			[]string{"keyword:#include", "comment:/* unterminated"}},
		{"package.json", `"postinstall": "node x.js", "n": 1.5e3, "ok": true`,
			[]string{`string:"postinstall"`, `string:"node x.js"`, `string:"n"`, "number:1.5e3", `string:"ok"`, "type:true"}},
		{"Makefile", `build: ## $(GO) build`,
			[]string{"comment:## $(GO) build"}},
		{"Dockerfile", `RUN curl -fsSL "$URL" | sh`,
			[]string{"keyword:RUN", `string:"$URL"`}},
		{".github/workflows/ci.yml", `run: echo "x" # y`,
			[]string{`string:"x"`, "comment:# y"}},
		{"Cargo.toml", `serde = { version = "1", features = ["derive"] } # pin`,
			[]string{`string:"1"`, `string:"derive"`, "comment:# pin"}},
	} {
		got := classes(t, tc.path, tc.line)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s %q:\n got %q\nwant %q", tc.path, tc.line, got, tc.want)
		}
	}
}

// TestSyntaxEveryLanguage: every language's rules compile, and each of its
// file patterns finds it.
func TestSyntaxEveryLanguage(t *testing.T) {
	for _, l := range languages {
		for _, g := range l.files {
			name := strings.ReplaceAll(g, "*", "x")
			lx := lexerFor("dir/" + name)
			if lx == nil || lx.Config().Name != l.name {
				t.Errorf("%s: lexer %v, want %s", name, lx, l.name)
				continue
			}
			if _, err := chroma.Tokenise(lx, nil, "x = 1 // \"s\" # c"); err != nil {
				t.Errorf("%s: %v", l.name, err)
			}
		}
	}
	for _, name := range []string{"README", "notes.txt", "image.png"} {
		if lx := lexerFor(name); lx != nil {
			t.Errorf("%s: lexer %s, want none", name, lx.Config().Name)
		}
	}
}
