// Package gitout writes a session's work as git objects with git plumbing, never through the
// work tree or the developer's index: the commit of an apply (apply --commit) and the branch of an
// export, each from the exact bytes, modes and links written or staged, with no git filter or
// hook run.
package gitout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
)

// An apply made with --commit (SPEC §13) becomes a git commit of exactly the paths it wrote. The
// commit is built with git plumbing in a temporary index (GIT_INDEX_FILE) from HEAD, so that
// nothing else the developer staged goes into it; the real index then gets the committed entries
// of those paths only, and HEAD moves last, with update-ref checking that it did not move
// meanwhile. What was made is recorded beside the apply's journal entry (commit.json) before HEAD
// moves, so that a rollback of the apply can undo the commit too, and refuses once the commit is
// no longer HEAD.

// commitRecord is commit.json in an apply's journal directory.
type commitRecord struct {
	Commit string `json:"commit"`
	// Parent is the HEAD the commit was made on ("" on a branch with no commit yet).
	Parent string `json:"parent,omitempty"`
	// Top is the git work tree's top level; Paths the committed paths, relative to it.
	Top   string   `json:"top"`
	Paths []string `json:"paths"`
	// Index is what the index held for Paths before (`git ls-files -s -z`), put back when the
	// commit is undone.
	Index string `json:"index"`
}

const commitFile = "commit.json"

// gitSafe is set on every git command shadow runs: no hook runs (update-ref would run
// reference-transaction, and core.hooksPath may name a directory of the project, which the
// agent writes), and no fsmonitor is asked.
var gitSafe = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}

// git runs git in dir with extra environment, stdin and args, and returns its standard output.
// Its error is one line: the git command and the first line git wrote on standard error.
//
// No command it runs can run a program the project chooses. Hooks and fsmonitor are off
// (gitSafe). Filters are the project's choice too, by its .gitattributes, of drivers the host's
// config defines (`git lfs install` defines one): shadow's blobs are made with --no-filters
// (gitTree), but any command that writes the index re-reads racily clean entries through their
// filters, so every filter driver the config defines is turned off as well (noFilters). The
// commands are plumbing that run no diff or merge, so no textconv or merge driver runs.
func Git(dir string, env []string, stdin []byte, args ...string) (string, error) {
	off, err := noFilters(dir, env)
	if err != nil {
		return "", err
	}
	return runGit(dir, env, stdin, append(slices.Clone(gitSafe), off...), args...)
}

// noFilters is the -c options that turn off every filter driver git's config defines for dir.
func noFilters(dir string, env []string) ([]string, error) {
	out, err := runGit(dir, env, nil, gitSafe, "config", "-z", "--name-only", "--get-regexp", `^filter\.`)
	if err != nil {
		// Exit 1 is no match; a failure to read the config fails the command that follows.
		return nil, nil
	}
	var opts []string
	seen := map[string]bool{}
	for _, key := range strings.Split(out, "\x00") {
		i := strings.LastIndexByte(key, '.')
		if i <= len("filter") {
			continue
		}
		name := key[len("filter."):i]
		if seen[name] {
			continue
		}
		seen[name] = true
		if strings.ContainsAny(name, "=\n") {
			return nil, fmt.Errorf("git: the filter driver %s cannot be turned off for shadow's git commands (its name has = or a newline): rename it in your git config", quote.Path(name))
		}
		for _, k := range []string{"clean=", "smudge=", "process=", "required=false"} {
			opts = append(opts, "-c", "filter."+name+"."+k)
		}
	}
	return opts, nil
}

