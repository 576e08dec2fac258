package gitout

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

// ExportOptions choose what `shadow export` puts in its branch: the changes apply --all would
// write, with the same flags for ignored, protected and outside-link paths.
type ExportOptions struct {
	// Branch is the new branch's name; it must not exist.
	Branch string
	// Message replaces the commit message that names the session, its checkpoints and the command.
	Message           string
	IncludeIgnored    bool
	AllowProtected    bool
	AllowOutsideLinks bool
}

// ExportResult is what an export made.
type ExportResult struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	// Base is the session's base commit, the new commit's parent.
	Base    string              `json:"base"`
	Paths   int                 `json:"paths"`
	Skipped []changeset.Skipped `json:"skipped,omitempty"`
}

// Export writes the session's staged tree as one commit on a new branch from the session's base
// commit (HEAD when it started), with git plumbing in a temporary index: the work tree, the
// index and HEAD are not touched. The commit is the base commit's tree with every selected change
// of the change set put in (the agent's version of each path, or its deletion), so that
// `git diff BASE BRANCH` is what `shadow diff --binary` shows, as long as the changed paths held
// at session start what the base commit holds.
func Export(s Session, opts ExportOptions) (*ExportResult, error) {
	if s.BaseCommit() == "" {
		return nil, fmt.Errorf("export: session %s has no base commit recorded (it was started by an older shadow, or outside a git repository); start a new session to export one", s.ID())
	}
	top, err := gitTop(s, "export")
	if err != nil {
		return nil, err
	}
	if _, err := Git(top, nil, nil, "check-ref-format", "--branch", opts.Branch); err != nil || strings.HasPrefix(opts.Branch, "-") {
		return nil, fmt.Errorf("export: %q is not a valid branch name", opts.Branch)
	}
	ref := "refs/heads/" + opts.Branch
	if _, err := Git(top, nil, nil, "rev-parse", "--verify", "-q", ref); err == nil {
		return nil, fmt.Errorf("export: branch %s already exists; choose another name (nothing was written)", opts.Branch)
	}
	if _, err := Git(top, nil, nil, "cat-file", "-e", s.BaseCommit()+"^{commit}"); err != nil {
		return nil, fmt.Errorf("export: the session's base commit %s is not in the repository any more", changeset.ShortHash(s.BaseCommit()))
	}
	prefix, err := filepath.Rel(top, s.Project())
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	cs, err := s.Changes()
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Branch: opts.Branch, Base: s.BaseCommit()}
	dir, err := os.MkdirTemp("", "shadow-export-")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer os.RemoveAll(dir)
	var (
		entries []treeEntry
		touched []string
	)
	for i := range cs.Changes {
		c := &cs.Changes[i]
		reason := ""
		switch {
		case c.Special || c.Unreadable != "":
			reason = "cannot be read or is a special file: never exported"
		case c.Ignored && !opts.IncludeIgnored:
			reason = "ignored by .gitignore (use --include-ignored)"
		case c.Protected && !opts.AllowProtected:
			reason = "protected: " + c.ProtectedWhy + " (use --allow-protected)"
		case c.OutsideLink && !opts.AllowOutsideLinks:
			reason = fmt.Sprintf("symlink to %q leaves the project (use --allow-outside-links)", c.New.Target)
		case inGitDir(c.Path) || (c.From != "" && inGitDir(c.From)):
			reason = "inside a .git directory, which git cannot hold"
		}
		if reason != "" {
			res.Skipped = append(res.Skipped, changeset.Skipped{Path: c.Path, Reason: reason})
			continue
		}
		at := func(p string) string { return filepath.ToSlash(filepath.Join(prefix, p)) }
		if c.From != "" {
			entries = append(entries, treeEntry{Path: at(c.From)})
		}
		touched = append(touched, c.Path)
		switch c.New.Kind {
		case changeset.KindNone:
			entries = append(entries, treeEntry{Path: at(c.Path)})
		case changeset.KindSymlink:
			entries = append(entries, treeEntry{Path: at(c.Path), Mode: "120000", Target: c.New.Target})
		case changeset.KindFile:
			src, err := exportSource(s, c, dir, i)
			if err != nil {
				return nil, err
			}
			entries = append(entries, treeEntry{Path: at(c.Path), Mode: blobMode(c.New.Mode), Source: src})
		}
	}
	tree, err := gitTree(top, dir, s.BaseCommit(), entries)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	zero := strings.Repeat("0", len(s.BaseCommit()))
	msg := opts.Message
	if msg == "" {
		if msg, err = exportMessage(s, len(touched)); err != nil {
			return nil, err
		}
	}
	out, err := Git(top, nil, []byte(msg), "commit-tree", tree, "-p", s.BaseCommit(), "-F", "-")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res.Commit = strings.TrimSpace(out)
	// The zero old value makes git refuse a branch that appeared meanwhile.
	if _, err := Git(top, nil, nil, "update-ref", "-m", "shadow export "+s.ID(), ref, res.Commit, zero); err != nil {
		return nil, fmt.Errorf("export: create branch %s: %w", opts.Branch, err)
	}
	res.Paths = len(touched)
	return res, nil
}

