package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/testmnt"
)

// TestFullStateDisk puts shadow's state directory on a 3 MB tmpfs and lets an agent write 8 MB:
// the run says that its staging is incomplete, names the state directory and what to do, and
// fails; the session is marked incomplete in sessions and diff; run and apply fail in one line
// that names the state directory, never a temporary file; discard works on the full disk and
// frees it. The test re-runs itself in a private mount namespace (unshare -m) so that the tmpfs
// goes away with it.
func TestFullStateDisk(t *testing.T) {
	if !testmnt.Private(t) {
		return
	}
	c := newCLI(t)
	testmnt.Tmpfs(t, c.state, "3m")
	root := filepath.Join(c.state, "shadow")
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	oneLine := func(what, errs string) {
		t.Helper()
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, root) || !strings.Contains(errs, "shadow discard") ||
			strings.Contains(errs, ".tmp") || strings.Contains(errs, "session.json") || strings.Contains(errs, "runs.jsonl") {
			t.Errorf("%s on a full state disk: want one line naming %s and `shadow discard`, not a file:\n%s", what, root, errs)
		}
	}

	_, errs, code := c.run(p, "run", "--", "sh", "-c", "echo small > s.txt; head -c 8000000 /dev/urandom > big.bin; echo after > z.txt")
	if code == 0 {
		t.Errorf("a run whose staging ran out of space exited 0:\n%s", errs)
	}
	for _, want := range []string{"not everything the run wrote is staged", "state directory is " + root, "is marked incomplete", "shadow discard"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the run's summary does not say %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, ".tmp") || strings.Contains(errs, "runs.jsonl") || strings.Contains(errs, "session.json") {
		t.Errorf("the run's summary names a file of the state directory rather than the directory:\n%s", errs)
	}

	out, errs, code := c.run(p, "sessions")
	if code != 0 || !strings.Contains(out, "open (incomplete)") {
		t.Errorf("sessions on a full state disk: exit %d\n%s%s", code, out, errs)
	}
	// The checkpoint the run could not finish is removed by the next command, which says so:
	// what it freed is taken again for the commands after it.
	free := func() int64 {
		var st unix.Statfs_t
		if err := unix.Statfs(c.state, &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Bavail) * st.Bsize
	}
	before := free()
	_, errs, _ = c.run(p, "log")
	if !strings.Contains(errs, "shadow: removed an unfinished checkpoint c1 (") {
		t.Errorf("the command after the run does not remove its unfinished checkpoint:\n%s", errs)
	}
	filler := filepath.Join(c.state, "filler")
	if freed := free() - before; freed > 0 {
		_ = os.WriteFile(filler, make([]byte, freed), 0o600) // as much as fits
	}
	_, errs, code = c.run(p, "diff", "--stat")
	if code != 0 || !strings.Contains(errs, "is incomplete") {
		t.Errorf("diff on a full state disk: exit %d, want 0 and the incomplete session said:\n%s", code, errs)
	}
	_, errs, code = c.run(p, "run", "--", "true")
	if code != 1 {
		t.Errorf("run on a full state disk: exit %d, want 1", code)
	}
	oneLine("run", errs)
	_, errs, code = c.run(p, "apply", "--all", "--yes")
	if code != 1 {
		t.Errorf("apply on a full state disk: exit %d, want 1", code)
	}
	oneLine("apply", strings.TrimSpace(strings.Join(withoutWarnings(errs), "\n")))
	if got := readFile(t, filepath.Join(p, "a.txt")); got != "1\n" {
		t.Errorf("the project changed: a.txt = %q", got)
	}

	// discard needs no room: it removes first.
	if _, errs, code := c.run(p, "discard", "--yes"); code != 0 {
		t.Fatalf("discard on a full state disk: exit %d\n%s", code, errs)
	}
	os.Remove(filler)
	var st unix.Statfs_t
	if err := unix.Statfs(c.state, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < 2<<20 {
		t.Errorf("discard left only %d bytes free of 3 MB", free)
	}
	if _, errs, code := c.run(p, "run", "--", "sh", "-c", "echo ok > ok.txt"); code != 0 {
		t.Errorf("a run after the discard: exit %d\n%s", code, errs)
	}
}

// withoutWarnings drops shadow's warning lines.
func withoutWarnings(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "shadow: warning:") {
			out = append(out, l)
		}
	}
	return out
}
