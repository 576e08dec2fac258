package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxPackageInit is what the package initialisation of one of shadow's own packages may
// allocate. Every shadow process pays it before main: the CLI, and the jail's PID 1, which is
// this binary re-executed.
const maxPackageInit = 64 << 10

// TestStartupInit: no package of shadow's own allocates more than maxPackageInit at its
// initialisation (a regexp compiled there, a table built), as GODEBUG=inittrace=1 counts it for
// every package a shadow process initialises.
func TestStartupInit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "version")
	cmd.Env = append(os.Environ(), "SHADOW_TEST_CLI=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shadow version: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`(?m)^init (\S+) @.* ms clock, (\d+) bytes, \d+ allocs$`)
	own := 0
	for _, m := range line.FindAllStringSubmatch(string(out), -1) {
		pkg := m[1]
		if !strings.HasPrefix(pkg, "github.com/shadow-sandbox/shadow/") {
			continue
		}
		own++
		if n, _ := strconv.Atoi(m[2]); n > maxPackageInit {
			t.Errorf("package %s allocates %d bytes at its initialisation, more than %d", pkg, n, maxPackageInit)
		}
	}
	if own < 5 {
		t.Fatalf("inittrace listed %d of shadow's packages:\n%s", own, out)
	}
}
