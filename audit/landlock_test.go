package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

const landlockChildEnv = "SHADOW_AUDIT_LANDLOCK_PROBE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(landlockChildEnv) == "1" {
		landlockChild()
		return
	}
	os.Exit(m.Run())
}

// landlockChild confines itself the way shadow's jail does (rules on system
// directories and /tmp, none on "/") and reports what the default probe sees.
func landlockChild() {
	err := landlock.V1.BestEffort().RestrictPaths(
		landlock.RODirs("/usr", "/etc", "/proc"),
		landlock.RWDirs(os.TempDir()),
	)
	if err != nil {
		fmt.Println(`{"err":"` + err.Error() + `"}`)
		os.Exit(2)
	}
	pr := DefaultLandlockProbe()
	errText := ""
	if pr.Err != nil {
		errText = pr.Err.Error()
	}
	env008 := ""
	if r, err := Verify(context.Background(), Options{Env: LiveEnv(), Project: os.TempDir(), Domains: []Domain{DomainEnv}}, nil); err == nil {
		if f, ok := r.Finding("ENV008"); ok {
			env008 = string(f.Result)
		}
	}
	b, _ := json.Marshal(map[string]any{"denied": pr.Denied, "detail": pr.Detail, "err": errText, "env008": env008})
	fmt.Println(string(b))
	os.Exit(0)
}

func landlockABI() int {
	const createRulesetVersion = 1 << 0
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(nil)), 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// TestDefaultLandlockProbeDetectsLandlock confines a child process with
// Landlock on this kernel and checks the probe sees it by effect, while the
// unconfined test process is not reported as confined.
func TestDefaultLandlockProbeDetectsLandlock(t *testing.T) {
	if landlockABI() < 1 {
		t.Skip("kernel without Landlock: the probe cannot be exercised here")
	}
	if pr := DefaultLandlockProbe(); pr.Denied || pr.Err != nil {
		t.Fatalf("unconfined process: %+v", pr)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), landlockChildEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	var got struct {
		Denied bool
		Detail string
		Err    string
		ENV008 string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if !got.Denied || got.Err != "" || got.ENV008 != "pass" {
		t.Fatalf("Landlock-confined child: %+v", got)
	}
}
