package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/testsession"
	"github.com/shadow-sandbox/shadow/session"
)

// compareBase is the project both compared sessions start from.
var compareBase = map[string]string{
	"same.txt":   "1\n2\n3\n",
	"differ.txt": "1\n2\n3\n",
	"a-only.txt": "1\n",
	"b-only.txt": "1\n",
	"a-gone.txt": "1\n",
	"gone.txt":   "g1\ng2\n",
	"both-gone":  "x\n",
	"bin.dat":    "1\n",
	"sub/x.txt":  "1\n",
	"keep.txt":   "1\n",
}

// stagedRun is what a run stages: files written, paths deleted (whiteouts), and what more
// write puts in the upper layer.
type stagedRun struct {
	files   map[string]string
	deleted []string
	write   func(upper string)
}

// Two agents on one task: A and B stage the same change to same.txt, different ones to
// differ.txt, each a file of its own, A deletes a file B edits, both delete one.
var (
	compareA = stagedRun{map[string]string{
		"same.txt":   "1\nTWO\n3\n",
		"differ.txt": "1\nA's line\n3\n",
		"a-only.txt": "1\na\n",
		"bin.dat":    "A\x00\x01",
		"sub/x.txt":  "1\nax\n",
	}, []string{"gone.txt", "a-gone.txt", "both-gone"}, nil}
	compareB = stagedRun{map[string]string{
		"same.txt":   "1\nTWO\n3\n",
		"differ.txt": "1\nB's line\n3\n",
		"b-only.txt": "1\nb\n",
		"gone.txt":   "g1\ng2 by B\n",
		"bin.dat":    "B\x00\x02",
		"sub/x.txt":  "1\nbx\n",
	}, []string{"both-gone"}, nil}
)

