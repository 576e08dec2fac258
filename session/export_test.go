package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/gitout"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// gitState is what export must not touch: HEAD, the index file and the work tree's status.
func gitState(t *testing.T, f *fixture) string {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(f.project, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return gitT(t, f.project, "rev-parse", "HEAD") + "\n" + gitT(t, f.project, "status", "--porcelain") + "\n" + projectfs.Sha256Hex(index)
}

// workTree is the snapshot of the project without its .git.
func workTree(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	s := snapshot(t, f.project)
	for k := range s {
		if strings.HasPrefix(k, ".git/") {
			delete(s, k)
		}
	}
	return s
}

// treeOfPatch is the tree of base with `shadow diff --binary` of changes applied by git.
func treeOfPatch(t *testing.T, f *fixture, base string, changes []*changeset.Change) string {
	t.Helper()
	patches, err := f.s.Patches(changes)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := diff.WritePatch(&buf, patches, diff.PatchOptions{Binary: true}); err != nil {
		t.Fatal(err)
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	for _, args := range [][]string{{"read-tree", base}, {"apply", "--cached", "-"}} {
		var in []byte
		if args[0] == "apply" {
			in = buf.Bytes()
		}
		if _, err := gitout.Git(f.project, env, in, args...); err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
	}
	tree, err := gitout.Git(f.project, env, nil, "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(tree)
}

// export makes a branch of the staged tree from the base commit without touching the work tree,
// the index or HEAD; it equals `shadow diff --binary` of what it exports; protected paths follow
// apply's flag; an existing branch is refused.
func TestExportBranch(t *testing.T) {
	f := gitFixture(t)
	f.stage(t, map[string]file{".github/ci.yml": {Data: "on: push\njobs: {}\n"}, "bin/run": {Data: "#!/bin/sh\necho hi\n", Mode: 0o755},
		"img.bin": {Data: "\x00\x01\x02"}, "link": {Link: "a.txt"}})
	base := gitT(t, f.project, "rev-parse", "HEAD")
	if f.s.Meta.BaseCommit != base {
		t.Fatalf("base commit %q, want HEAD at session start %s", f.s.Meta.BaseCommit, base)
	}
	// The developer moves on: a commit of their own, and the staged change of gitFixture.
	gitT(t, f.project, "commit", "-q", "-m", "the developer's own")
	before, files := gitState(t, f), workTree(t, f)
	res, err := f.s.Export(gitout.ExportOptions{Branch: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if after := gitState(t, f); after != before {
		t.Fatalf("export touched HEAD, the index or the work tree:\n%s\n---\n%s", before, after)
	}
	if d := diffSnapshots(files, workTree(t, f)); d != "" {
		t.Fatalf("export changed the project:\n%s", d)
	}
	if parent := gitT(t, f.project, "rev-parse", "agent^"); parent != base {
		t.Fatalf("the branch starts at %s, want the base commit %s", parent, base)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Path != ".github/ci.yml" {
		t.Fatalf("skipped %+v, want the protected CI file", res.Skipped)
	}
	var exported []*changeset.Change
	cs := f.changes(t)
	for i := range cs.Changes {
		if !cs.Changes[i].Protected {
			exported = append(exported, &cs.Changes[i])
		}
	}
	if got, want := gitT(t, f.project, "rev-parse", "agent^{tree}"), treeOfPatch(t, f, base, exported); got != want {
		t.Fatalf("git diff BASE agent is not shadow diff --binary:\n%s", gitT(t, f.project, "diff", "--stat", base, "agent"))
	}
	if got := gitT(t, f.project, "log", "-1", "--format=%B", "agent"); !strings.Contains(got, f.s.ID()) || !strings.Contains(got, "aider --yes 'fix it'") {
		t.Fatalf("message:\n%s", got)
	}
	// With --allow-protected, everything: the tree is shadow diff --binary's whole.
	if _, err := f.s.Export(gitout.ExportOptions{Branch: "agent-all", AllowProtected: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := gitT(t, f.project, "rev-parse", "agent-all^{tree}"), treeOfPatch(t, f, base, cs.Select(nil)); got != want {
		t.Fatalf("with --allow-protected: %s", gitT(t, f.project, "diff", "--stat", base, "agent-all"))
	}
	// An existing branch is refused, and left as it was.
	tip := gitT(t, f.project, "rev-parse", "agent")
	_, err = f.s.Export(gitout.ExportOptions{Branch: "agent", Message: "again"})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("export over an existing branch: %v", err)
	}
	if gitT(t, f.project, "rev-parse", "agent") != tip {
		t.Fatal("the existing branch moved")
	}
}

// A session started without a base commit (an older shadow) refuses to export, in one line.
func TestExportNoBaseCommit(t *testing.T) {
	f := gitFixture(t)
	f.s.Meta.BaseCommit = ""
	_, err := f.s.Export(gitout.ExportOptions{Branch: "agent"})
	if err == nil || !strings.Contains(err.Error(), "no base commit") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v", err)
	}
	if _, err := gitout.Git(f.project, nil, nil, "rev-parse", "--verify", "-q", "refs/heads/agent"); err == nil {
		t.Fatal("a branch was made")
	}
}
