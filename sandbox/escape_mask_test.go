package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// maskedEnv names, in the environment of TestUnprivileged's re-run, the
// files its root half planted for the unprivileged user's group.
const maskedEnv = "SHADOW_TEST_MASKED"

// unprivFixtures run as root in TestUnprivileged before it re-runs the
// jail tests as the user of uid and gid: they make what only root can make
// and return the environment that tells the re-run where it is.
var unprivFixtures = []func(t *testing.T, uid, gid int) []string{
	func(t *testing.T, _, gid int) []string {
		return []string{maskedEnv + "=" + strings.Join(plantUnreadable(t, gid, false), ":")}
	},
	func(t *testing.T, uid, gid int) []string {
		return []string{maskDirEnv + "=" + usrLocalDir(t, uid, gid)}
	},
}

// maskDirEnv names, in the environment of TestUnprivileged's re-run, the
// directory under /usr/local its root half made for the unprivileged user.
const maskDirEnv = "SHADOW_TEST_MASKDIR"

// usrLocalDir makes, as root, a directory of mode 0755 under /usr/local (a
// tree shadow caches) owned by uid and gid, removed when the test ends.
func usrLocalDir(t *testing.T, uid, gid int) string {
	t.Helper()
	if err := os.MkdirAll("/usr/local", 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp("/usr/local", "shadowtest-cache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { openDirs(d); os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, uid, gid); err != nil {
		t.Fatal(err)
	}
	return d
}

// plantUnreadable makes, as root, system files that others may not read
// but members of group gid may, and returns the paths a reader would open:
// a 0640 file in /etc, a file in a 0750 directory of /etc, a file in a
// 0751 directory (others may enter but not list it), a 0640 file under
// /usr (a tree shadow caches) and, with rootOnly, a 0600 file in /etc.
// Each is removed when the test ends.
func plantUnreadable(t *testing.T, gid int, rootOnly bool) []string {
	t.Helper()
	var out []string
	file := func(dir, pattern string, mode os.FileMode) string {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f.Name()) })
		if _, err := f.WriteString("SECRET\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chown(f.Name(), 0, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f.Name(), mode); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	out = append(out, file("/etc", "shadowtest-mask-*.conf", 0o640))
	for _, mode := range []os.FileMode{0o750, 0o751} {
		d, err := os.MkdirTemp("/etc", "shadowtest-mask-*.d")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		inner := filepath.Join(d, "key")
		if err := os.WriteFile(inner, []byte("SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 0, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		out = append(out, inner)
	}
	usr := "/usr/local/share"
	if _, err := os.Stat(usr); err != nil {
		usr = "/usr/share"
	}
	out = append(out, file(usr, "shadowtest-mask-*.conf", 0o640))
	if rootOnly {
		out = append(out, file("/etc", "shadowtest-mask-*.key", 0o600))
	}
	return out
}

// TestEscapeReadRootOnlySystemFiles: whoever runs shadow, nothing of the
// bound system trees that others may not read can be read in the jail,
// though the same user reads it on the host: not as root (owner bits need
// no capability), not through a group.
func TestEscapeReadRootOnlySystemFiles(t *testing.T) {
	var planted []string
	switch {
	case os.Getuid() == 0:
		planted = plantUnreadable(t, 0, true)
	case os.Getenv(maskedEnv) != "":
		planted = strings.Split(os.Getenv(maskedEnv), ":")
	default:
		t.Log("not root and not started by TestUnprivileged: only the files the system has are tried")
	}
	for _, p := range planted {
		if _, err := os.ReadFile(p); err != nil {
			t.Fatalf("control: the host cannot read the planted %s: %v", p, err)
		}
	}
	hidden := append([]string{"/etc/shadow", "/etc/gshadow"}, planted...)
	if os.Getuid() == 0 {
		for _, p := range hidden[:2] {
			if _, err := os.ReadFile(p); err != nil {
				t.Fatalf("control: root cannot read %s on the host: %v", p, err)
			}
		}
	}
	readable := []string{"/etc/passwd"}
	if _, err := os.Stat("/etc/hostname"); err == nil {
		readable = append(readable, "/etc/hostname")
	}
	var want []string
	for range hidden {
		want = append(want, "EACCES")
	}
	for range readable {
		want = append(want, "ok")
	}
	j := newTestJail(t)
	p := j.policy()
	// A cache of the test's own: the planted file under /usr is found by a
	// walk of this run, not missed by a scan made before it was planted.
	p.MaskCache = t.TempDir()
	paths := append(append([]string{}, hidden...), readable...)
	got := j.try(t, p, "read", "P="+strings.Join(paths, ":"))
	if !slices.Equal(got, want) {
		t.Errorf("reading in the jail (as uid %d):\n%s", os.Getuid(), pairs(paths, got, want))
	}
}

// TestEscapeMaskedParentOfProject: a project, a $HOME and a --ro file
// inside a directory others may not enter are shown, and nothing else of
// that directory is.
func TestEscapeMaskedParentOfProject(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make a directory under /opt")
	}
	if err := os.MkdirAll("/opt", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/opt", "shadowtest-mask-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { openDirs(dir); os.RemoveAll(dir) })
	j := newTestJail(t)
	p := j.policy()
	p.Project = filepath.Join(dir, "project")
	p.Home = filepath.Join(dir, "home")
	shown := filepath.Join(dir, "shown.txt")
	p.ReadOnly = append(p.ReadOnly, shown)
	p.MaskCache = t.TempDir()
	writeFiles(t, dir, map[string]string{"project/a.txt": "a\n", "home/.profile": "x\n", "shown.txt": "shown\n", "secret": "SECRET\n"})
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(p.Project, "a.txt"), shown, filepath.Join(dir, "secret"), filepath.Join(p.Home, ".profile")}
	// The project and the --ro file are shown; the sibling is not there;
	// $HOME is the jail's own, empty.
	want := []string{"ok", "ok", "ENOENT", "ENOENT"}
	if got := j.try(t, p, "read", "P="+strings.Join(paths, ":")); !slices.Equal(got, want) {
		t.Errorf("reading in the jail:\n%s", pairs(paths, got, want))
	}
}

