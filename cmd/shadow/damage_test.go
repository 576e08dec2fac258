package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A damaged checkpoint is reported, with what is still good: log marks the step and names the
// damage, diff says so on one line and leaves out the files not as taken (a file of a checkpoint
// shares its inode with the staged one), and shows the rest. Every part of a checkpoint is
// damaged in turn: its metadata cut short or changed, its list of checksums changed, a file of
// its layer cut short or with a bit flipped, one removed, one added.
func TestDamagedCheckpoints(t *testing.T) {
	for _, unprivileged := range []bool{false, true} {
		name := "root"
		if unprivileged {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) { damagedCheckpoints(t, unprivileged) })
	}
}

func damagedCheckpoints(t *testing.T, unprivileged bool) {
	flip := func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b[len(b)/2] ^= 0x20
		return os.WriteFile(p, b, 0o644)
	}
	cases := []struct {
		name string
		step string // the damaged checkpoint
		harm func(c2 string) error
		lost []string // the files left out of the staged changes
		says string   // what log says of the step
	}{
		{"meta.json cut short", "c2", func(c2 string) error { return os.Truncate(filepath.Join(c2, "meta.json"), 40) },
			nil, "meta.json is cut short or not JSON"},
		{"meta.json changed", "c2", func(c2 string) error {
			p := filepath.Join(c2, "meta.json")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, []byte(strings.Replace(string(b), "run end", "runENDS", 1)), 0o600)
		}, nil, "meta.json does not match its checksum"},
		{"sums changed", "c2", func(c2 string) error { return flip(filepath.Join(c2, "sums")) },
			[]string{"three.txt", "two.txt"}, "2 files (three.txt, two.txt) not as taken"},
		{"a file cut short", "c2", func(c2 string) error { return os.Truncate(filepath.Join(c2, "layer", "two.txt"), 1) },
			[]string{"two.txt"}, "1 file (two.txt) not as taken"},
		{"a bit flipped", "c2", func(c2 string) error { return flip(filepath.Join(c2, "layer", "two.txt")) },
			[]string{"two.txt"}, "1 file (two.txt) not as taken"},
		{"a file removed", "c2", func(c2 string) error { return os.Remove(filepath.Join(c2, "layer", "two.txt")) },
			[]string{"two.txt"}, "1 file (two.txt) not as taken"},
		{"a file added", "c2", func(c2 string) error {
			return os.WriteFile(filepath.Join(c2, "layer", "extra.txt"), []byte("x\n"), 0o644)
		}, nil, "1 file (extra.txt) not as taken"},
		{"an earlier step's file, changed", "c1", func(c2 string) error {
			return flip(filepath.Join(filepath.Dir(c2), "c1", "layer", "one.txt"))
		}, []string{"one.txt"}, "1 file (one.txt) not as taken"},
	}
	all := []string{"keep.txt", "one.txt", "three.txt", "two.txt"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sh := newShadowAs(t, unprivileged)
			proj := sh.project("project", "")
			for _, script := range []string{"echo one > one.txt; echo keep > keep.txt", "echo two > two.txt; echo three > three.txt"} {
				if out, errs, code := sh.run(proj, "run", "--", "sh", "-c", script); code != 0 {
					t.Fatalf("run: exit %d\n%s%s", code, out, errs)
				}
			}
			if err := tc.harm(filepath.Join(sh.checkpointDir(), "c2")); err != nil {
				t.Fatal(err)
			}
			logOut, logErr, code := sh.run(proj, "log")
			diffOut, diffErr, dcode := sh.run(proj, "diff", "--name-only")
			t.Logf("log:\n%s%s\ndiff --name-only:\n%s%s", logOut, logErr, diffErr, diffOut)
			if code != 0 || dcode != 0 {
				t.Fatalf("log exit %d, diff exit %d", code, dcode)
			}
			var row string
			for _, l := range strings.Split(logOut, "\n") {
				if strings.HasPrefix(l, tc.step+" ") {
					row = l
					break
				}
			}
			if !strings.HasSuffix(strings.TrimSpace(row), "DAMAGED") || strings.Contains(logOut, "0001-01-01") {
				t.Errorf("log does not mark %s damaged (or shows a zero time):\n%s", tc.step, logOut)
			}
			if !strings.Contains(logOut, tc.step+" is damaged: "+tc.says) {
				t.Errorf("log does not say %q of %s:\n%s", tc.says, tc.step, logOut)
			}
			if strings.Count(diffErr, "\n") != 1 || !strings.Contains(diffErr, "damaged checkpoints ("+tc.step+": "+tc.says) {
				t.Errorf("diff does not say on one line that %s is damaged (%s):\n%s", tc.step, tc.says, diffErr)
			}
			for _, f := range all {
				lost := false
				for _, l := range tc.lost {
					lost = lost || l == f
				}
				if shown := strings.Contains("\n"+diffOut, "\n"+f+"\n"); shown == lost {
					t.Errorf("diff shows %s: %v, want %v (left out when damaged)", f, shown, !lost)
				}
			}
		})
	}
}
