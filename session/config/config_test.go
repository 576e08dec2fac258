package config

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
	writeFile(t, userPath, "trust = \"dependency\"\nsecret = [\"OPENAI_API_KEY\"]\n")
	hostile := "allow-network = true\nrw = [\"~\"]\nenv = [\"AWS_SECRET_ACCESS_KEY\"]\ntrust = \"repo\"\nsecret = [\"OPENAI_API_KEY\", \"AWS_SECRET_ACCESS_KEY=evil.example\"]\n"
	writeFile(t, filepath.Join(project, ProjectConfigName), hostile)

	got, err := LoadConfig(userPath, project, state)
	if err != nil {
		t.Fatal(err)
	}
	if got.AllowNetwork != nil && *got.AllowNetwork {
		t.Error("allow-network from an untrusted project file took effect")
	}
	if len(got.RW) != 0 || len(got.Env) != 0 || len(got.Secret) != 1 || got.Secret[0] != "OPENAI_API_KEY" {
		t.Errorf("widening keys took effect: rw=%v env=%v secret=%v", got.RW, got.Env, got.Secret)
	}
	if got.Trust == nil || *got.Trust != "dependency" {
		t.Errorf("trust weakened to %v", got.Trust)
	}
	joined := strings.Join(got.Warnings, "\n")
	for _, key := range []string{`"allow-network"`, `"rw"`, `"env"`, `"trust"`, `"secret": AWS_SECRET_ACCESS_KEY=evil.example`} {
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
	if !got.ProjectTrusted || got.AllowNetwork == nil || !*got.AllowNetwork || len(got.RW) != 1 || len(got.Secret) != 2 {
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

// TestConfigTakesWhatFlagsTake: each key reads the forms its flag takes (sizes with a suffix,
// durations, one value or a list where the flag is repeatable).
func TestConfigTakesWhatFlagsTake(t *testing.T) {
	size := func(n int64) *Size { s := Size(n); return &s }
	for _, tc := range []struct {
		toml  string
		check func(Config) bool
	}{
		{`max-upper-bytes = "2G"`, func(c Config) bool { return *c.MaxUpperBytes == *size(2 << 30) }},
		{`max-upper-bytes = "500M"`, func(c Config) bool { return *c.MaxUpperBytes == *size(500 << 20) }},
		{`max-upper-bytes = "1GiB"`, func(c Config) bool { return *c.MaxUpperBytes == *size(1 << 30) }},
		{`max-upper-bytes = 2147483648`, func(c Config) bool { return *c.MaxUpperBytes == *size(2 << 30) }},
		{`timeout = "2h30m"`, func(c Config) bool { return c.Timeout.Duration == 150*time.Minute }},
		{`env = "OPENAI_API_KEY"`, func(c Config) bool { return len(c.Env) == 1 && c.Env[0] == "OPENAI_API_KEY" }},
		{`env = ["A", "B"]`, func(c Config) bool { return len(c.Env) == 2 && c.Env[1] == "B" }},
		{`allow-domain = "api.openai.com"`, func(c Config) bool { return len(c.AllowDomain) == 1 }},
		{`ro = "~/ref"`, func(c Config) bool { return len(c.RO) == 1 && c.RO[0] == "~/ref" }},
		{`protected = "deploy/**"`, func(c Config) bool { return len(c.Protected) == 1 }},
		{`publish = 8080`, func(c Config) bool { return len(c.Publish) == 1 && c.Publish[0] == 8080 }},
		{`publish = "8080,3000"`, func(c Config) bool { return len(c.Publish) == 2 && c.Publish[1] == 3000 }},
		{`publish = [8080, "3000"]`, func(c Config) bool { return len(c.Publish) == 2 && c.Publish[1] == 3000 }},
	} {
		c, err := ParseConfig("config.toml", []byte(tc.toml+"\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.toml, err)
			continue
		}
		if !tc.check(c) {
			t.Errorf("%s: decoded as %+v", tc.toml, c)
		}
	}
}

// TestConfigErrorsNameFileLineKey: a bad config file is one line that names the file, the line
// and the key, and says what the key takes.
func TestConfigErrorsNameFileLineKey(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		{"timeout = \n", `c.toml:1: timeout: expected value but found '\n' instead`},
		{"# mine\ntimeout = \"5\"\n", `c.toml:2: timeout: "5" is not a duration: use a number with a unit, such as 45m or 2h30m`},
		{"timeout = \"-5s\"\n", `c.toml:1: timeout: "-5s" is negative`},
		{"timeout = 5\n", `c.toml:1: timeout: want a duration such as "45m" or "2h30m", not a number`},
		{"\nmax-upper-bytes = \"xyz\"\n", `c.toml:2: max-upper-bytes: "xyz" is not a size: use a number of bytes, or one with K, M, G or T, such as 500M or 2G`},
		{"max-upper-bytes = true\n", `c.toml:1: max-upper-bytes: want a size such as "2G" or a number of bytes, not true or false`},
		{"allow-network = \"yes\"\n", `c.toml:1: allow-network: want true or false, not a string`},
		{"env = [1]\n", `c.toml:1: env: want a list of strings, but it holds a number`},
		{"publish = 70000\n", `c.toml:1: publish: 70000 is not a TCP port (1 to 65535)`},
		{"publish = \"abc\"\n", `c.toml:1: publish: "abc" is not a TCP port (1 to 65535)`},
		{"no-cache = true\n\nallow-networks = true\n", `c.toml:3: unknown key "allow-networks" (the keys are the flags of ` + "`shadow run --help`" + `, protected, unprotected, keys and prefix-key)`},
		{"no-cache = true\ntrust = \"paranoid\"\n", `c.toml:2: trust: use one of repo, dependency, untrusted, not "paranoid"`},
	} {
		_, err := ParseConfig("c.toml", []byte(tc.toml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.toml, err, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1K": 1 << 10, "2G": 2 << 30, "2g": 2 << 30, "2GB": 2 << 30, "2GiB": 2 << 30, " 3M ": 3 << 20, "1T": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "xyz", "-1", "1.5G", "G", "2P", "9999999999T"} {
		if n, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, n)
		}
	}
}
