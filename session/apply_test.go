package session

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/store"
)

// mergedView is what the jail saw, computed independently of the package: the project with the
// upper layer laid over it by overlay's rules (whiteouts delete, opaque directories replace), as an
// apply would write it (special files left out, setuid/setgid/sticky bits stripped).
func mergedView(t testing.TB, project, upper string) map[string]string {
	t.Helper()
	view := snapshot(t, project)
	drop := func(rel string) {
		for k := range view {
			if k == rel || strings.HasPrefix(k, rel+"/") {
				delete(view, k)
			}
		}
	}
	err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == upper {
			return err
		}
		rel, _ := filepath.Rel(upper, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		kind := layers.KindAt(unix.AT_FDCWD, p, &st)
		if d.IsDir() {
			lower, lerr := os.Lstat(filepath.Join(project, rel))
			if kind == layers.OpaqueDir || (lerr == nil && !lower.IsDir()) {
				drop(rel)
			}
			return nil
		}
		if kind == layers.Whiteout {
			drop(rel)
			return nil
		}
		if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
			return nil
		}
		drop(rel)
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			view[rel] = "-> " + target
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		view[rel] = fmt.Sprintf("%04o:%s", fi.Mode().Perm(), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view
}

func TestApplyAllThenRollback(t *testing.T) {
	for _, link := range []bool{true, false} {
		t.Run(fmt.Sprintf("priors-linked=%v", link), func(t *testing.T) {
			defer func(old bool) { apply.LinkPriors = old }(apply.LinkPriors)
			apply.LinkPriors = link
			testApplyAllThenRollback(t)
		})
	}
}

func testApplyAllThenRollback(t *testing.T) {
	f := newFixture(t, map[string]file{
		"edit.txt":             {Data: "one\ntwo\n"},
		"gone.txt":             {Data: "bye\n"},
		"old/name.txt":         {Data: "moved content\n"},
		"script.sh":            {Data: "#!/bin/sh\n"},
		"replaced/a.txt":       {Data: "a\n"},
		"replaced/b.txt":       {Data: "b\n"},
		"wiped/x/y.txt":        {Data: "y\n", Mode: 0o600},
		"link":                 {Link: "edit.txt"},
		"dir2file/inner.txt":   {Data: "i\n"},
		"file2dir":             {Data: "f\n"},
		"keep.txt":             {Data: "k\n", Mode: 0o751},
		"bin.dat":              {Data: "\x00\x01\x02"},
		"exec-to-plain.sh":     {Data: "x\n", Mode: 0o755},
		"nested/deep/file.txt": {Data: "n\n"},
	})
	f.stage(t, map[string]file{
		"edit.txt":          {Data: "one\nTWO\nthree\n"},
		"new/added.txt":     {Data: "fresh\n"},
		"new/name.txt":      {Data: "moved content\n"},
		"script.sh":         {Data: "#!/bin/sh\n", Mode: 0o755},
		"replaced/b.txt":    {Data: "B\n"},
		"link":              {Link: "script.sh"},
		"dir2file":          {Data: "now a file\n"},
		"file2dir/child":    {Data: "c\n"},
		"bin.dat":           {Data: "\x00\x01\x03"},
		"exec-to-plain.sh":  {Data: "x\n", Mode: 0o644},
		"made/link":         {Link: "../keep.txt"},
		"nested/deep/f2.go": {Data: "package x\n"},
	})
	f.whiteout(t, "gone.txt")
	f.whiteout(t, "old/name.txt")
	f.whiteout(t, "wiped")
	f.opaque(t, "replaced")
	f.run(t)
	before := snapshot(t, f.project)
	want := mergedView(t, f.project, f.s.UpperDir())

	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("skipped: %+v", res.Skipped)
	}
	if d := diffSnapshots(snapshot(t, f.project), want); d != "" {
		t.Fatalf("apply --all differs from the agent's tree:\n%s", d)
	}
	if cs := f.changes(t); len(cs.Changes) != 0 {
		t.Errorf("changes left after apply --all: %v", statuses(cs))
	}
	if f.s.Meta.State != store.StateApplied {
		t.Errorf("state after applying everything = %s", f.s.Meta.State)
	}

	rb, err := f.lock.Rollback("")
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Applies) != 1 || rb.Applies[0] != res.ID {
		t.Errorf("rollback result %+v", rb)
	}
	if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
		t.Fatalf("rollback is not byte for byte:\n%s", d)
	}
	s, err := f.lock.Current()
	if err != nil {
		t.Fatalf("session not open again after rollback: %v", err)
	}
	// The staged changes are pending again and can be applied again.
	if cs, _ := s.Changes(); len(cs.Changes) == 0 {
		t.Error("no changes pending after rollback")
	}
	if _, err := s.Apply(apply.ApplyOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(snapshot(t, f.project), want); d != "" {
		t.Fatalf("second apply differs:\n%s", d)
	}
}

