package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.Errno(255)
}

// landlockChild: args are "restrict" or "none", the fixture root, an abstract
// socket name and a pid to signal. It applies the rules (or not), tries each
// operation and prints "op errno".
func landlockChild(args []string) int {
	if len(args) != 4 {
		return 2
	}
	root := args[1]
	if args[0] == "restrict" {
		abi, err := RestrictFiles(FileRules{
			ReadExec:  []string{"/usr", "/lib", "/lib64", "/bin"},
			ReadOnly:  []string{filepath.Join(root, "ro")},
			ReadWrite: []string{filepath.Join(root, "rw")},
			Devices:   []string{"/dev/null", filepath.Join(root, "missing")},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		fmt.Printf("abi %d\n", abi)
	}
	try := func(op string, err error) { fmt.Printf("%s %d\n", op, int(errnoOf(err))) }

	_, err := os.ReadFile(filepath.Join(root, "out", "file"))
	try("read-outside", err)
	_, err = os.ReadFile(filepath.Join(root, "ro", "file"))
	try("read-ro", err)
	f, err := os.OpenFile(filepath.Join(root, "ro", "file"), os.O_WRONLY, 0)
	if err == nil {
		f.Close()
	}
	try("write-ro", err)
	try("create-ro", os.WriteFile(filepath.Join(root, "ro", "new"), nil, 0o644))
	try("create-rw", os.WriteFile(filepath.Join(root, "rw", "a", "new"), []byte("x"), 0o644))
	try("rename-across-rw", os.Rename(filepath.Join(root, "rw", "a", "new"), filepath.Join(root, "rw", "b", "new")))
	try("mkdir-rw", os.Mkdir(filepath.Join(root, "rw", "a", "d"), 0o755))
	try("remove-rw", os.Remove(filepath.Join(root, "rw", "b", "new")))
	f, err = os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err == nil {
		f.Close()
	}
	try("write-device", err)
	_, err = os.ReadFile("/etc/passwd")
	try("read-unlisted-system", err)

	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + args[2]})
		unix.Close(fd)
	}
	try("connect-abstract-outside", err)
	pid, _ := strconv.Atoi(args[3])
	try("signal-outside", unix.Kill(pid, 0))
	return 0
}

func landlockFixture(t *testing.T) string {
	root := t.TempDir()
	for _, d := range []string{"ro", "rw/a", "rw/b", "out"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ro/file", "out/file"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runLandlock(t *testing.T, mode string) map[string]syscall.Errno {
	t.Helper()
	root := landlockFixture(t)
	name := fmt.Sprintf("shadow-confine-test-%d-%s", os.Getpid(), mode)
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	out, err := runChild(t, "landlock", nil, mode, root, name, strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	res := map[string]syscall.Errno{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		op, n, _ := strings.Cut(line, " ")
		v, _ := strconv.Atoi(n)
		res[op] = syscall.Errno(v)
	}
	return res
}

// TestRestrictFiles applies rules in a child and checks each kind of access;
// the control child without rules can do all of it, so every denial below is
// Landlock's.
func TestRestrictFiles(t *testing.T) {
	abi := LandlockABI()
	if abi == 0 {
		t.Skip("no Landlock on this kernel")
	}
	control := runLandlock(t, "none")
	for op, e := range control {
		if e != 0 {
			t.Fatalf("control without Landlock: %s failed with %v", op, e)
		}
	}
	got := runLandlock(t, "restrict")
	if int(got["abi"]) != min(abi, maxLandlockABI) {
		t.Errorf("RestrictFiles reported ABI %d, kernel offers %d", got["abi"], abi)
	}
	want := map[string]syscall.Errno{
		"read-outside":         syscall.EACCES,
		"read-ro":              0,
		"write-ro":             syscall.EACCES,
		"create-ro":            syscall.EACCES,
		"create-rw":            0,
		"rename-across-rw":     0, // needs REFER
		"mkdir-rw":             0,
		"remove-rw":            0,
		"write-device":         0,
		"read-unlisted-system": syscall.EACCES,
	}
	if abi >= 6 {
		want["connect-abstract-outside"] = syscall.EPERM
		want["signal-outside"] = syscall.EPERM
	}
	for op, e := range want {
		if got[op] != e {
			t.Errorf("%s: %v (%d), want %v", op, got[op], int(got[op]), e)
		}
	}
}

// TestLandlockABI checks the ABI read from the kernel agrees with the
// version the landlock_create_ruleset syscall reports directly.
func TestLandlockABI(t *testing.T) {
	r, _, e := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	want := int(r)
	if e != 0 {
		want = 0
	}
	if got := LandlockABI(); got != want {
		t.Fatalf("LandlockABI() = %d, kernel says %d", got, want)
	}
}
