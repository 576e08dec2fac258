package sandbox

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEscapeGitConfigSecrets: the host's ~/.gitconfig holds a token in a URL rewrite, a
// credential helper, an alias that runs a command and an include; the jail's ~/.gitconfig holds
// the commit identity alone, resolved through the include as git would.
func TestEscapeGitConfigSecrets(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	j := newTestJail(t)
	writeFiles(t, j.home, map[string]string{
		".gitconfig": "[user]\n\tname = Ada \\\"Dev\\\" Lovelace\n" +
			"[url \"https://x-access-token:ghp_SECRETTOKEN@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
			"[credential]\n\thelper = store --file /home/ada/.SECRETSTORE\n" +
			"[alias]\n\tleak = !cat /SECRETALIAS\n" +
			"[include]\n\tpath = ~/.gitconfig-work\n",
		".gitconfig-work": "[user]\n\temail = ada@example.com\n[http]\n\textraHeader = Authorization: Bearer SECRETHEADER\n",
	})
	if out, err := exec.Command("git", "config", "--file", j.home+"/.gitconfig", "--get", "url.https://x-access-token:ghp_SECRETTOKEN@github.com/.insteadof").CombinedOutput(); err != nil {
		t.Fatalf("control: the host config does not hold the token: %v %s", err, out)
	}
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c",
		`echo '[core]' >> "$HOME/.gitconfig" 2>/dev/null && echo WRITABLE; cat "$HOME/.gitconfig"; echo ---; git config --global --list; echo ---; git config --get user.name; git config --get user.email`)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s%s", res.ExitCode, out, errOut)
	}
	for _, secret := range []string{"WRITABLE", "SECRET", "insteadof", "credential", "alias", "include", "extraheader"} {
		if strings.Contains(strings.ToLower(out), strings.ToLower(secret)) {
			t.Errorf("the jail's git configuration shows %q:\n%s", secret, out)
		}
	}
	if !strings.HasSuffix(out, "Ada \"Dev\" Lovelace\nada@example.com\n") {
		t.Errorf("the jail's git does not have the host's identity:\n%s", out)
	}
}

func TestIdentityConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"core.editor\nvim\x00", ""},
		{"user.name\nA\x00user.email\na@b\x00", "\tname = \"A\"\n\temail = \"a@b\"\n"},
		{"user.name\nOld\x00user.name\nNew\x00", "\tname = \"New\"\n"},
		// A value cannot open a section of its own.
		{"user.name\nx\n[credential]\n\thelper = evil\x00", "\tname = \"x\\n[credential]\\n\\thelper = evil\"\n"},
		{"user.email\na\\\"b\x00", "\temail = \"a\\\\\\\"b\"\n"},
	} {
		got := identityConfig([]byte(c.in))
		if c.want == "" {
			if got != "" {
				t.Errorf("identityConfig(%q) = %q, want nothing", c.in, got)
			}
			continue
		}
		if _, body, _ := strings.Cut(got, "[user]\n"); body != c.want {
			t.Errorf("identityConfig(%q) body = %q, want %q", c.in, body, c.want)
		}
	}
}