// exportSource is a file git can read the staged content of c from (blobSource).
func exportSource(s Session, c *changeset.Change, dir string, i int) (string, error) {
	p := filepath.Join(s.UpperDir(), filepath.FromSlash(c.Path))
	src, err := blobSource(p, c.New.Mode, func() (*os.File, error) { return s.OpenStaged(c.Path) }, dir, i)
	if err != nil {
		return "", fmt.Errorf("export: read staged %s: %w", quote.Path(c.Path), err)
	}
	return src, nil
}

// treeEntry is one path gitTree puts into a tree: a blob of the bytes in Source (or, for a
// symlink, of Target), or with no Mode the path's removal.
type treeEntry struct {
	Path   string // relative to the work tree's top, slash-separated
	Mode   string // "100644", "100755" or "120000"; "" removes Path
	Source string // the file holding a regular file's bytes
	Target string // a symlink's target
}

// blobMode is the git mode of a regular file of permission bits mode.
func blobMode(mode uint32) string {
	if mode&0o100 != 0 {
		return "100755"
	}
	return "100644"
}

// gitTree writes the tree of the commit base ("" for none) with entries put in, using a
// temporary index in dir, and returns the tree's id. It is how both `apply --commit` and
// `export --branch` make a tree: the blobs are the bytes shadow holds, stored with `git
// hash-object --no-filters`, and only plumbing that reads no work-tree file runs, so no filter,
// end-of-line, ident or encoding conversion the project's .gitattributes selects ever runs, and
// the commit holds what review showed.
func gitTree(top, dir, base string, entries []treeEntry) (string, error) {
	var sources []string
	for i, e := range entries {
		switch e.Mode {
		case "":
			continue
		case "120000":
			tmp := filepath.Join(dir, fmt.Sprintf("link%d", i))
			if err := os.WriteFile(tmp, []byte(e.Target), 0o600); err != nil {
				return "", err
			}
			sources = append(sources, tmp)
		default:
			sources = append(sources, e.Source)
		}
	}
	var ids []string
	if len(sources) > 0 {
		out, err := Git(top, nil, []byte(strings.Join(sources, "\n")+"\n"), "hash-object", "-w", "--no-filters", "--stdin-paths")
		if err != nil {
			return "", fmt.Errorf("store the files: %w", err)
		}
		if ids = strings.Fields(out); len(ids) != len(sources) {
			return "", fmt.Errorf("git hash-object gave %s for %s", english.Count(len(ids), "id"), english.Count(len(sources), "file"))
		}
	}
	zero := strings.Repeat("0", len(base))
	if len(ids) > 0 {
		zero = strings.Repeat("0", len(ids[0]))
	}
	var info strings.Builder
	for _, e := range entries {
		if e.Mode != "" {
			info.WriteString(e.Mode + " " + ids[0] + "\t" + e.Path + "\x00")
			ids = ids[1:]
		} else if zero != "" {
			info.WriteString("0 " + zero + "\t" + e.Path + "\x00")
		}
	}
	tmp := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}
	if base != "" {
		if _, err := Git(top, tmp, nil, "read-tree", base); err != nil {
			return "", err
		}
	}
	if _, err := Git(top, tmp, []byte(info.String()), "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	tree, err := Git(top, tmp, nil, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(tree), nil
}

// blobSource is a file git can read a blob's bytes from: the file at p itself, or a copy in dir
// (read through open) where its name, length or mode (perm bits) keeps git from reading it there.
func blobSource(p string, mode uint32, open func() (*os.File, error), dir string, i int) (string, error) {
	if !strings.ContainsAny(p, "\n\r") && len(p) < unix.PathMax && mode&0o400 != 0 {
		return p, nil
	}
	in, err := open()
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp := filepath.Join(dir, fmt.Sprintf("file%d", i))
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return tmp, nil
}

// inGitDir reports whether p has a path element named .git (case-insensitively, as git refuses).
func inGitDir(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if strings.EqualFold(e, ".git") {
			return true
		}
	}
	return false
}

// exportMessage is the message of an export's commit.
func exportMessage(s Session, paths int) (string, error) {
	runs, err := s.Runs()
	if err != nil {
		return "", err
	}
	agent := "(no run recorded)"
	if len(runs) > 0 {
		agent = argvText(runs[len(runs)-1].Argv)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "shadow: the agent's changes to %s (session %s)\n\n", english.Count(paths, "path"), s.ID())
	fmt.Fprintf(&b, "Exported with shadow from session %s, staged by the agent's command:\n\n    %s\n", s.ID(), agent)
	lines, err := checkpointLines(s, runs)
	if err != nil {
		return "", err
	}
	if len(lines) > 0 {
		b.WriteString("\nCheckpoints:\n")
		for _, l := range lines {
			b.WriteString("    " + l + "\n")
		}
	}
	fmt.Fprintf(&b, "\nShadow-Session: %s\n", s.ID())
	return b.String(), nil
}
