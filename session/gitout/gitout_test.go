package gitout

import "testing"

// A command line in a commit message is one line a shell would run as given: an argument that a
// shell would split or expand is quoted, and a byte a terminal acts on is spelled out.
func TestArgvText(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"claude", "--resume", "abc"}, "claude --resume abc"},
		{[]string{"sh", "-c", "echo hi > f"}, "sh -c 'echo hi > f'"},
		{[]string{"printf", "it's"}, `printf 'it'\''s'`},
		{[]string{"x", ""}, "x ''"},
		{[]string{"echo", "$HOME", "*.go"}, "echo '$HOME' '*.go'"},
		{[]string{"echo", "\x1b[31mred"}, `"echo '\x1b[31mred'"`},
	} {
		if got := argvText(tc.argv); got != tc.want {
			t.Errorf("argvText(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// git can hold no path inside a .git directory, in any case; a name that only starts with .git
// is an ordinary path.
func TestInGitDir(t *testing.T) {
	for p, want := range map[string]bool{
		".git/config": true, "sub/.git/hooks/pre-commit": true, ".GIT/x": true, "a/.Git": true,
		".gitignore": false, "a/.github/workflows/ci.yml": false, "git/x": false, "a.git/b": false,
	} {
		if got := inGitDir(p); got != want {
			t.Errorf("inGitDir(%q) = %v, want %v", p, got, want)
		}
	}
	if blobMode(0o755) != "100755" || blobMode(0o644) != "100644" || blobMode(0o744) != "100755" {
		t.Error("blobMode: an owner-executable file is 100755, any other 100644")
	}
}
