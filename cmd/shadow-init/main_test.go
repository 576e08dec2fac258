package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestLinksNoApp: shadow-init, built as make builds it (the Makefile's INIT_TAGS), links the
// jail's side of the sandbox and none of the app: no package of the app's (session, ui, audit,
// diffview, the CLI's own), none of the host's heavy ones (libseccomp, the proxy, net/http, TLS
// and X.509, the TUI), and C code only where PID 1 runs it: the sandbox's exec stage, psx
// (Landlock on every thread) and the cgo runtime, which link no library but libc.
func TestLinksNoApp(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Skipf("no Makefile: %v", err)
	}
	m := regexp.MustCompile(`(?m)^INIT_TAGS := (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile sets no INIT_TAGS")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-tags", string(m[1]), "-deps", "-json=ImportPath,CgoFiles,CgoLDFLAGS,CgoPkgConfig", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"github.com/shadow-sandbox/shadow/session", "github.com/shadow-sandbox/shadow/ui",
		"github.com/shadow-sandbox/shadow/audit", "github.com/shadow-sandbox/shadow/diffview",
		"github.com/shadow-sandbox/shadow/sandbox/proxy", "github.com/shadow-sandbox/shadow/sandbox/doctor",
		"github.com/shadow-sandbox/shadow/sandbox/preset", "github.com/seccomp/libseccomp-golang",
		"net/http", "crypto/tls", "crypto/x509", "os/user", "charm.land/", "github.com/charmbracelet/",
		"github.com/spf13/cobra",
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath   string
			CgoFiles     []string
			CgoLDFLAGS   []string
			CgoPkgConfig []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		for _, f := range forbidden {
			if p.ImportPath == f || strings.HasPrefix(p.ImportPath, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("shadow-init links %s", p.ImportPath)
			}
		}
		cgoOK := map[string]bool{"github.com/shadow-sandbox/shadow/sandbox": true,
			"kernel.org/pub/linux/libs/security/libcap/psx": true, "runtime/cgo": true}[p.ImportPath]
		libcOnly := len(p.CgoPkgConfig) == 0 && (len(p.CgoLDFLAGS) == 0 || strings.Join(p.CgoLDFLAGS, " ") == "-lpthread")
		if len(p.CgoFiles) > 0 && (!cgoOK || !libcOnly) {
			t.Errorf("shadow-init links C code of %s (LDFLAGS %v, pkg-config %v)", p.ImportPath, p.CgoLDFLAGS, p.CgoPkgConfig)
		}
	}
	if n < 10 {
		t.Fatalf("go list listed %d packages:\n%s", n, out)
	}
}
