package session

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// The diff of a session, written by diffview's patch writer from Patches, applies with `git apply`
// to the project as it was at session start and gives the agent's tree.
func TestPatchesApplyWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t, map[string]file{
		"edit.txt":      {Data: "one\ntwo\nthree\n"},
		"gone.txt":      {Data: "bye\n"},
		"old/name.txt":  {Data: "moved content\nsecond line\n"},
		"script.sh":     {Data: "#!/bin/sh\necho hi\n"},
		"link":          {Link: "edit.txt"},
		"bin.dat":       {Data: "\x00\x01\x02\x03"},
		"noeol.txt":     {Data: "no newline"},
		"with space.md": {Data: "x\n"},
	})
	start := t.TempDir()
	if out, err := exec.Command("cp", "-a", f.project+"/.", start).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	f.stage(t, map[string]file{
		"edit.txt":      {Data: "one\nTWO\nthree\nfour\n"},
		"new/added.txt": {Data: "fresh\n"},
		"new/name.txt":  {Data: "moved content\nsecond line\n"},
		"script.sh":     {Data: "#!/bin/sh\necho hi\n", Mode: 0o755},
		"link":          {Link: "script.sh"},
		"bin.dat":       {Data: "\x00\x01\x02\x04\x05"},
		"noeol.txt":     {Data: "still no newline"},
		"with space.md": {Data: "y\n"},
		"newlink":       {Link: "new/added.txt"},
	})
	f.whiteout(t, "gone.txt")
	f.whiteout(t, "old/name.txt")
	f.run(t)
	want := mergedView(t, f.project, f.s.UpperDir())

	cs := f.changes(t)
	patches, err := f.s.Patches(cs.Select(nil))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := diff.WritePatch(&buf, patches, diff.PatchOptions{Binary: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "rename from old/name.txt") {
		t.Errorf("no rename in the diff:\n%s", buf.String())
	}
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir = start
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, buf.String())
	}
	if d := diffSnapshots(snapshot(t, start), want); d != "" {
		t.Fatalf("git apply of the diff != the agent's tree:\n%s", d)
	}
}

func TestDiffDocJSON(t *testing.T) {
	f := newFixture(t, map[string]file{"a.txt": {Data: "1\n2\n3\n"}, "bad\xffname": {Data: "x\n"}})
	f.stage(t, map[string]file{"a.txt": {Data: "1\nTWO\n3\n"}, "bad\xffname": {Data: "y\n"}})
	f.run(t)
	cs := f.changes(t)
	c, _ := cs.Find("a.txt")
	hunks := hunksOf(t, f.s, c)
	if err := f.s.Decide(c, hunks[0].ID, diff.Decision{Verdict: diff.Rejected}); err != nil {
		t.Fatal(err)
	}
	doc, err := f.s.Doc(cs.Select([]string{"a.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Version int
		Files   []struct {
			Path   string
			Status string
			Hunks  []struct {
				ID       string
				Lines    []string
				Decision string
			}
		}
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Version != 1 || len(back.Files) != 1 || back.Files[0].Path != "a.txt" || back.Files[0].Status != "M" ||
		len(back.Files[0].Hunks) != 1 || back.Files[0].Hunks[0].Decision != "reject" ||
		strings.Join(back.Files[0].Hunks[0].Lines, "") != " 1\n-2\n+TWO\n 3\n" {
		t.Errorf("diff json: %s", data)
	}
	// Decisions about a path that is not UTF-8 survive the round trip through decisions.json.
	b, _ := cs.Find("bad\xffname")
	if err := f.s.Decide(b, "", diff.Decision{Verdict: diff.Accepted}); err != nil {
		t.Fatal(err)
	}
	d, err := f.s.LoadDecisions()
	if err != nil || d.For(b).File != diff.Accepted {
		t.Fatalf("decision of a non-UTF-8 path lost: %+v, %v", d, err)
	}
}
