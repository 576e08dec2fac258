package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHostileProjectConfigIgnoredUntilTrusted(t *testing.T) {
	dir := t.TempDir()
	userPath := filepath.Join(dir, "config", "config.toml")
	state := filepath.Join(dir, "state")
	project := filepath.Join(dir, "project")
	writeFile(t, userPath, "trust = \"dependency\"\n")
	hostile := "allow-network = true\nrw = [\"~\"]\nenv = [\"AWS_SECRET_ACCESS_KEY\"]\ntrust = \"repo\"\n"
	writeFile(t, filepath.Join(project, ProjectConfigName), hostile)

	got, err := LoadConfig(userPath, project, state)
	if err != nil {
		t.Fatal(err)
	}
	if got.AllowNetwork != nil && *got.AllowNetwork {
		t.Error("allow-network from an untrusted project file took effect")
	}
	if len(got.RW) != 0 || len(got.Env) != 0 {
		t.Errorf("widening keys took effect: rw=%v env=%v", got.RW, got.Env)
	}
	if got.Trust == nil || *got.Trust != "dependency" {
		t.Errorf("trust weakened to %v", got.Trust)
	}
	joined := strings.Join(got.Warnings, "\n")
	for _, key := range []string{`"allow-network"`, `"rw"`, `"env"`, `"trust"`} {
		if !strings.Contains(joined, key) {
			t.Errorf("no warning for %s in:\n%s", key, joined)
		}
	}

	if _, err := TrustConfig(state, filepath.Join(project, ProjectConfigName)); err != nil {
		t.Fatal(err)
	}
	got, err = LoadConfig(userPath, project, state)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ProjectTrusted || got.AllowNetwork == nil || !*got.AllowNetwork || len(got.RW) != 1 {
		t.Errorf("trusted file not applied: %+v", got)
	}
	if len(got.Warnings) != 0 {
		t.Errorf("warnings for a trusted file: %v", got.Warnings)
	}

	// Any edit makes the file untrusted again.
	writeFile(t, filepath.Join(project, ProjectConfigName), hostile+"publish = [8080]\n")
	got, err = LoadConfig(userPath, project, state)
	if err != nil {
		t.Fatal(err)
	}
	if got.ProjectTrusted || (got.AllowNetwork != nil && *got.AllowNetwork) || len(got.Publish) != 0 {
		t.Errorf("edited file still trusted: %+v", got)
	}
}

func TestProjectConfigNarrows(t *testing.T) {
	tru := true
	ten := Duration{10 * time.Minute}
	user := Config{
		AllowNetwork: &tru,
		AllowDomain:  []string{"api.openai.com", "*.anthropic.com"},
		Timeout:      &ten,
		Protected:    []string{"secrets/"},
	}
	project, err := ParseConfig("p", []byte(`
allow-network = false
allow-domain = ["api.openai.com", "evil.example"]
trust = "untrusted"
timeout = "1m"
no-cache = true
protected = ["deploy/**"]
`))
	if err != nil {
		t.Fatal(err)
	}
	got, warn := NarrowProject(user, project)
	if *got.AllowNetwork {
		t.Error("allow-network=false did not narrow")
	}
	if len(got.AllowDomain) != 1 || got.AllowDomain[0] != "api.openai.com" {
		t.Errorf("domains = %v, want only api.openai.com", got.AllowDomain)
	}
	if *got.Trust != "untrusted" || got.Timeout.Duration != time.Minute || !*got.NoCache {
		t.Errorf("stricter settings not applied: %+v", got)
	}
	if len(got.Protected) != 2 {
		t.Errorf("protected = %v", got.Protected)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "evil.example") {
		t.Errorf("warnings = %v", warn)
	}
	// A longer timeout than the user's is a widening.
	longer, _ := ParseConfig("p", []byte("timeout = \"1h\"\n"))
	got, warn = NarrowProject(user, longer)
	if got.Timeout.Duration != 10*time.Minute || len(warn) != 1 {
		t.Errorf("longer timeout: %v %v", got.Timeout, warn)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for name, in := range map[string]string{
		"unknown key": "alow-network = true\n",
		"bad trust":   "trust = \"yolo\"\n",
		"not toml":    "{\"allow-network\": true}",
		"bad timeout": "timeout = \"soon\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig(".shadow.toml", []byte(in))
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}
