package session

import "github.com/shadow-sandbox/shadow/session/changeset"

// The change set's vocabulary, as the session's callers name it: a session's Changes are a
// changeset.ChangeSet, computed by package changeset from the staging layer and the pre-images.
type (
	ChangeSet = changeset.ChangeSet
	Change    = changeset.Change
	Side      = changeset.Side
	Status    = changeset.Status
	FileKind  = changeset.FileKind
	Summary   = changeset.Summary
)

// The statuses and kinds of a change's sides.
const (
	Added    = changeset.Added
	Modified = changeset.Modified
	Deleted  = changeset.Deleted
	Renamed  = changeset.Renamed

	KindNone    = changeset.KindNone
	KindFile    = changeset.KindFile
	KindSymlink = changeset.KindSymlink
	KindSpecial = changeset.KindSpecial
)

// ProtectedPaths is SPEC §4's protected list (changeset.ProtectedPaths).
var ProtectedPaths = changeset.ProtectedPaths

// Summarize counts a change set for a summary line (changeset.Summarize).
func Summarize(cs *ChangeSet, limit int) Summary { return changeset.Summarize(cs, limit) }
