// Package testuser gives the tests the ordinary account they re-run shadow as when the suite
// runs as root: the path real users take (an unprivileged user namespace, files they own). A
// root test run creates the account with useradd and runs binaries as it with setpriv.
package testuser

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// Name is the account's name.
const Name = "shadowtest"

// Account is the ordinary account of the tests.
type Account struct {
	Name, Home string
	UID, GID   int
}

// Get returns the account, created with `useradd -m` when missing. It skips t unless the test
// runs as root with setpriv (util-linux) installed: only a root run can make the account and run
// as it.
func Get(t testing.TB) Account {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("not root: the run as an ordinary user is started by a root test run (it creates user " + Name + ")")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	u, err := user.Lookup(Name)
	if err != nil {
		if out, err := exec.Command("useradd", "-m", Name).CombinedOutput(); err != nil {
			t.Fatalf("useradd -m %s: %v: %s", Name, err, out)
		}
		if u, err = user.Lookup(Name); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return Account{Name: Name, Home: u.HomeDir, UID: uid, GID: gid}
}

// Setpriv is what goes before a command to run it as a: setpriv and its arguments.
func (a Account) Setpriv() []string {
	return []string{"setpriv", "--reuid=" + a.Name, "--regid=" + a.Name, "--init-groups"}
}

// Command runs bin with args as a.
func (a Account) Command(bin string, args ...string) *exec.Cmd {
	s := a.Setpriv()
	return exec.Command(s[0], append(append(s[1:], bin), args...)...)
}

// BinaryDir makes a directory that every user may enter (mode 0755, not under t.TempDir(), which
// only root may enter; prefix names it, and it is removed when t ends) holding a copy of the
// running test binary named name, and returns both paths.
func BinaryDir(t testing.TB, prefix, name string) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, name)
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}