func TestApplyNothingDecided(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "b\n"}, "c.txt": {Data: "c\n"}})
	f.run(t)
	before := snapshot(t, f.project)
	res, err := f.s.Apply(apply.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "" || len(res.Files) != 0 {
		t.Errorf("apply with no decisions wrote %+v", res)
	}
	if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
		t.Fatal(d)
	}
}

func TestProtectedAndIgnored(t *testing.T) {
	f := newFixture(t, map[string]file{
		".gitignore":          {Data: "*.log\nbuild/\n"},
		".git/hooks/.keep":    {Data: ""},
		"sub/.husky/pre-push": {Data: "old\n"},
		"main.go":             {Data: "package main\n"},
	})
	f.stage(t, map[string]file{
		".git/hooks/pre-commit":   {Data: "#!/bin/sh\ncurl evil\n", Mode: 0o755},
		".github/workflows/x.yml": {Data: "on: push\n"},
		"sub/.husky/pre-push":     {Data: "curl evil\n"},
		"main.go":                 {Data: "package main // edited\n"},
		"debug.log":               {Data: "log\n"},
		"build/out.bin":           {Data: "bin\n"},
		// The agent tries to un-ignore its files: the base's rules still count.
		".gitignore": {Data: ""},
	})
	f.run(t)
	cs := f.changes(t)
	for _, p := range []string{".git/hooks/pre-commit", ".github/workflows/x.yml", "sub/.husky/pre-push"} {
		if c, _ := cs.Find(p); c == nil || !c.Protected {
			t.Errorf("%s not protected: %+v", p, c)
		}
	}
	for _, p := range []string{"debug.log", "build/out.bin"} {
		if c, _ := cs.Find(p); c == nil || !c.Ignored {
			t.Errorf("%s not ignored: %+v", p, c)
		}
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, f.project)
	for _, p := range []string{".git/hooks/pre-commit", ".github/workflows/x.yml", "debug.log", "build/out.bin"} {
		if _, ok := snap[p]; ok {
			t.Errorf("apply --all wrote %s", p)
		}
	}
	// .gitignore is a dot-file: the dot-file rule protects its change too.
	if snap["sub/.husky/pre-push"] != "0644:old\n" || snap["main.go"] != "0644:package main // edited\n" || snap[".gitignore"] != "0644:*.log\nbuild/\n" {
		t.Errorf("project after apply --all: %v", snap)
	}
	if len(res.Skipped) != 6 || f.s.Meta.State != store.StateOpen {
		t.Errorf("skipped %+v, state %s", res.Skipped, f.s.Meta.State)
	}
	if _, err := f.s.Apply(apply.ApplyOptions{All: true, AllowProtected: true, IncludeIgnored: true}); err != nil {
		t.Fatal(err)
	}
	snap = snapshot(t, f.project)
	if snap[".git/hooks/pre-commit"] != "0755:#!/bin/sh\ncurl evil\n" || snap["debug.log"] != "0644:log\n" {
		t.Errorf("explicit apply of protected and ignored: %v", snap)
	}
}