// pairs lays out what each path gave against what it should have.
func pairs(paths, got, want []string) string {
	var b strings.Builder
	for i, p := range paths {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		mark := ""
		if g != w {
			mark = "   <- want " + w
		}
		b.WriteString("  " + p + ": " + g + mark + "\n")
	}
	return b.String()
}

// TestEscapeMaskCacheStale: what becomes unreadable to others under a cached
// tree after its scan is hidden in the very next run. With the scan of /usr
// cached, the test makes (in a directory of its own under /usr/local, the
// reader being its owner, who could read each without a mask) owner-only
// files 1 to 4 levels below /usr/local, a new 0700 directory, and closes an
// existing directory (chmod 0700). Directly under /usr/local (root only) is
// what a top directory's mtime already told; the rest it did not.
func TestEscapeMaskCacheStale(t *testing.T) {
	var dir string
	switch {
	case os.Getuid() == 0:
		dir = usrLocalDir(t, 0, 0)
	case os.Getenv(maskDirEnv) != "":
		dir = os.Getenv(maskDirEnv)
	default:
		t.Skip("needs a directory of its own under /usr/local: run as root, or started by TestUnprivileged")
	}
	writeFiles(t, dir, map[string]string{"a/b/closed/file": "SECRET\n", "a/b/c/.keep": ""})
	var systemDirs []string
	for _, g := range systemDirGlobs {
		m, _ := filepath.Glob(g)
		systemDirs = append(systemDirs, m...)
	}
	// The cache, built until a walk sees no directory change close to it
	// (the test's own, just made, or another process's).
	cacheDir := t.TempDir()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		newMaskStore(cacheDir).systemMasks(systemDirs)
		s, ok := loadMaskCache(cacheDir).Trees["/usr"]
		if !ok || s.Entries < defaultSmallTree {
			t.Skip("/usr is too small here to be cached")
		}
		if s.state("/usr", time.Now(), newMaskStore(cacheDir).maxAge) == scanFresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the scan of /usr never became fresh")
		}
	}

	secret := func(path string, mode os.FileMode) string {
		t.Helper()
		if err := os.WriteFile(path, []byte("SECRET\n"), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	hidden := []string{
		secret(filepath.Join(dir, "f2"), 0o600),
		secret(filepath.Join(dir, "a", "f3"), 0o600),
		secret(filepath.Join(dir, "a", "b", "f4"), 0o400),
		secret(filepath.Join(dir, "a", "b", "c", "f5"), 0o640),
	}
	if err := os.Mkdir(filepath.Join(dir, "a", "new"), 0o700); err != nil {
		t.Fatal(err)
	}
	hidden = append(hidden, secret(filepath.Join(dir, "a", "new", "file"), 0o644))
	if err := os.Chmod(filepath.Join(dir, "a", "b", "closed"), 0o700); err != nil {
		t.Fatal(err)
	}
	hidden = append(hidden, filepath.Join(dir, "a", "b", "closed", "file"))
	if os.Getuid() == 0 {
		f, err := os.CreateTemp("/usr/local", "shadowtest-cache-*.key")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f.Name()) })
		f.Close()
		hidden = append(hidden, secret(f.Name(), 0o600))
	}
	readable := secret(filepath.Join(dir, "a", "b", "c", "readable"), 0o644)
	for _, p := range append(hidden, readable) {
		if _, err := os.ReadFile(p); err != nil {
			t.Fatalf("control: the host cannot read %s: %v", p, err)
		}
	}

	j := newTestJail(t)
	p := j.policy()
	p.MaskCache = cacheDir
	paths := append(append([]string{}, hidden...), readable)
	var want []string
	for range hidden {
		want = append(want, "EACCES")
	}
	want = append(want, "ok")
	if got := j.try(t, p, "read", "P="+strings.Join(paths, ":")); !slices.Equal(got, want) {
		t.Errorf("reading in the jail (as uid %d) the run after the scan:\n%s", os.Getuid(), pairs(paths, got, want))
	}
}
