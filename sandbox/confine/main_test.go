package confine

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// childEnv selects the mode of a re-executed test binary.
const childEnv = "SHADOW_CONFINE_TEST_CHILD"

// TestMain dispatches re-executed children: the confinement under test is
// applied to a child process, never to the test binary itself.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func childMain(mode string, args []string) int {
	switch mode {
	case "try-syscall":
		return trySyscallChild(args)
	case "tsync":
		return tsyncChild(args)
	case "x32":
		return x32Child(args)
	case "landlock":
		return landlockChild(args)
	}
	os.Stderr.WriteString("unknown child mode " + mode + "\n")
	return 2
}

// nsAttr puts a child in new user, mount and network namespaces as root of
// the user namespace, mapped to the caller. There it holds every capability
// over its own namespaces: syscalls get past their permission checks, so
// that only the filter can turn them into EPERM.
func nsAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
}

// runChild re-executes the test binary in mode with args and returns its
// stdout; attr may be nil.
func runChild(t *testing.T, mode string, attr *syscall.SysProcAttr, args ...string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.SysProcAttr = attr
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil && stderr.Len() > 0 {
		t.Logf("child %s %v stderr: %s", mode, args, stderr.String())
	}
	return stdout.String(), err
}