func TestSetuidStrippedAndOutsideLinks(t *testing.T) {
	f := newFixture(t, nil)
	outside := t.TempDir()
	f.stage(t, map[string]file{
		"tool":      {Data: "#!/bin/sh\n", Mode: 0o755},
		"escape":    {Link: outside + "/target"},
		"up":        {Link: "../../etc/passwd"},
		"fine/link": {Link: "../tool"},
	})
	if err := syscall.Chmod(filepath.Join(f.s.UpperDir(), "tool"), 0o6755); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	cs := f.changes(t)
	if c, _ := cs.Find("tool"); c == nil || !c.SetID {
		t.Errorf("setuid not flagged: %+v", c)
	}
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, f.project)
	if snap["tool"] != "0755:#!/bin/sh\n" {
		t.Errorf("tool applied as %q", snap["tool"])
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "setuid") {
		t.Errorf("warnings %v", res.Warnings)
	}
	if _, ok := snap["escape"]; ok {
		t.Error("a symlink leaving the project was applied by --all")
	}
	if _, ok := snap["up"]; ok {
		t.Error("a relative symlink leaving the project was applied by --all")
	}
	if snap["fine/link"] != "-> ../tool" {
		t.Errorf("fine/link = %q", snap["fine/link"])
	}
	if _, err := f.s.Apply(apply.ApplyOptions{Paths: []string{"escape"}, AllowOutsideLinks: true}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, f.project)["escape"]; got != "-> "+outside+"/target" {
		t.Errorf("explicit outside link = %q", got)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("something was written outside the project: %v", ents)
	}
}

// A symlink in the project where the agent staged a directory, and a directory the host swaps for
// a symlink in the middle of an apply: neither may redirect a write outside the project.
func TestSymlinksNeverRedirectWrites(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) {
			projectfs.ForceWalk = walk
			defer func() { projectfs.ForceWalk = false }()
			outside := t.TempDir()
			f := newFixture(t, map[string]file{"lnk": {Link: outside}, "sub/a.txt": {Data: "a\n"}})
			f.stage(t, map[string]file{"lnk/pwn": {Data: "pwned\n"}, "sub/a.txt": {Data: "A\n"}, "sub/b.txt": {Data: "b\n"}})
			f.run(t)
			before := snapshot(t, f.project)

			// The host swaps sub/ for a symlink to the outside right after the journal is written.
			apply.ApplyStep = func(s string) {
				if s == "journal" {
					os.Rename(filepath.Join(f.project, "sub"), filepath.Join(f.project, "sub.moved"))
					os.Symlink(outside, filepath.Join(f.project, "sub"))
				}
			}
			_, err := f.s.Apply(apply.ApplyOptions{All: true})
			apply.ApplyStep = nil
			if err == nil {
				t.Fatal("apply through a swapped-in symlink succeeded")
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("written outside the project: %v", ents)
			}
			os.Remove(filepath.Join(f.project, "sub"))
			os.Rename(filepath.Join(f.project, "sub.moved"), filepath.Join(f.project, "sub"))
			if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
				t.Fatalf("a failed apply left changes:\n%s", d)
			}

			// Without the swap, the planted symlink lnk is replaced by a real directory.
			if _, err := f.s.Apply(apply.ApplyOptions{All: true}); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("written outside the project: %v", ents)
			}
			if fi, err := os.Lstat(filepath.Join(f.project, "lnk")); err != nil || !fi.IsDir() {
				t.Fatalf("lnk = %v, %v", fi, err)
			}
			if data, _ := os.ReadFile(filepath.Join(f.project, "lnk", "pwn")); string(data) != "pwned\n" {
				t.Errorf("lnk/pwn = %q", data)
			}
		})
	}
}

