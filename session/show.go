package session

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/shadow-sandbox/shadow/session/changeset"
)

// ShowCommand is a shell command that shows a change's diff outside the review, for a text file
// too large to diff there (TooLargeToDiff): `shadow diff -- PATH | less` while `shadow diff` writes
// it as text, else a plain diff of the project's file against the staged one.
func (s *Session) ShowCommand(c *changeset.Change) string {
	project := filepath.Join(s.Meta.Project, c.Path)
	if c.Old.Size <= changeset.MaxPatchBytes && c.New.Size <= changeset.MaxPatchBytes {
		return "shadow diff -- " + quoteArg(project) + " | less"
	}
	old, staged := project, filepath.Join(s.UpperDir(), c.Path)
	if !c.Old.Exists() {
		old = "/dev/null"
	}
	if !c.New.Exists() {
		staged = "/dev/null"
	}
	return "diff -u -- " + quoteArg(old) + " " + quoteArg(staged) + " | less"
}

// shellSafe matches words a POSIX shell takes as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// quoteArg quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
