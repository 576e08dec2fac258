package changeset

import (
	"testing"
)

func TestWildmatch(t *testing.T) {
	cases := []struct {
		pat, text string
		want      bool
	}{
		{"*.o", "a.o", true},
		{"*.o", "dir/a.o", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"[a-c]x", "bx", true},
		{"[!a-c]x", "bx", false},
		{"[!a-c]x", "dx", true},
		{"[]]x", "]x", true},
		{"**/foo", "foo", true},
		{"**/foo", "a/b/foo", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"abc/**", "abc/x/y", true},
		{"abc/**", "abc", false},
		{"a*b", "a/b", false},
		{`\*x`, "*x", true},
		{`\*x`, "ax", false},
		{"a**b", "axxb", true},
		{"[unterminated", "[unterminated", true},
	}
	for _, c := range cases {
		if got := Wildmatch(c.pat, c.text); got != c.want {
			t.Errorf("wildmatch(%q, %q) = %v, want %v", c.pat, c.text, got, c.want)
		}
	}
}

func TestIgnoreMatcher(t *testing.T) {
	files := map[string]string{
		"": `# comment
*.log
!keep.log
build/
/root-only.txt
docs/*.html
**/gen/**
trailing\ 
\#hash
\!bang
node_modules
`,
		"sub":     "*.tmp\n!important.tmp\n/anchored\n",
		"sub/inc": "!*.log\n",
		"neg":     "ignored-dir/\n!ignored-dir/file\n",
	}
	m := NewIgnoreMatcher([]byte("secret.txt\n"), func(dir string) []byte {
		if s, ok := files[dir]; ok {
			return []byte(s)
		}
		return nil
	})
	cases := []struct {
		path string
		want bool
	}{
		{"app.log", true},
		{"deep/dir/app.log", true},
		{"keep.log", false},
		{"build/out.bin", true},
		{"src/build/out.bin", true},
		{"build", false}, // a file named build: dir-only pattern
		{"root-only.txt", true},
		{"sub/root-only.txt", false},
		{"docs/a.html", true},
		{"docs/x/a.html", false},
		{"a/gen/b/c.go", true},
		{"trailing ", true},
		{"trailing", false},
		{"#hash", true},
		{"!bang", true},
		{"node_modules/x/package.json", true},
		{"sub/x.tmp", true},
		{"x.tmp", false},
		{"sub/important.tmp", false},
		{"sub/anchored", true},
		{"sub/deeper/anchored", false},
		{"sub/inc/x.log", false}, // a deeper .gitignore re-includes
		{"secret.txt", true},     // .git/info/exclude
		{"neg/ignored-dir/file", true},
		{"main.go", false},
	}
	for _, c := range cases {
		if got := m.Ignored(c.path, false); got != c.want {
			t.Errorf("Ignored(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}

func TestProtectedPaths(t *testing.T) {
	rules := ProtectedRules(append(append([]string(nil), DefaultProtected...), "secrets/", "*.pem"))
	cases := []struct {
		path string
		want bool
	}{
		{".git/hooks/pre-commit", true},
		{"vendor/x/.git/config", true},
		{".github/workflows/x.yml", true},
		{"sub/.husky/pre-push", true},
		{".gitmodules", true},
		{"a/.envrc", true},
		{".vscode/settings.json", true},
		{".cargo/config.toml", true},
		{"crate/.cargo/config", true},
		{".yarnrc.yml", true},
		{"pkg/.npmrc", true},
		{"CLAUDE.md", true},
		{"docs/AGENTS.md", true},
		{".bashrc", true},
		{".shadow.toml", true},
		{"home/.config/fish/config.fish", true},
		{"secrets/key", true},
		{"server.pem", true},
		{"src/main.go", false},
		{"github/workflows.yml", false},
		{"README.md", false},
		{".cargo/registry/x", false},
	}
	for _, c := range cases {
		if got := IsProtected(rules, c.path); got != c.want {
			t.Errorf("isProtected(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}