func TestOddNamesAndSpecialFiles(t *testing.T) {
	names := []string{"new\nline.txt", "esc\x1b[31mred.txt", "bad\xff\xfeutf8.txt", " space .txt", "tab\tname"}
	files := map[string]file{}
	for i, n := range names {
		files[n] = file{Data: fmt.Sprintf("v%d\n", i)}
	}
	f := newFixture(t, files)
	staged := map[string]file{}
	for i, n := range names {
		staged[n] = file{Data: fmt.Sprintf("w%d\n", i)}
		staged["d\n"+n] = file{Data: "added\n"}
	}
	f.stage(t, staged)
	if err := syscall.Mkfifo(filepath.Join(f.s.UpperDir(), "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	want := mergedView(t, f.project, f.s.UpperDir())
	res, err := f.s.Apply(apply.ApplyOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Path != "fifo" {
		t.Errorf("skipped %+v", res.Skipped)
	}
	if d := diffSnapshots(snapshot(t, f.project), want); d != "" {
		t.Fatal(d)
	}
	if _, err := os.Lstat(filepath.Join(f.project, "fifo")); err == nil {
		t.Error("a FIFO was applied")
	}
	// The session stays open: the FIFO can never be applied but is still there to discard.
	cs := f.changes(t)
	if len(cs.Changes) != 1 || !cs.Changes[0].Special {
		t.Errorf("left: %v", statuses(cs))
	}
}

func TestTwoWritersDoNotCorrupt(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}, "b.txt": {Data: "B\n"}, "c/d.txt": {Data: "d\n"}})
	f.run(t)
	want := mergedView(t, f.project, f.s.UpperDir())
	f.lock.Release()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lk, err := f.store.LockProject(f.project, store.LockOptions{Wait: i%2 == 0, Command: "apply"})
			if err != nil {
				errs[i] = err
				return
			}
			defer lk.Release()
			s, err := lk.Get(f.s.ID())
			if err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = s.Apply(apply.ApplyOptions{All: true})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !strings.Contains(err.Error(), "busy") && !strings.Contains(err.Error(), "discarded") {
			t.Errorf("writer failed badly: %v", err)
		}
	}
	if d := diffSnapshots(snapshot(t, f.project), want); d != "" {
		t.Fatal(d)
	}
	lk, err := f.store.LockProject(f.project, store.LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	s, err := lk.Get(f.s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Meta.Applies); n != 1 {
		t.Errorf("applies recorded: %d", n)
	}
}

func TestRollbackRefusesHostChanges(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}, "b.txt": {Data: "B\n"}})
	f.run(t)
	res1, err := f.s.Apply(apply.ApplyOptions{Paths: []string{"a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := f.s.Apply(apply.ApplyOptions{Paths: []string{"b.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.project, "a.txt"), []byte("host edit\n"), 0o644)
	_, err = f.lock.Rollback(res1.ID)
	if err == nil || !strings.Contains(err.Error(), "a.txt") || strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("rollback over a host change: %v", err)
	}
	if snap := snapshot(t, f.project); snap["b.txt"] != "0644:B\n" || snap["a.txt"] != "0644:host edit\n" {
		t.Fatalf("a refused rollback changed the project: %v", snap)
	}
	// The last apply alone can still be rolled back.
	rb, err := f.lock.Rollback("")
	if err != nil || len(rb.Applies) != 1 || rb.Applies[0] != res2.ID {
		t.Fatalf("rollback of the last apply: %+v, %v", rb, err)
	}
	if snap := snapshot(t, f.project); snap["b.txt"] != "0644:b\n" {
		t.Fatalf("b.txt after rollback: %v", snap)
	}
	if _, err := f.lock.Rollback("no-such-apply"); err == nil {
		t.Error("rollback to an unknown apply id succeeded")
	}
}