// runGit runs git with the options opts before the command and its args.
func runGit(dir string, env []string, stdin []byte, opts []string, args ...string) (string, error) {
	cmd := exec.Command("git", append(slices.Clone(opts), args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_LITERAL_PATHSPECS=1", "LC_ALL=C"), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
		if msg == "" {
			msg = err.Error()
		}
		if errors.Is(err, exec.ErrNotFound) {
			msg = "git is not installed"
		}
		return "", fmt.Errorf("git %s: %s", args[0], strings.TrimPrefix(msg, "fatal: "))
	}
	return out.String(), nil
}

// Head is the commit HEAD names in the work tree holding dir, "" when there is none (no git,
// not a repository, or a branch with no commit yet).
func Head(dir string) string {
	out, err := Git(dir, nil, nil, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// gitTop is the top level of the git work tree holding the project, or an error that says the
// project is not in one.
func gitTop(s Session, what string) (string, error) {
	out, err := Git(s.Project(), nil, nil, "rev-parse", "--show-toplevel")
	if err != nil || strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("%s: %s is not in a git work tree (%v)", what, s.Project(), err)
	}
	return strings.TrimSpace(out), nil
}

// CheckCommit says why an apply of this session could not be committed, before anything is
// written: no git work tree, no identity to commit with, or an index in the middle of a merge.
func CheckCommit(s Session) error {
	top, err := gitTop(s, "apply --commit")
	if err != nil {
		return err
	}
	if _, err := Git(top, nil, nil, "var", "GIT_COMMITTER_IDENT"); err != nil {
		return fmt.Errorf("apply --commit: git has no identity to commit with: set user.name and user.email (git config --global user.email you@example.com)")
	}
	if out, err := Git(top, nil, nil, "ls-files", "-u"); err != nil {
		return fmt.Errorf("apply --commit: %w", err)
	} else if out != "" {
		return fmt.Errorf("apply --commit: the index has unmerged paths; finish or abort that merge first")
	}
	return nil
}

// Session is what git output reads of a session: its record, its runs and checkpoints, its
// change set and its staged files.
type Session interface {
	ID() string
	Project() string
	// BaseCommit is the commit HEAD named when the session started ("" when none).
	BaseCommit() string
	Runs() ([]store.Run, error)
	Checkpoints() ([]layers.Checkpoint, error)
	Changes() (*changeset.ChangeSet, error)
	// UpperDir is the staging layer; OpenStaged opens a staged file in it without following a
	// symlink.
	UpperDir() string
	OpenStaged(path string) (*os.File, error)
}

// Apply is what an apply wrote (its paths, relative to the project) and its journal directory,
// where the commit's record is kept so that a rollback can undo the commit.
type Apply struct {
	ID      string
	Paths   []string
	Journal string
}

// CommitApply makes the git commit of an apply: exactly the paths it wrote (the rest of the
// index untouched), on HEAD, with msg or else a message naming the session, its checkpoints and
// the agent's command. It returns the commit's id.
func CommitApply(s Session, res Apply, msg string) (string, error) {
	if res.ID == "" || len(res.Paths) == 0 {
		return "", errors.New("apply --commit: nothing was applied, so nothing is committed")
	}
	top, err := gitTop(s, "apply --commit")
	if err != nil {
		return "", err
	}
	prefix, err := filepath.Rel(top, s.Project())
	if err != nil {
		return "", fmt.Errorf("apply --commit: %w", err)
	}
	var paths []string
	for _, p := range res.Paths {
		paths = append(paths, filepath.ToSlash(filepath.Join(prefix, p)))
	}
	parent := Head(top)
	dir, err := os.MkdirTemp("", "shadow-commit-")
	if err != nil {
		return "", fmt.Errorf("apply --commit: %w", err)
	}
	defer os.RemoveAll(dir)
	entries, err := appliedEntries(s, res, paths, dir)
	if err != nil {
		return "", err
	}
	tree, err := gitTree(top, dir, parent, entries)
	if err != nil {
		return "", fmt.Errorf("apply --commit: %w", err)
	}
	tmp := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}
	if msg == "" {
		if msg, err = commitMessage(s, res); err != nil {
			return "", err
		}
	}
	args := []string{"commit-tree", tree, "-F", "-"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	out, err := Git(top, nil, []byte(msg), args...)
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(out)
	prior, err := Git(top, nil, nil, append([]string{"ls-files", "-s", "-z", "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	rec := commitRecord{Commit: commit, Parent: parent, Top: top, Paths: paths, Index: prior}
	if err := statefile.WriteJSON(filepath.Join(res.Journal, commitFile), rec); err != nil {
		return "", fmt.Errorf("apply --commit: %w", err)
	}
	// The index first: a crash before HEAD moves leaves these paths staged, as `git add` would.
	committed, err := Git(top, tmp, nil, append([]string{"ls-files", "-s", "-z", "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	if err := setIndex(top, paths, committed, len(commit)); err != nil {
		return "", err
	}
	old := parent
	if old == "" {
		old = strings.Repeat("0", len(commit))
	}
	if _, err := Git(top, nil, nil, "update-ref", "-m", "shadow apply "+res.ID, "HEAD", commit, old); err != nil {
		return "", fmt.Errorf("apply --commit: HEAD moved while the commit was made: %w", err)
	}
	return commit, nil
}

// appliedEntries are the tree entries of what an apply wrote: the bytes, mode or symlink target
// each path has in the project now (read without following a symlink), or its removal; paths
// are the same paths relative to the git work tree's top.
func appliedEntries(s Session, res Apply, paths []string, dir string) ([]treeEntry, error) {
	root, err := projectfs.OpenRoot(s.Project())
	if err != nil {
		return nil, fmt.Errorf("apply --commit: %w", err)
	}
	defer root.Close()
	entries := make([]treeEntry, len(res.Paths))
	for i, f := range res.Paths {
		h, err := root.Lstat(f)
		if err != nil {
			return nil, fmt.Errorf("apply --commit: %w", err)
		}
		e := treeEntry{Path: paths[i]}
		switch {
		case !h.Exists:
		case h.Stat.Type == 'l':
			e.Mode, e.Target = "120000", h.Target
		case h.Stat.Type == 'f':
			e.Mode = blobMode(h.Stat.Mode)
			p := filepath.Join(s.Project(), filepath.FromSlash(f))
			if e.Source, err = blobSource(p, h.Stat.Mode, func() (*os.File, error) { return root.OpenRead(f) }, dir, i); err != nil {
				return nil, fmt.Errorf("apply --commit: read %s: %w", quote.Path(f), err)
			}
		default:
			return nil, fmt.Errorf("apply --commit: %s is no longer a file or a symlink", quote.Path(f))
		}
		entries[i] = e
	}
	return entries, nil
}

// setIndex makes the index entries of paths those of entries (`git ls-files -s -z` output): a
// path with no entry there is removed from the index.
func setIndex(top string, paths []string, entries string, hexLen int) error {
	has := map[string]bool{}
	var info strings.Builder
	for _, e := range strings.Split(entries, "\x00") {
		if _, p, ok := strings.Cut(e, "\t"); ok {
			has[p] = true
			info.WriteString(e + "\x00")
		}
	}
	for _, p := range paths {
		if !has[p] {
			info.WriteString("0 " + strings.Repeat("0", hexLen) + "\t" + p + "\x00")
		}
	}
	if _, err := Git(top, nil, []byte(info.String()), "update-index", "-z", "--index-info"); err != nil {
		return err
	}
	return nil
}

// commitMessage is the message of an apply's commit: what was applied, from which session, its
// checkpoints and the agent's command.
func commitMessage(s Session, res Apply) (string, error) {
	runs, err := s.Runs()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	agent := "(no run recorded)"
	if len(runs) > 0 {
		agent = argvText(runs[len(runs)-1].Argv)
	}
	fmt.Fprintf(&b, "shadow: apply the agent's changes to %s\n\n", english.Count(len(res.Paths), "path"))
	fmt.Fprintf(&b, "Applied with shadow (apply %s) from session %s, made by the agent's command:\n\n    %s\n", res.ID, s.ID(), agent)
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
	fmt.Fprintf(&b, "\nShadow-Session: %s\nShadow-Apply: %s\n", s.ID(), res.ID)
	return b.String(), nil
}

// checkpointLines names the session's checkpoints in a commit message, one line each: id, time,
// what took it, the command. A session whose runs took none (every run of a session made before
// checkpoints existed) names its runs instead.
func checkpointLines(s Session, runs []store.Run) ([]string, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cps {
		trigger := c.Trigger
		if c.Prompt != "" {
			trigger += fmt.Sprintf(" %q", c.Prompt)
		}
		out = append(out, fmt.Sprintf("%s  %s  %s  %s", c.ID, c.Time.UTC().Format(time.DateTime+" MST"), trigger, argvText(c.Typed())))
	}
	if len(out) > 0 {
		return out, nil
	}
	for i, r := range runs {
		end := fmt.Sprintf("exit %d", r.ExitCode)
		if r.End.IsZero() {
			end = "did not end"
		}
		out = append(out, fmt.Sprintf("run %d  %s  %s (%s)", i+1, r.Start.UTC().Format(time.DateTime+" MST"), argvText(r.Argv), end))
	}
	return out, nil
}

// argvText is a command line as one line of text, each argument quoted when it needs it.
func argvText(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			parts[i] = quote.Shell(a)
		}
	}
	return quote.Path(strings.Join(parts, " "))
}

// readCommit reads the commit record of the apply whose journal directory is jdir (nil when the
// apply was not committed).
func readCommit(jdir string) (*commitRecord, error) {
	data, err := os.ReadFile(filepath.Join(jdir, commitFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec commitRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Commit == "" || rec.Top == "" {
		return nil, fmt.Errorf("corrupt %s", filepath.Join(jdir, commitFile))
	}
	return &rec, nil
}

// UncommitApplies undoes the commits of applies about to be rolled back, given newest first by
// their journal directories, before their files are restored: each committed one must be HEAD
// (once the newer ones are undone), or the rollback is refused, touching nothing. A commit whose
// parent is HEAD already (it never landed, or the developer undid it) is left alone. HEAD goes
// back to the parent and the index entries of the commit's paths to what they were.
func UncommitApplies(jdirs []string) error {
	type undo struct {
		id  string
		rec *commitRecord
	}
	var todo []undo
	heads := map[string]string{} // the HEAD of each work tree as the undos leave it
	for _, jdir := range jdirs {
		rec, err := readCommit(jdir)
		if err != nil {
			return fmt.Errorf("roll back: %w", err)
		}
		if rec == nil {
			continue
		}
		id := filepath.Base(jdir)
		head, ok := heads[rec.Top]
		if !ok {
			head = Head(rec.Top)
		}
		switch head {
		case rec.Commit:
			todo = append(todo, undo{id, rec})
			heads[rec.Top] = rec.Parent
		case rec.Parent:
			heads[rec.Top] = head
		default:
			now := "none"
			if head != "" {
				now = changeset.ShortHash(head)
			}
			return fmt.Errorf("roll back apply %s: it was committed as %s, which is no longer HEAD (HEAD is %s); nothing was rolled back: undo it with git revert %s",
				id, changeset.ShortHash(rec.Commit), now, changeset.ShortHash(rec.Commit))
		}
	}
	for _, u := range todo {
		rec := u.rec
		args := []string{"update-ref", "-m", "shadow rollback " + u.id, "HEAD", rec.Parent, rec.Commit}
		if rec.Parent == "" {
			args = []string{"update-ref", "-d", "-m", "shadow rollback " + u.id, "HEAD", rec.Commit}
		}
		if _, err := Git(rec.Top, nil, nil, args...); err != nil {
			return fmt.Errorf("roll back apply %s: undo its commit: %w", u.id, err)
		}
		if err := setIndex(rec.Top, rec.Paths, rec.Index, len(rec.Commit)); err != nil {
			return fmt.Errorf("roll back apply %s: put the index back: %w", u.id, err)
		}
	}
	return nil
}
