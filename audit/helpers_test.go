package audit

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Fake secrets are assembled at run time so no token-shaped literal sits in the tree.
var (
	fakeGitHubToken = "gh" + "p_" + strings.Repeat("A1b2", 9)
	fakeAWSKey      = "AK" + "IA" + strings.Repeat("Q", 16)
)

func deniedProbe() ProbeResult {
	return ProbeResult{Denied: true, Detail: "listing / refused with EACCES"}
}
func allowedProbe() ProbeResult { return ProbeResult{Denied: false, Detail: "listing / allowed"} }

// fixtureEnv returns the environment view of testdata/env/NAME.
func fixtureEnv(t testing.TB, name string) Env {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("testdata", "env", name))
	if err != nil {
		t.Fatal(err)
	}
	e := Env{Root: root, Home: "/home/u", Vars: []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "TERM=xterm-256color", "LANG=C.UTF-8", "USER=u"}}
	switch name {
	case "jail":
		e.LandlockProbe = deniedProbe
	case "exposed":
		e.LandlockProbe = allowedProbe
		e.Vars = append(e.Vars,
			"LD_PRELOAD=/usr/lib/libinject.so",
			"NODE_OPTIONS=--max-old-space-size=4096 --require /tmp/hook.js",
			"npm_config_registry=https://registry.example.invalid/",
			"AWS_SECRET_ACCESS_KEY=placeholder",
			"DEPLOY_CRED="+fakeGitHubToken,
			"SOME_ID="+fakeAWSKey,
			"AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/secrets/eks/token",
			"DOCKER_HOST=tcp://10.1.2.3:2375",
			"XDG_RUNTIME_DIR=/run/user/0",
		)
	}
	return e
}

// copyProject copies testdata/projects/NAME into a temporary directory, so
// tests can add .git and no Cargo configuration of the checkout's parents applies.
func copyProject(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("testdata", "projects", name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, in); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// emptyProject is a project directory with nothing in it.
func emptyProject(t testing.TB) string {
	t.Helper()
	return t.TempDir()
}

func verify(t testing.TB, env Env, project string, p Profile, domains ...Domain) Report {
	t.Helper()
	r, err := Verify(context.Background(), Options{Env: env, Project: project, Profile: p, Domains: domains}, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return r
}

func finding(t testing.TB, r Report, id string) Finding {
	t.Helper()
	f, ok := r.Finding(id)
	if !ok {
		t.Fatalf("%s not in report", id)
	}
	return f
}

// failedIDs lists the failed rules of a report, sorted.
func failedIDs(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		if f.Result == Fail {
			out = append(out, f.Rule.ID)
		}
	}
	sort.Strings(out)
	return out
}

func evidenceText(f Finding) string {
	var b strings.Builder
	for _, e := range f.Evidence {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