func TestRollbackToIncludesEveryLaterApply(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}, "b.txt": {Data: "b\n", Mode: 0o600}})
	before := snapshot(t, f.project)
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}, "b.txt": {Data: "B\n", Mode: 0o755}, "c.txt": {Data: "c\n"}})
	f.run(t)
	first, err := f.s.Apply(apply.ApplyOptions{Paths: []string{"a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Apply(apply.ApplyOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	rb, err := f.lock.Rollback(first.ID)
	if err != nil || len(rb.Applies) != 2 {
		t.Fatalf("rollback --to: %+v, %v", rb, err)
	}
	if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
		t.Fatal(d)
	}
}

// Hunk decisions: accepted hunks are applied on the base, rejected and undecided ones are not,
// a stale decision counts as undecided, and after the apply rejected hunks are no longer pending.
func TestHunkDecisions(t *testing.T) {
	var baseLines, stagedLines []string
	for i := 1; i <= 24; i++ {
		baseLines = append(baseLines, fmt.Sprintf("l%d\n", i))
		if i == 1 || i == 10 || i == 20 {
			stagedLines = append(stagedLines, fmt.Sprintf("L%d\n", i))
		} else {
			stagedLines = append(stagedLines, fmt.Sprintf("l%d\n", i))
		}
	}
	base, staged := strings.Join(baseLines, ""), strings.Join(stagedLines, "")
	f := newFixture(t, map[string]file{"f.txt": {Data: base}, "g.txt": {Data: "g\n"}})
	f.stage(t, map[string]file{"f.txt": {Data: staged}, "g.txt": {Data: "G\n"}})
	f.run(t)
	cs := f.changes(t)
	c, _ := cs.Find("f.txt")
	hunks := hunksOf(t, f.s, c)
	if len(hunks) != 3 {
		t.Fatalf("hunks: %d", len(hunks))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.s.Decide(c, hunks[0].ID, diff.Decision{Verdict: diff.Accepted}))
	must(f.s.Decide(c, hunks[1].ID, diff.Decision{Verdict: diff.Rejected}))
	g, _ := cs.Find("g.txt")
	must(f.s.Decide(g, "", diff.Decision{Verdict: diff.Accepted}))
	// A decision about content that has since changed is stale.
	f.stage(t, map[string]file{"g.txt": {Data: "G2\n"}})

	res, err := f.s.Apply(apply.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Accepted != 1 || res.Files[0].Rejected != 1 || res.Files[0].Pending != 1 {
		t.Errorf("plan %+v", res.Files)
	}
	want := "L1\n" + strings.Join(baseLines[1:], "")
	if data, _ := os.ReadFile(filepath.Join(f.project, "f.txt")); string(data) != want {
		t.Errorf("f.txt = %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(f.project, "g.txt")); string(data) != "g\n" {
		t.Errorf("a stale decision was applied: g.txt = %q", data)
	}
	// Pending now: f.txt's undecided hunk (the rejected one is remembered), and g.txt.
	cs = f.changes(t)
	c, _ = cs.Find("f.txt")
	hunks = hunksOf(t, f.s, c)
	d, _ := f.s.LoadDecisions()
	fd := d.For(c)
	var rejected, undecided int
	for _, h := range hunks {
		switch fd.Hunks[h.ID].Verdict {
		case diff.Rejected:
			rejected++
		case diff.Undecided:
			undecided++
		}
	}
	if len(hunks) != 2 || rejected != 1 || undecided != 1 {
		t.Errorf("after the apply: %d hunks, %d rejected, %d undecided", len(hunks), rejected, undecided)
	}
	// Rolling back restores the base and the decisions as they were.
	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.project, "f.txt")); string(data) != base {
		t.Errorf("f.txt after rollback = %q", data)
	}
}

// Property: over random trees and random edits, apply-all equals the agent's tree, applying no
// decision changes nothing, and any accept/reject mix equals base + accepted hunks.
func TestApplyProperties(t *testing.T) {
	for seed := range 12 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			baseFiles, staged, deletes := randomTree(rng)
			f := newFixture(t, baseFiles)
			f.stage(t, staged)
			for _, p := range deletes {
				f.whiteout(t, p)
			}
			f.run(t)
			before := snapshot(t, f.project)
			agent := mergedView(t, f.project, f.s.UpperDir())

			// Random decisions, and the expected result computed from the pure diff core.
			cs := f.changes(t)
			expect := map[string]string{}
			for k, v := range before {
				expect[k] = v
			}
			for i := range cs.Changes {
				c := &cs.Changes[i]
				if !f.s.applier().Hunkable(c) || c.Status != changeset.Modified {
					continue
				}
				old, new, err := f.s.Contents(c, 0)
				if err != nil {
					t.Fatal(err)
				}
				hunks := diff.Compute(c.Path, old, new, diff.Options{Context: -1}).Hunks
				decs := map[string]diff.Decision{}
				for _, h := range hunks {
					v := []diff.Verdict{diff.Accepted, diff.Rejected, diff.Undecided}[rng.IntN(3)]
					if v != diff.Undecided {
						decs[h.ID] = diff.Decision{Verdict: v}
						if err := f.s.Decide(c, h.ID, decs[h.ID]); err != nil {
							t.Fatal(err)
						}
					}
				}
				got, err := diff.Apply(old, hunks, decs)
				if err != nil {
					t.Fatal(err)
				}
				expect[c.Path] = fmt.Sprintf("%04o:%s", c.Old.Mode&0o777, got)
				allAccepted := len(hunks) > 0
				for _, h := range hunks {
					allAccepted = allAccepted && decs[h.ID].Verdict == diff.Accepted
				}
				if allAccepted {
					expect[c.Path] = agent[c.Path]
				}
			}
			if _, err := f.s.Apply(apply.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if d := diffSnapshots(snapshot(t, f.project), expect); d != "" {
				t.Fatalf("decided apply != base + accepted hunks:\n%s", d)
			}
			if _, err := f.lock.Rollback(""); err != nil && !strings.Contains(err.Error(), "no apply") {
				t.Fatal(err)
			}
			if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
				t.Fatalf("rollback != base:\n%s", d)
			}
			s, err := f.lock.Current()
			if err != nil {
				t.Fatal(err)
			}
			// Clear every decision: apply-none leaves the base.
			d, _ := s.LoadDecisions()
			d.Files = map[string]apply.FileDecision{}
			if err := s.applier().SaveDecisions(d); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Apply(apply.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
				t.Fatalf("apply-none != base:\n%s", d)
			}
			if _, err := s.Apply(apply.ApplyOptions{All: true}); err != nil {
				t.Fatal(err)
			}
			if d := diffSnapshots(snapshot(t, f.project), agent); d != "" {
				t.Fatalf("apply-all != agent tree:\n%s", d)
			}
		})
	}
}

