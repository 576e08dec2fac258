package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session"
)

// TestOneLineErrors: each mistake gets exactly one line that says what is wrong and what to do
// (SPEC §1, §10), with the exit status of its kind.
func TestOneLineErrors(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	userCfg := filepath.Join(filepath.Dir(c.state), "config", "shadow", "config.toml")
	projCfg := filepath.Join(p, session.ProjectConfigName)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name          string
		user, project string // config files' content, "" for none
		args          []string
		code          int
		want          string
	}{
		{"/ as the project", "", "", []string{"run", "--project", "/", "--", "true"}, 125,
			"shadow: cannot build the jail: project: / cannot be the project, as the jail would show the whole system writable: run shadow in the project's directory, or give --project DIR"},
		{"a jail that cannot be built, on a host doctor finds fine", "", "", []string{"run", "--ro", sock, "--", "true"}, 125,
			"shadow: cannot build the jail: --ro: " + sock + " is a socket: shadow never lets the jail reach a host socket"},
		{"--publish abc", "", "", []string{"run", "--publish", "abc", "--", "true"}, 2,
			"shadow: --publish: \"abc\" is not a TCP port (1 to 65535) (see `shadow run --help`)"},
		{"--publish 70000", "", "", []string{"run", "--publish", "70000", "--", "true"}, 2,
			"shadow: --publish: \"70000\" is not a TCP port (1 to 65535) (see `shadow run --help`)"},
		{"--max-upper-bytes xyz", "", "", []string{"run", "--max-upper-bytes", "xyz", "--", "true"}, 2,
			"shadow: --max-upper-bytes: \"xyz\" is not a size: use a number of bytes, or one with K, M, G or T, such as 500M or 2G"},
		{"trust-config without a file", "", "", []string{"trust-config"}, 1,
			"shadow: nothing to trust: " + projCfg + " does not exist (write the project's settings there first)"},
		{"project config syntax", "", "timeout = \n", []string{"run", "--", "true"}, 1,
			"shadow: " + projCfg + ":1: timeout: expected value but found '\\n' instead"},
		{"project config duration", "", "no-cache = true\ntimeout = \"5\"\n", []string{"run", "--", "true"}, 1,
			"shadow: " + projCfg + ":2: timeout: \"5\" is not a duration: use a number with a unit, such as 45m or 2h30m"},
		{"user config size", "\nmax-upper-bytes = \"2 gigs\"\n", "", []string{"run", "--", "true"}, 1,
			"shadow: " + userCfg + ":2: max-upper-bytes: \"2 gigs\" is not a size: use a number of bytes, or one with K, M, G or T, such as 500M or 2G"},
		{"user config type", "allow-network = \"yes\"\n", "", []string{"run", "--", "true"}, 1,
			"shadow: " + userCfg + ":1: allow-network: want true or false, not a string"},
		{"user config unknown key", "[keys]\naccept = [\"a\"]\n\n[bogus]\nx = 1\n", "", []string{"run", "--", "true"}, 1,
			"shadow: " + userCfg + ":4: unknown key \"bogus\" (the keys are the flags of `shadow run --help`, protected, unprotected, keys and prefix-key)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for path, content := range map[string]string{userCfg: tc.user, projCfg: tc.project} {
				os.Remove(path)
				if content != "" {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, errs, code := c.run(p, tc.args...)
			if code != tc.code || errs != tc.want+"\n" {
				t.Errorf("shadow %s: exit %d, want %d\n got: %q\nwant: %q\nstdout: %s", strings.Join(tc.args, " "), code, tc.code, errs, tc.want+"\n", out)
			}
		})
	}
	os.Remove(userCfg)
	os.Remove(projCfg)
	if st := git(t, p, "status", "--porcelain"); st != "" {
		t.Errorf("a refused command changed the project:\n%s", st)
	}
}

// TestConfigTakesFlagForms: a project's config with the forms the flags take runs.
func TestConfigTakesFlagForms(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n", session.ProjectConfigName: "max-upper-bytes = \"64M\"\ntimeout = \"10m\"\nprotected = \"deploy/**\"\n"})
	if _, errs, code := c.run(p, "run", "--", "true"); code != 0 {
		t.Fatalf("run with max-upper-bytes = \"64M\": exit %d\n%s", code, errs)
	}
}

// TestCountsInMessages: apply and rollback count one path and one apply in the singular.
func TestCountsInMessages(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	c.must(p, "run", "--", "sh", "-c", "echo 2 >> a.txt")
	out := c.must(p, "apply", "--all", "--yes")
	if !strings.HasPrefix(out, "applied 1 path (apply ") {
		t.Errorf("apply of one path says:\n%s", out)
	}
	out = c.must(p, "apply", "--rollback", "--yes")
	if out != "rolled back 1 apply (1 path restored)\n" {
		t.Errorf("rollback of one apply says %q", out)
	}
}
