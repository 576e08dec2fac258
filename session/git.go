package session

import (
	"os"
	"path/filepath"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/gitout"
)

// What `shadow export` takes and makes (package gitout writes git output: the commit of an apply,
// the branch of an export).
type (
	ExportOptions = gitout.ExportOptions
	ExportResult  = gitout.ExportResult
)

// BaseCommit is the commit HEAD named when the session started ("" outside a git repository, or
// for a session of an older shadow).
func (s *Session) BaseCommit() string { return s.Meta.BaseCommit }

// OpenStaged opens the staged file p of the session's staging layer, without following a
// symlink.
func (s *Session) OpenStaged(p string) (*os.File, error) { return s.source().OpenStaged(p) }

// CheckCommit says why an apply of this session could not be committed, before anything is
// written (see gitout.CheckCommit).
func (s *Session) CheckCommit() error { return gitout.CheckCommit(s) }

// CommitApply makes the git commit of the apply res (see gitout.CommitApply) and returns its id.
func (s *Session) CommitApply(res *apply.ApplyResult, msg string) (string, error) {
	a := gitout.Apply{ID: res.ID, Journal: filepath.Join(s.journalDir(), res.ID)}
	for _, f := range res.Files {
		a.Paths = append(a.Paths, f.Path)
	}
	return gitout.CommitApply(s, a, msg)
}

// Export writes the session's staged tree as one commit on a new branch (see gitout.Export).
func (s *Session) Export(opts gitout.ExportOptions) (*gitout.ExportResult, error) {
	return gitout.Export(s, opts)
}