// randomTree makes a small base tree and random edits of it: modified lines, new files, deleted
// files, renames, mode changes and symlinks.
func randomTree(rng *rand.Rand) (base, staged map[string]file, deletes []string) {
	base, staged = map[string]file{}, map[string]file{}
	dirs := []string{"", "a/", "a/b/", "c/"}
	lines := func(n int) []string {
		var out []string
		for range n {
			out = append(out, fmt.Sprintf("line %d\n", rng.IntN(50)))
		}
		return out
	}
	var paths []string
	for i := range 6 + rng.IntN(6) {
		p := fmt.Sprintf("%sf%d.txt", dirs[rng.IntN(len(dirs))], i)
		base[p] = file{Data: strings.Join(lines(5+rng.IntN(25)), "")}
		paths = append(paths, p)
	}
	for _, p := range paths {
		switch rng.IntN(6) {
		case 0, 1: // edit lines
			ls := strings.SplitAfter(base[p].Data, "\n")
			for range 1 + rng.IntN(4) {
				i := rng.IntN(len(ls))
				switch rng.IntN(3) {
				case 0:
					ls[i] = "edited\n"
				case 1:
					ls = append(ls[:i], ls[i+1:]...)
				default:
					ls = append(ls[:i], append([]string{"inserted\n"}, ls[i:]...)...)
				}
			}
			staged[p] = file{Data: strings.Join(ls, "")}
		case 2:
			deletes = append(deletes, p)
		case 3:
			deletes = append(deletes, p)
			staged["moved/"+strings.ReplaceAll(p, "/", "_")] = file{Data: base[p].Data}
		case 4:
			staged[p] = file{Data: base[p].Data, Mode: 0o755}
		}
	}
	for i := range rng.IntN(3) {
		staged[fmt.Sprintf("%snew%d.txt", dirs[rng.IntN(len(dirs))], i)] = file{Data: strings.Join(lines(3), "")}
	}
	if rng.IntN(2) == 0 {
		staged["a/link"] = file{Link: "../" + paths[0]}
	}
	return base, staged, deletes
}