// stageRun records a run that staged r in s, as the jail would have left its upper layer.
func stageRun(t *testing.T, s *session.Session, r stagedRun) {
	t.Helper()
	if err := s.BeginRun([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	testsession.WriteFiles(t, s.UpperDir(), r.files)
	for _, p := range r.deleted {
		full := filepath.Join(s.UpperDir(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknod(full, unix.S_IFCHR|0o600, 0); err != nil {
			t.Skipf("cannot make a whiteout (0/0 character device) here, needs root: %v", err)
		}
	}
	if r.write != nil {
		r.write(s.UpperDir())
	}
	if err := s.EndRun(0); err != nil {
		t.Fatal(err)
	}
}

// openStaged opens a session of project named name ("": the project's default session) in c's
// store, beside the project's other open sessions, and stages r in it.
func openStaged(t *testing.T, c *cli, project string, r stagedRun, name string) *session.Session {
	t.Helper()
	st, err := session.Open(filepath.Join(c.state, "shadow"))
	if err != nil {
		t.Fatal(err)
	}
	lk, err := st.LockProject(project, session.LockOptions{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	s, err := lk.CreateNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	stageRun(t, s, r)
	return s
}

// compareFixture is a project with two open sessions, A named claude and B codex, staged as
// compareA and compareB.
func compareFixture(t *testing.T) (c *cli, project string, a, b *session.Session) {
	c = newCLI(t)
	project = fixture(t, compareBase)
	a = openStaged(t, c, project, compareA, "claude")
	b = openStaged(t, c, project, compareB, "codex")
	return c, project, a, b
}

// TestCompare: every path either session changed shows who changed it; where both did, whether
// they agree, and the diff from A's version to B's (not each against the base); where one did,
// that session's diff against the base as `shadow diff` prints it; a binary pair one line.
func TestCompare(t *testing.T) {
	c, project, a, b := compareFixture(t)
	out, errs, code := c.run(project, "compare", a.ID(), b.ID())
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, out, errs)
	}
	want := `# A is session claude (` + a.ID() + `), B is session codex (` + b.ID() + `)
# a-gone.txt: A only
diff --git a/a-gone.txt b/a-gone.txt
deleted file mode 100644
index d00491f..0000000
--- a/a-gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-1
# a-only.txt: A only
diff --git a/a-only.txt b/a-only.txt
index d00491f..e439850 100644
--- a/a-only.txt
+++ b/a-only.txt
@@ -1 +1,2 @@
 1
+a
# b-only.txt: B only
diff --git a/b-only.txt b/b-only.txt
index d00491f..2f1f458 100644
--- a/b-only.txt
+++ b/b-only.txt
@@ -1 +1,2 @@
 1
+b
# bin.dat: both, differ (A's is a binary file of 3 bytes; B's is a binary file of 3 bytes)
# both-gone: both, same
# differ.txt: both, differ
--- a/differ.txt (claude)
+++ b/differ.txt (codex)
@@ -1,3 +1,3 @@
 1
-A's line
+B's line
 3
# gone.txt: both, differ (A deletes it)
--- a/gone.txt (claude)
+++ b/gone.txt (codex)
@@ -0,0 +1,2 @@
+g1
+g2 by B
# same.txt: both, same
# sub/x.txt: both, differ
--- a/sub/x.txt (claude)
+++ b/sub/x.txt (codex)
@@ -1,2 +1,2 @@
 1
-ax
+bx
`
	if out != want {
		t.Errorf("compare:\n%s\nwant:\n%s", out, want)
	}
	if errs != "" {
		t.Errorf("compare printed on stderr: %s", errs)
	}

	// The sessions' own diffs against the base are what `shadow diff` prints of them.
	for _, tc := range []struct {
		s    *session.Session
		path string
	}{{a, "a-only.txt"}, {a, "a-gone.txt"}, {b, "b-only.txt"}} {
		d := c.must(project, "diff", "--session", tc.s.ID(), tc.path)
		if !strings.Contains(out, d) {
			t.Errorf("compare does not show %s as `shadow diff --session %s %s` does:\n%s", tc.path, tc.s.ID(), tc.path, d)
		}
	}
}

// TestCompareStatNamesJSON: --stat is one line a path, --name-only the paths, --json a document
// that parses and says the same.
func TestCompareStatNamesJSON(t *testing.T) {
	c, project, a, b := compareFixture(t)
	stat := c.must(project, "compare", "--stat", a.ID(), b.ID())
	wantStat := `a-gone.txt  A only
a-only.txt  A only
b-only.txt  B only
bin.dat     both, differ (A's is a binary file of 3 bytes; B's is a binary file of 3 bytes)
both-gone   both, same
differ.txt  both, differ +1 -1
gone.txt    both, differ +2 -0 (A deletes it)
same.txt    both, same
sub/x.txt   both, differ +1 -1
`
	if stat != wantStat {
		t.Errorf("compare --stat:\n%s\nwant:\n%s", stat, wantStat)
	}
	names := c.must(project, "compare", "--name-only", a.ID(), b.ID())
	if want := "a-gone.txt\na-only.txt\nb-only.txt\nbin.dat\nboth-gone\ndiffer.txt\ngone.txt\nsame.txt\nsub/x.txt\n"; names != want {
		t.Errorf("compare --name-only:\n%s\nwant:\n%s", names, want)
	}

	raw := c.must(project, "compare", "--json", a.ID(), b.ID())
	var doc compareDoc
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("compare --json does not parse: %v\n%s", err, raw)
	}
	if doc.Version != 1 || doc.Project != project || doc.A.ID != a.ID() || doc.B.ID != b.ID() || len(doc.Files) != 9 {
		t.Fatalf("compare --json: %+v", doc)
	}
	files := map[string]compareFile{}
	for _, f := range doc.Files {
		files[f.Path] = f
	}
	for path, want := range map[string]string{"a-only.txt": "a", "a-gone.txt": "a", "b-only.txt": "b", "same.txt": "both", "differ.txt": "both"} {
		if got := files[path].Changed; got != want {
			t.Errorf("--json: %s changed by %q, want %q", path, got, want)
		}
	}
	if f := files["same.txt"]; f.Same == nil || !*f.Same || f.A == nil || f.B == nil {
		t.Errorf("--json: same.txt is not both, same: %+v", f)
	}
	d := files["differ.txt"]
	if d.Same == nil || *d.Same || d.Added != 1 || d.Deleted != 1 || len(d.Hunks) != 1 ||
		strings.Join(d.Hunks[0].Lines, "") != " 1\n-A's line\n+B's line\n 3\n" {
		t.Errorf("--json: differ.txt: %+v", d)
	}
	if f := files["a-only.txt"]; f.Same != nil || f.A == nil || f.B != nil || f.A.Path != "a-only.txt" {
		t.Errorf("--json: a-only.txt: %+v", f)
	}
	if f := files["bin.dat"]; f.Same == nil || *f.Same || len(f.Hunks) != 0 || !strings.Contains(f.Why, "binary") {
		t.Errorf("--json: bin.dat: %+v", f)
	}
}

// TestComparePaths: PATH arguments keep the paths under them, as `shadow diff PATH` does,
// relative to the working directory inside the project or absolute.
func TestComparePaths(t *testing.T) {
	c, project, a, b := compareFixture(t)
	for _, tc := range []struct {
		dir  string
		args []string
		want string
	}{
		{project, []string{"sub"}, "sub/x.txt\n"},
		{project, []string{"differ.txt", "b-only.txt"}, "b-only.txt\ndiffer.txt\n"},
		{filepath.Join(project, "sub"), []string{"."}, "sub/x.txt\n"},
		{project, []string{filepath.Join(project, "same.txt")}, "same.txt\n"},
		{project, []string{"keep.txt"}, ""},
	} {
		args := append([]string{"compare", "--name-only", a.ID(), b.ID()}, tc.args...)
		if got := c.must(tc.dir, args...); got != tc.want {
			t.Errorf("compare %v in %s: %q, want %q", tc.args, tc.dir, got, tc.want)
		}
	}
	out := c.must(project, "compare", a.ID(), b.ID(), "differ.txt")
	if strings.Contains(out, "same.txt") || !strings.Contains(out, "+B's line") {
		t.Errorf("compare differ.txt shows more or less than differ.txt:\n%s", out)
	}
}

// TestCompareNames: two open sessions of one project are named by their names or their IDs;
// the name heads its side of a diff.
func TestCompareNames(t *testing.T) {
	c, project, a, b := compareFixture(t)
	out := c.must(project, "compare", "claude", "codex", "differ.txt")
	if !strings.Contains(out, "--- a/differ.txt (claude)\n+++ b/differ.txt (codex)\n") ||
		!strings.HasPrefix(out, "# A is session claude ("+a.ID()+"), B is session codex ("+b.ID()+")\n") {
		t.Errorf("compare claude codex:\n%s", out)
	}
	if byID := c.must(project, "compare", a.ID(), "codex", "differ.txt"); byID != out {
		t.Errorf("compare by ID and by name differ:\n%s\n%s", byID, out)
	}
	// B first: the diff goes the other way.
	out = c.must(project, "compare", "--stat", "codex", "claude", "gone.txt", "differ.txt")
	if want := "differ.txt  both, differ +1 -1\ngone.txt    both, differ +0 -2 (B deletes it)\n"; out != want {
		t.Errorf("compare codex claude --stat:\n%s\nwant:\n%s", out, want)
	}
	// The same session by its name and its ID: one line, exit 2.
	if out, errs, code := c.run(project, "compare", "codex", b.ID()); code != exitUsage || out != "" ||
		errs != "shadow: codex and "+b.ID()+" are both session codex ("+b.ID()+"): name two sessions to compare\n" {
		t.Errorf("compare codex %s: exit %d, stdout %q, stderr %q", b.ID(), code, out, errs)
	}
}

// TestCompareRefuses: the same session twice, a name no open session has, sessions of two
// projects, a session of another project than --project, and too few arguments each get one
// line and exit 2; nothing on stdout.
func TestCompareRefuses(t *testing.T) {
	c, project, a, b := compareFixture(t)
	other := fixture(t, map[string]string{"o.txt": "1\n"})
	o := openStaged(t, c, other, stagedRun{files: map[string]string{"o.txt": "2\n"}}, "claude")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{a.ID(), a.ID()}, "A and B are both session claude (" + a.ID() + "): name two sessions to compare"},
		{[]string{"codex", "codex"}, "A and B are both session codex (" + b.ID() + ")"},
		{[]string{"claude", "gemini"}, `has no session named "gemini" (open: claude (` + a.ID() + `), codex (` + b.ID() + "))"},
		{[]string{"gemini", b.ID()}, `has no session named "gemini"`},
		{[]string{a.ID(), "20261202-000000-abcdef"}, `has no session named "20261202-000000-abcdef"`},
		{[]string{a.ID(), o.ID()}, "are of different projects"},
		{[]string{"--project", other, a.ID(), b.ID()}, "are of project " + project + ", not " + other},
		{[]string{a.ID()}, "compare needs two sessions: shadow compare A B [PATH...]"},
		{nil, "compare needs two sessions"},
		{[]string{"--stat", "--json", a.ID(), b.ID()}, "exclude each other"},
	} {
		out, errs, code := c.run(project, append([]string{"compare"}, tc.args...)...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.says) {
			t.Errorf("compare %v: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", tc.args, code, out, errs, tc.says)
		}
	}
}

// TestCompareTerminal: on a terminal the comparison is coloured and what a file holds that a
// terminal would act on (an OSC 52 that writes the clipboard) is shown escaped, in the diff of A
// against B and in a diff against the base alike.
func TestCompareTerminal(t *testing.T) {
	c := newCLI(t)
	project := fixture(t, compareBase)
	osc := "\x1b]52;c;aGk=\a"
	a := openStaged(t, c, project, stagedRun{files: map[string]string{"differ.txt": "1\n" + osc + "\n3\n", "a-only.txt": osc + "\n"}}, "a")
	b := openStaged(t, c, project, stagedRun{files: map[string]string{"differ.txt": "1\nB\n3\n"}}, "b")
	t.Setenv("XDG_STATE_HOME", c.state)
	st, err := session.Open(filepath.Join(c.state, "shadow"))
	if err != nil {
		t.Fatal(err)
	}
	a, b = reread(t, st, a), reread(t, st, b)
	csA, err := a.Changes()
	if err != nil {
		t.Fatal(err)
	}
	csB, err := b.Changes()
	if err != nil {
		t.Fatal(err)
	}
	entries := pairChanges(csA.Select(nil), csB.Select(nil), nil)
	if err := loadCompared(a, b, entries, true); err != nil {
		t.Fatal(err)
	}
	var tty, piped bytes.Buffer
	if err := writeCompare(&tty, a, b, entries, true); err != nil {
		t.Fatal(err)
	}
	if err := writeCompare(&piped, a, b, entries, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tty.String(), "\x1b]") || strings.Contains(tty.String(), "\a") {
		t.Errorf("on a terminal the OSC 52 reaches it raw: %q", tty.String())
	}
	if !strings.Contains(tty.String(), "\x1b[") {
		t.Errorf("on a terminal the comparison is not coloured: %q", tty.String())
	}
	// Piped, it is the exact bytes, as `shadow diff` writes them.
	if strings.Count(piped.String(), osc) != 2 {
		t.Errorf("piped, the files' bytes are not as they are: %q", piped.String())
	}
}

func reread(t *testing.T, st *session.Store, s *session.Session) *session.Session {
	t.Helper()
	s, err := st.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCompareOneLine: what has no line diff gets one line, never its bytes: a special file, a
// symlink, a file too large or sparse to read, on one side or both.
func TestCompareOneLine(t *testing.T) {
	c := newCLI(t)
	project := fixture(t, map[string]string{"pipe": "1\n", "link": "1\n", "big.img": "1\n"})
	stage := func(fifo, link string, size int64) func(up string) {
		return func(up string) { writeOdd(t, up, fifo, link, size) }
	}
	a := openStaged(t, c, project, stagedRun{write: stage("pipe", "to-a", 4<<20)}, "a")
	b := openStaged(t, c, project, stagedRun{files: map[string]string{"pipe": "B\n"}, write: stage("b-fifo", "to-b", 8<<20)}, "b")

	out := c.must(project, "compare", "--stat", a.ID(), b.ID())
	want := `b-fifo   B only
big.img  both, differ (A's is a file of 4194304 bytes, too large or sparse to show; B's is a file of 8388608 bytes, too large or sparse to show)
link     both, differ (A makes it a symlink to to-a; B makes it a symlink to to-b)
pipe     both, differ (A makes it a special file)
`
	if out != want {
		t.Errorf("compare --stat:\n%s\nwant:\n%s", out, want)
	}
	out = c.must(project, "compare", a.ID(), b.ID())
	for _, line := range []string{
		"# b-fifo: B only (a special file, never applied)\n# big.img: both, differ (A's is a file of 4194304 bytes",
		"# link: both, differ (A makes it a symlink to to-a; B makes it a symlink to to-b)\n# pipe: both, differ (A makes it a special file)\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("compare does not say %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "@@") || strings.ContainsRune(out, 0) {
		t.Errorf("compare shows a line diff or raw bytes of what has none:\n%q", out)
	}
}

// writeOdd stages in upper a FIFO at fifo, a symlink "link" to target, and "big.img", a sparse
// file of size bytes.
func writeOdd(t *testing.T, upper, fifo, target string, size int64) {
	t.Helper()
	if err := unix.Mkfifo(filepath.Join(upper, fifo), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(upper, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(upper, "big.img"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(upper, "big.img"), size); err != nil {
		t.Fatal(err)
	}
}

// TestCompareRename: (A the project's default session, B one named b) a rename counts at both its paths: the one it leaves holds nothing in that
// session, the one it makes shows the rename as `shadow diff` does, once.
func TestCompareRename(t *testing.T) {
	c := newCLI(t)
	project := fixture(t, map[string]string{"old.txt": "1\n2\n3\n4\n", "other.txt": "1\n2\n3\n4\n5\n"})
	a := openStaged(t, c, project, stagedRun{files: map[string]string{"new.txt": "1\n2\n3\n4\n"}, deleted: []string{"old.txt"}}, "")
	b := openStaged(t, c, project, stagedRun{files: map[string]string{"old.txt": "1\n2\n3\nB\n"}}, "b")
	out := c.must(project, "compare", a.ID(), b.ID())
	want := `# A is session ` + a.ID() + `, B is session b (` + b.ID() + `)
# new.txt: A only (renamed from old.txt)
diff --git a/old.txt b/new.txt
similarity index 100%
rename from old.txt
rename to new.txt
# old.txt: both, differ (A renames it to new.txt)
--- a/old.txt (` + a.ID() + `)
+++ b/old.txt (b)
@@ -0,0 +1,4 @@
+1
+2
+3
+B
`
	if out != want {
		t.Errorf("compare:\n%s\nwant:\n%s", out, want)
	}
	if got := c.must(project, "compare", "--name-only", a.ID(), b.ID(), "new.txt"); got != "new.txt\n" {
		t.Errorf("compare new.txt: %q", got)
	}
}
