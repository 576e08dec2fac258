package sandbox

import (
	"path/filepath"
	"testing"
)

// TestDirectoryStart: the command starts in Policy.Dir, with PWD set to it, when Dir is in the
// project; in the project otherwise, or when the staged changes deleted Dir.
func TestDirectoryStart(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	// repl is on the host; the staged changes delete it.
	if res, _, errOut := j.run(t, j.policy(), "/bin/sh", "-c", "rm -r repl"); res.ExitCode != 0 {
		t.Fatalf("rm -r repl: exit %d: %s", res.ExitCode, errOut)
	}
	for _, c := range []struct{ name, dir, want string }{
		{"in the project", filepath.Join(j.project, "mv"), filepath.Join(j.project, "mv")},
		{"through ..", filepath.Join(j.project, "mv", "..", "mv"), filepath.Join(j.project, "mv")},
		{"unset", "", j.project},
		{"outside the project", j.home, j.project},
		{"deleted by the staged changes", filepath.Join(j.project, "repl"), j.project},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := j.policy()
			p.Dir = c.dir
			res, out, errOut := j.run(t, p, "/bin/sh", "-c", `/bin/pwd; echo "$PWD"`)
			if want := c.want + "\n" + c.want + "\n"; res.ExitCode != 0 || out != want {
				t.Errorf("exit %d, stdout %q, want %q; stderr %s", res.ExitCode, out, want, errOut)
			}
		})
	}
}