// After an apply the applied content is the base: the path is no longer a change, even when the
// host edits it afterwards, and a new run's change to it diffs against what was applied.
func TestAppliedContentBecomesBase(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "1\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "2\n"}})
	f.run(t)
	if _, err := f.s.Apply(apply.ApplyOptions{Paths: []string{"a.txt"}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.project, "a.txt"), []byte("host edit\n"), 0o644)
	if cs := f.changes(t); len(cs.Changes) != 0 {
		t.Fatalf("pending after apply and a host edit: %v", statuses(cs))
	}
	// The session is applied (nothing pending); a new one sees the applied content as its base.
	if f.s.Meta.State != store.StateApplied {
		t.Fatalf("state %s", f.s.Meta.State)
	}
	s, err := f.lock.Create()
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.UpperDir(), map[string]file{"a.txt": {Data: "host edit\nagent line\n"}})
	if err := s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(0); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Changes()
	if err != nil || len(cs.Changes) != 1 || cs.Changes[0].Conflict {
		t.Fatalf("second session: %v, %v", statuses(cs), err)
	}
	old, _, _ := s.Contents(&cs.Changes[0], 0)
	if string(old) != "host edit\n" {
		t.Errorf("base of the new session = %q", old)
	}
}

// TestApplyRemovesDirectoriesTheAgentDeleted checks that a directory the agent deleted as a whole
// is gone from the project after the apply (not left behind empty), that one the agent only
// emptied stays, and that a rollback makes the removed directories again with their modes.
func TestApplyRemovesDirectoriesTheAgentDeleted(t *testing.T) {
	f := newFixture(t, map[string]file{
		"wiped/a.txt":            {Data: "a\n"},
		"wiped/sub/b.txt":        {Data: "b\n"},
		"wiped/sub/deeper/c.txt": {Data: "c\n", Mode: 0o600},
		"emptied/x.txt":          {Data: "x\n"},
		"outer/inner/z.txt":      {Data: "z\n"},
		"outer/stays.txt":        {Data: "s\n"},
		"redone/old.txt":         {Data: "o\n"},
		"keep/y.txt":             {Data: "y\n"},
	})
	for dir, mode := range map[string]os.FileMode{"wiped": 0o750, "wiped/sub": 0o700, "wiped/sub/deeper": 0o711, "outer/inner": 0o770} {
		if err := os.Chmod(filepath.Join(f.project, dir), mode); err != nil {
			t.Fatal(err)
		}
	}
	f.whiteout(t, "wiped")         // rm -rf wiped
	f.whiteout(t, "emptied/x.txt") // rm emptied/x.txt: the directory stays in the agent's tree
	f.whiteout(t, "outer/inner")   // rm -rf outer/inner, outer keeps a file
	f.whiteout(t, "outer/stays.txt")
	f.opaque(t, "redone") // rm -rf redone && mkdir redone
	f.run(t)
	beforeFiles, beforeDirs := snapshot(t, f.project), dirModes(t, f.project)

	if _, err := f.s.Apply(apply.ApplyOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	got := dirModes(t, f.project)
	for _, gone := range []string{"wiped", "wiped/sub", "wiped/sub/deeper", "outer/inner"} {
		if _, ok := got[gone]; ok {
			t.Errorf("%s is still in the project after the agent deleted it", gone)
		}
	}
	for _, kept := range []string{"emptied", "outer", "redone", "keep"} {
		if _, ok := got[kept]; !ok {
			t.Errorf("%s was removed, but the agent's tree still has it", kept)
		}
	}
	if cs := f.changes(t); len(cs.Changes) != 0 {
		t.Errorf("changes left after apply --all: %v", statuses(cs))
	}

	if _, err := f.lock.Rollback(""); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(snapshot(t, f.project), beforeFiles); d != "" {
		t.Errorf("rollback did not restore the files:\n%s", d)
	}
	if d := diffSnapshots(dirModes(t, f.project), beforeDirs); d != "" {
		t.Errorf("rollback did not restore the directories exactly:\n%s", d)
	}
}

// TestRollbackPutsBackTheSameFile checks that the journal keeps a replaced file itself (a hard
// link, not a copy), so that a rollback restores the very same inode, and that the copy taken
// where no link can be made restores the same bytes and mode.
func TestRollbackPutsBackTheSameFile(t *testing.T) {
	for _, link := range []bool{true, false} {
		t.Run(fmt.Sprintf("priors-linked=%v", link), func(t *testing.T) {
			defer func(old bool) { apply.LinkPriors = old }(apply.LinkPriors)
			apply.LinkPriors = link
			f := newFixture(t, map[string]file{"a.txt": {Data: "a\n", Mode: 0o640}})
			f.stage(t, map[string]file{"a.txt": {Data: "A\n"}})
			f.run(t)
			ino := func() uint64 {
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(f.project, "a.txt"), &st); err != nil {
					t.Fatal(err)
				}
				return st.Ino
			}
			// Held open, the original inode cannot be freed and its number reused by a copy.
			held, err := os.Open(filepath.Join(f.project, "a.txt"))
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			before, snap := ino(), snapshot(t, f.project)
			res, err := f.s.Apply(apply.ApplyOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			e, err := apply.ReadEntry(filepath.Join(f.s.journalDir(), res.ID))
			if err != nil {
				t.Fatal(err)
			}
			if kept := e.Paths[0].Prior.Keep != ""; kept != link {
				t.Fatalf("prior kept by link = %v, want %v", kept, link)
			}
			if _, err := f.lock.Rollback(""); err != nil {
				t.Fatal(err)
			}
			if d := diffSnapshots(snapshot(t, f.project), snap); d != "" {
				t.Fatalf("rollback is not byte for byte:\n%s", d)
			}
			if same := ino() == before; same != link {
				t.Errorf("rollback restored the same inode = %v, want %v", same, link)
			}
		})
	}
}

// TestStagedFileChangedDuringApply checks that a staged file that changes between the plan and the
// write (grown, or rewritten at the same size) fails the apply and leaves the project untouched.
func TestStagedFileChangedDuringApply(t *testing.T) {
	for name, now := range map[string]string{"grown": "A\nmore\n", "same size": "B\n"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, map[string]file{"a.txt": {Data: "a\n"}})
			f.stage(t, map[string]file{"a.txt": {Data: "A\n"}})
			f.run(t)
			before := snapshot(t, f.project)
			apply.ApplyStep = func(step string) {
				if step == "journal" {
					if err := os.WriteFile(filepath.Join(f.s.UpperDir(), "a.txt"), []byte(now), 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { apply.ApplyStep = nil }()
			_, err := f.s.Apply(apply.ApplyOptions{All: true})
			if err == nil || !strings.Contains(err.Error(), "changed while it was applied") {
				t.Fatalf("apply of a file changed meanwhile: %v", err)
			}
			if d := diffSnapshots(snapshot(t, f.project), before); d != "" {
				t.Fatalf("the failed apply changed the project:\n%s", d)
			}
		})
	}
}

// A line diff that runs out of time says so (the review shows a note), and its coarser hunks
// still apply to exactly the staged content.
func TestDiffOutOfTimeSaysSoAndApplies(t *testing.T) {
	var base, staged strings.Builder
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&base, "a%d\n", r.IntN(500))
		fmt.Fprintf(&staged, "a%d\n", r.IntN(500))
	}
	f := newFixture(t, map[string]file{"big.txt": {Data: "head\n" + base.String() + "tail\n"}})
	f.store.DiffBudget = time.Nanosecond
	f.stage(t, map[string]file{"big.txt": {Data: "head\n" + staged.String() + "tail\n"}})
	f.run(t)
	c, _ := f.changes(t).Find("big.txt")
	d, err := f.s.Diff(c)
	if err != nil {
		t.Fatal(err)
	}
	if d.Exact || len(d.Hunks) == 0 {
		t.Fatalf("a diff with a 1ns budget: exact %v, %d hunks", d.Exact, len(d.Hunks))
	}
	for _, h := range d.Hunks {
		if err := f.s.Decide(c, h.ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.s.Apply(apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.project, "big.txt")); string(data) != "head\n"+staged.String()+"tail\n" {
		t.Errorf("big.txt after applying every coarse hunk differs from the staged file")
	}
}
