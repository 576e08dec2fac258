package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// within runs fn and fails t when it takes longer than d (leaving it running: without the holes
// skipped, a terabyte takes many minutes).
func within(t *testing.T, d time.Duration, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	case <-time.After(d):
		t.Fatalf("%s took more than %v", what, d)
	}
}

// sparseFile makes p a file of size bytes that holds data at the given offsets and holes around
// them, with mode.
func sparseFile(t *testing.T, p string, size int64, data map[int64]string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off, s := range data {
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(mode); err != nil {
		t.Fatal(err)
	}
}

// stored is how many bytes p takes on disk.
func stored(t *testing.T, p string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// readAt reads n bytes of p at off.
func readAt(t *testing.T, p string, off int64, n int) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatal(err)
	}
	return string(buf)
}

func sumOf(b []byte) string {
	h := projectfs.NewContentSum()
	h.Write(b)
	return h.Sum()
}

// A content's name is its sha256 unless it holds at least projectfs.SparseMin bytes of zero blocks; either
// way it is the same however the bytes arrive (in what pieces, stored or as holes), and it tells
// apart contents that differ only in where their zeros are.
func TestContentSum(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.IntN(255) + 1)
		}
		return b
	}
	zeros := func(n int) []byte { return make([]byte, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	plain := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	for _, tc := range []struct {
		name    string
		content []byte
		runs    bool // named by the zero-run form
	}{
		{"empty", nil, false},
		{"small", []byte("hello\n"), false},
		{"dense, larger than sparseMin", noise(3 << 20), false},
		{"zeros below sparseMin", cat(noise(5000), zeros(projectfs.SparseMin-projectfs.ZeroBlock), noise(9000)), false},
		{"unaligned zeros at sparseMin", cat(noise(100), zeros(projectfs.SparseMin), noise(100)), false},
		{"zero blocks at sparseMin", cat(noise(projectfs.ZeroBlock), zeros(projectfs.SparseMin), noise(100)), true},
		{"all zeros", zeros(3 << 20), true},
		{"zeros then a partial block", cat(zeros(2<<20), zeros(100)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := sumOf(tc.content)
			if got := strings.HasPrefix(want, projectfs.ZeroRunPrefix); got != tc.runs {
				t.Fatalf("zero-run form = %v, want %v (%s)", got, tc.runs, want)
			}
			if !tc.runs && want != plain(tc.content) {
				t.Fatalf("name %s is not the sha256 %s", want, plain(tc.content))
			}
			if got := projectfs.ContentName(tc.content); got != want {
				t.Fatalf("contentName = %s, want %s", got, want)
			}
			// In random pieces, and with every run of zeros given as a hole.
			for trial := range 20 {
				h := projectfs.NewContentSum()
				for b := tc.content; len(b) > 0; {
					k := min(len(b), 1+rnd.IntN(3*projectfs.ZeroBlock))
					if trial%2 == 1 && projectfs.IsZero(b[:k]) {
						h.Zeros(int64(k))
					} else {
						h.Write(b[:k])
					}
					b = b[k:]
				}
				if got := h.Sum(); got != want {
					t.Fatalf("trial %d: %s, want %s", trial, got, want)
				}
			}
		})
	}
	// The zero-run form of contents that differ only where their zeros are, or in length.
	a := cat(noise(projectfs.ZeroBlock), zeros(2<<20), []byte("end"))
	b := cat(zeros(projectfs.ZeroBlock), a[:projectfs.ZeroBlock], zeros(2<<20-projectfs.ZeroBlock), []byte("end"))
	c := cat(a, zeros(projectfs.ZeroBlock))
	d := cat(noise(projectfs.ZeroBlock), zeros(2<<20), []byte("enD"))
	names := map[string]bool{}
	for _, x := range [][]byte{a, b, c, d} {
		names[sumOf(x)] = true
	}
	if len(names) != 4 {
		t.Errorf("different contents share a name: %v", names)
	}
}

// A file is named by its content, whether it stores its zeros or has holes, read by its data
// segments or as a stream.
func TestSparseAndDenseFilesShareTheirName(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Join([][]byte{[]byte("head"), make([]byte, 3<<20), []byte("middle"), make([]byte, 2<<20), []byte("tail")}, nil)
	dense := filepath.Join(dir, "dense")
	if err := os.WriteFile(dense, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	sparseFile(t, sparse, int64(len(content)), map[int64]string{0: "head", 4 + 3<<20: "middle", int64(len(content)) - 4: "tail"}, 0o644)
	if got := stored(t, sparse); got > 1<<20 {
		t.Skipf("this filesystem stores the holes (%d bytes)", got)
	}
	want := sumOf(content)
	for _, p := range []string{dense, sparse} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		s, err := projectfs.SumRegular(int(f.Fd()), fi.Size())
		f.Close()
		if err != nil || s.Hash != want || s.Size != int64(len(content)) || !s.Binary {
			t.Errorf("%s: %+v, %v; want %s", filepath.Base(p), s, err, want)
		}
		if p == sparse && s.Holes < 4<<20 {
			t.Errorf("sparse file: %d bytes of holes", s.Holes)
		}
	}
	s, err := projectfs.SumReader(bytes.NewReader(content))
	if err != nil || s.Hash != want {
		t.Errorf("as a stream: %+v, %v; want %s", s, err, want)
	}
}

// A staged `truncate -s 1T` costs what it stores: the run's end, the change set, the diffstat,
// apply and rollback each take well under a second (hashing the terabyte would take many
// minutes), the diffstat says the file is sparse, and apply writes it with its holes.
func TestStagedTerabyteSparseFile(t *testing.T) {
	const tera = 1 << 40
	f := newFixture(t, map[string]file{"big.img": {Data: "old\n"}, "a.txt": {Data: "a\n"}})
	before := snapshot(t, f.project)
	f.stage(t, map[string]file{"a.txt": {Data: "A\n"}})
	staged := filepath.Join(f.s.UpperDir(), "big.img")
	sparseFile(t, staged, tera, map[int64]string{0: "head", tera / 2: "middle"}, 0o644)
	if got := stored(t, staged); got > 1<<20 {
		t.Skipf("this filesystem stores the holes (%d bytes)", got)
	}

	var cs *changeset.ChangeSet
	within(t, 5*time.Second, "run end and change set", func() (err error) {
		if err = f.s.BeginRun([]string{"agent"}); err == nil {
			cs, err = f.s.EndRunChanges(0)
		}
		return err
	})
	c, ok := cs.Find("big.img")
	if !ok || c.Status != changeset.Modified || c.New.Size != tera || c.New.Holes < tera-1<<20 || !c.Binary {
		t.Fatalf("big.img: %+v", c)
	}
	if s := changeset.Summarize(cs, -1); !strings.Contains(strings.Join(s.Lines, "\n"), "sparse: 1.0 TiB apparent") {
		t.Errorf("summary does not say big.img is sparse: %q", s.Lines)
	}

	var stat, text bytes.Buffer
	within(t, 5*time.Second, "diff --stat and diff", func() error {
		cs, err := f.s.Changes()
		if err != nil {
			return err
		}
		patches, err := f.s.Patches(cs.Select(nil))
		if err != nil {
			return err
		}
		entries := make([]diff.StatEntry, len(patches))
		for i, p := range patches {
			entries[i] = diff.StatOf(p, diff.Options{})
		}
		if err := diff.WriteStat(&stat, entries, 200); err != nil {
			return err
		}
		if err := diff.WritePatch(&text, patches, diff.PatchOptions{}); err != nil {
			return err
		}
		_, err = f.s.Doc(cs.Select(nil))
		return err
	})
	t.Logf("diff --stat:\n%s", stat.String())
	if !strings.Contains(stat.String(), "big.img | Bin 4 -> 1099511627776 bytes (sparse file: staged 1.0 TiB apparent, 8.0 KiB stored; not shown as text)") {
		t.Errorf("diff --stat does not say big.img is sparse:\n%s", stat.String())
	}
	if !strings.Contains(text.String(), "Binary files a/big.img and b/big.img differ\n# sparse file") || !strings.Contains(text.String(), "+A\n") {
		t.Errorf("diff:\n%s", text.String())
	}

	within(t, 5*time.Second, "apply --all", func() error {
		_, err := f.s.Apply(apply.ApplyOptions{All: true})
		return err
	})
	applied := filepath.Join(f.project, "big.img")
	if fi, err := os.Stat(applied); err != nil || fi.Size() != tera {
		t.Fatalf("applied big.img: %v, %v", fi, err)
	}
	if got := stored(t, applied); got > 4<<20 {
		t.Errorf("apply wrote %d bytes for a file that stores 8 KiB", got)
	}
	if got := readAt(t, applied, 0, 4) + readAt(t, applied, tera/2, 6) + readAt(t, applied, tera/4, 4); got != "headmiddle\x00\x00\x00\x00" {
		t.Errorf("applied content: %q", got)
	}
	within(t, 5*time.Second, "change set after the apply", func() error {
		cs, err := f.s.Changes()
		if err == nil && len(cs.Changes) != 0 {
			t.Errorf("after apply --all: %q", statuses(cs))
		}
		return err
	})
	within(t, 5*time.Second, "rollback", func() error {
		_, err := f.lock.Rollback("")
		return err
	})
	if d := diffSnapshots(before, snapshot(t, f.project)); d != "" {
		t.Errorf("rollback did not restore the project:\n%s", d)
	}
}

// A sparse host file is taken as a pre-image, kept for a rollback and written back by its data
// segments, its holes never read and kept holes; a staged copy of it with another mode is a mode
// change, its content the same.
func TestSparseHostFile(t *testing.T) {
	defer func(old bool) { apply.LinkPriors = old }(apply.LinkPriors)
	apply.LinkPriors = false // the prior copied into the journal's pack, not linked
	const size = 1 << 40
	data := map[int64]string{0: "disk", size / 3: "xyz"}
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	host := filepath.Join(project, "disk.img")
	sparseFile(t, host, size, data, 0o644)
	if got := stored(t, host); got > 1<<20 {
		t.Skipf("this filesystem stores the holes (%d bytes)", got)
	}
	f := sessionOver(t, filepath.Join(dir, "state"), project)
	s := f.s
	sparseFile(t, filepath.Join(s.UpperDir(), "disk.img"), size, data, 0o600)

	within(t, 5*time.Second, "run end (pre-image of the host file)", func() error {
		if err := f.s.BeginRun([]string{"agent"}); err != nil {
			return err
		}
		return f.s.EndRun(0)
	})
	packs, _ := filepath.Glob(filepath.Join(changeset.BaseDirOf(s.dir), "pack-*"))
	if len(packs) != 1 {
		t.Fatalf("packs: %q", packs)
	}
	if got := stored(t, packs[0]); got > 1<<20 {
		t.Errorf("the pre-image pack stores %d bytes", got)
	}
	var cs *changeset.ChangeSet
	within(t, 5*time.Second, "change set", func() (err error) {
		cs, err = f.s.Changes()
		return err
	})
	c, ok := cs.Find("disk.img")
	if !ok || !c.ModeOnly || c.Old.Holes == 0 || c.New.Holes == 0 || c.Old.Hash != c.New.Hash || !strings.HasPrefix(c.New.Hash, projectfs.ZeroRunPrefix) {
		t.Fatalf("disk.img: %+v", c)
	}
	within(t, 5*time.Second, "apply --all", func() error {
		_, err := f.s.Apply(apply.ApplyOptions{All: true})
		return err
	})
	if fi, err := os.Stat(host); err != nil || fi.Mode().Perm() != 0o600 || stored(t, host) > 1<<20 {
		t.Fatalf("applied disk.img: %v, %v", fi, err)
	}
	priors, _ := filepath.Glob(filepath.Join(f.s.journalDir(), "*", "prior*.pack"))
	if len(priors) != 1 || stored(t, priors[0]) > 1<<20 {
		t.Errorf("the journal's copy of the prior file: %q", priors)
	}
	within(t, 5*time.Second, "rollback", func() error {
		_, err := f.lock.Rollback("")
		return err
	})
	fi, err := os.Stat(host)
	if err != nil || fi.Mode().Perm() != 0o644 || fi.Size() != size || stored(t, host) > 1<<20 {
		t.Fatalf("disk.img after rollback: %v, %v (%d bytes stored)", fi, err, stored(t, host))
	}
	if got := readAt(t, host, 0, 4) + readAt(t, host, size/3, 3); got != "diskxyz" {
		t.Errorf("disk.img after rollback holds %q", got)
	}
}

// A text file (no NUL in its first 8000 bytes) that stores a run of zero blocks further on is
// decided hunk by hunk; its partial apply is named as every other content of it is, so that the
// applied content is found and checked.
func TestPartialApplyOfContentWithZeroBlocks(t *testing.T) {
	zeros := strings.Repeat("\x00", 2<<20)
	base := "one\n" + strings.Repeat("text\n", 2000) + zeros + "\ntail\n"
	staged := "ONE\n" + strings.Repeat("text\n", 2000) + zeros + "\nTAIL\n"
	f := newFixture(t, map[string]file{"f.txt": {Data: base}})
	f.stage(t, map[string]file{"f.txt": {Data: staged}})
	f.run(t)
	c, ok := f.changes(t).Find("f.txt")
	if !ok || c.Binary || !strings.HasPrefix(c.New.Hash, projectfs.ZeroRunPrefix) {
		t.Fatalf("f.txt: %+v", c)
	}
	hunks := hunksOf(t, f.s, c)
	if len(hunks) != 2 {
		t.Fatalf("%d hunks, want 2", len(hunks))
	}
	if err := f.s.Decide(c, hunks[0].ID, diff.Decision{Verdict: diff.Accepted}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Apply(apply.ApplyOptions{}); err != nil {
		t.Fatalf("apply of one hunk: %v", err)
	}
	want := "ONE\n" + strings.Repeat("text\n", 2000) + zeros + "\ntail\n"
	if data, err := os.ReadFile(filepath.Join(f.project, "f.txt")); err != nil || string(data) != want {
		t.Errorf("f.txt after apply: %d bytes, %v", len(data), err)
	}
	c, _ = f.changes(t).Find("f.txt")
	if hunks := hunksOf(t, f.s, c); len(hunks) != 1 {
		t.Errorf("%d hunks left, want the one not applied", len(hunks))
	}
}
