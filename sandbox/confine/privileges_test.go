package confine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// dropCapsChild drops privileges (args[0] "drop") or not ("none"), then
// executes the test binary again to report what the new program holds.
func dropCapsChild(args []string) int {
	runtime.LockOSThread()
	if len(args) == 1 && args[0] == "drop" {
		if err := DropPrivileges(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if err := SetNonDumpable(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		// After exec, dumpable is reset; report it here.
		d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		fmt.Printf("Dumpable %d\n", d)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, childEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, childEnv+"=capreport")
	err = syscall.Exec(exe, []string{exe}, env)
	fmt.Fprintln(os.Stderr, "exec:", err)
	return 3
}

// capReportChild prints the capability sets, no_new_privs and securebits of
// a freshly executed program.
func capReportChild() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (strings.HasPrefix(k, "Cap") || k == "NoNewPrivs" || k == "Uid") {
			fmt.Printf("%s %s\n", k, strings.Join(strings.Fields(v), ","))
		}
	}
	sb, _ := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	fmt.Printf("Securebits %d\n", sb)
	// Trying to raise a capability back must fail.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: 1 << unix.CAP_SYS_ADMIN, Permitted: 1 << unix.CAP_SYS_ADMIN}}
	fmt.Printf("Capset %d\n", int(errnoOf(unix.Capset(&hdr, &data[0]))))
	return 0
}

func capReport(t *testing.T, attr *syscall.SysProcAttr, mode string) map[string]string {
	t.Helper()
	out, err := runChild(t, "dropcaps", attr, mode)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		res[k] = v
	}
	return res
}

func checkDropped(t *testing.T, got map[string]string) {
	t.Helper()
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if got[k] != "0000000000000000" {
			t.Errorf("after exec %s = %s, want 0", k, got[k])
		}
	}
	if got["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %s, want 1", got["NoNewPrivs"])
	}
	sb, _ := strconv.Atoi(got["Securebits"])
	if sb&lockedSecurebits != lockedSecurebits {
		t.Errorf("securebits = %#x, want %#x set", sb, lockedSecurebits)
	}
	if got["Capset"] != strconv.Itoa(int(syscall.EPERM)) {
		t.Errorf("raising CAP_SYS_ADMIN again: errno %s, want EPERM", got["Capset"])
	}
	if got["Dumpable"] != "0" {
		t.Errorf("dumpable = %s, want 0", got["Dumpable"])
	}
}

// TestDropPrivilegesUserNS: root of a new user namespace holds every
// capability, and keeps them across exec; after DropPrivileges the executed
// program holds none and cannot raise one.
func TestDropPrivilegesUserNS(t *testing.T) {
	attr := nsAttr()
	control := capReport(t, attr, "none")
	if control["Uid"] == "" || !strings.HasPrefix(control["Uid"], "0,") {
		t.Fatalf("control child is not uid 0 in its namespace: %v", control)
	}
	if control["CapEff"] == "0000000000000000" || control["CapBnd"] == "0000000000000000" {
		t.Fatalf("control child has no capabilities to drop: %v", control)
	}
	got := capReport(t, nsAttr(), "drop")
	if !strings.HasPrefix(got["Uid"], "0,") {
		t.Errorf("uid changed: %s", got["Uid"])
	}
	checkDropped(t, got)
}

// TestDropPrivilegesHostRoot: as real root, SECBIT_NOROOT stops exec from
// granting capabilities back to uid 0.
func TestDropPrivilegesHostRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if control := capReport(t, attr, "none"); control["CapEff"] == "0000000000000000" {
		t.Fatalf("control root child has no capabilities: %v", control)
	}
	checkDropped(t, capReport(t, attr, "drop"))
}
