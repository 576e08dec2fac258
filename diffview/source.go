package diffview

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// Status is how a path changed.
type Status byte

// The statuses of a changed path, as letters like git's.
const (
	StatusAdded    Status = 'A'
	StatusModified Status = 'M'
	StatusDeleted  Status = 'D'
	StatusRenamed  Status = 'R'
)

// File is one changed path as the review browser shows it: what changed,
// how it is classified, its hunks and the decisions already saved for them.
type File struct {
	Path    string
	OldPath string // for a rename
	Status  Status
	// OldMode and NewMode are git modes (ModeFile, ModeExecutable,
	// ModeSymlink); 0 where the side does not exist.
	OldMode, NewMode uint32
	Binary           bool
	Special          string // a FIFO, device or socket: listed, never applied
	// OldSize and NewSize are the byte sizes, shown for binary files.
	OldSize, NewSize int64
	Ignored          bool   // matched by the base's .gitignore rules
	Protected        bool   // a path an agent must not change silently
	ProtectedWhy     string // the tool that reads or runs the protected path, unasked
	Conflict         string
	Findings         []string // audit rules the staged file fails
	Note             string   // what the diff does not show: a sparse or unreadable file
	// TooLarge marks a text file too large to diff here (its sizes are
	// OldSize and NewSize): it shows no hunks and is decided as a whole.
	// ShowCommand is the command that shows its diff instead.
	TooLarge    bool
	ShowCommand string
	// Diff holds the hunks; for a symlink, the diff of its target.
	Diff      diff.FileDiff
	Decisions map[string]diff.Decision

	// Host is set when the host changed the file too (SPEC §13): its change, and the
	// conflicts among the hunks, which are then the merge on the host's file.
	Host *HostChange
}

// Symlink reports whether either side of the file is a symlink.
func (f File) Symlink() bool { return diff.IsLink(f.OldMode) || diff.IsLink(f.NewMode) }

// Source is what the review browser reads and acts on; the session
// implements it. Every method may do I/O and is only called from tea
// commands, in order.
type Source interface {
	// Load returns the changed files with their saved decisions.
	Load() ([]File, error)
	// Decide saves one hunk's decision (Undecided removes it).
	Decide(path, hunkID string, d diff.Decision) error
	// Apply writes exactly the files of plan.Write, with their saved
	// decisions, and says what it did.
	Apply(plan Plan) (Outcome, error)
	// Rollback undoes the last apply.
	Rollback() (Outcome, error)
}

// Taker is a Source over a session reviewed beside another (`shadow review --with OTHER`): it can
// stage the other session's version of a file in place of this one's, to keep the better of two
// agents' work file by file. The review then loads the files again.
type Taker interface {
	// Other names the other session.
	Other() string
	// TakeOther stages the other session's version of path in this one.
	TakeOther(path string) error
}

// Plan is what an apply from the review screen will write and leave out,
// shown for confirmation before anything is written.
type Plan struct {
	Write   []PlanFile
	LeftOut []PlanFile
}

// PlanFile is one path of a Plan with its hunk counts and, for a path left
// out, the reason.
type PlanFile struct {
	Path                          string
	Accepted, Rejected, Undecided int
	Reason                        string
}

// Outcome is what an apply or rollback did.
type Outcome struct {
	ApplyID string
	// Written are the paths an apply wrote (content, mode or link); Deleted those it removed.
	Written []string
	Deleted []string
	// Rollback is set on a rollback's outcome: Restored are the paths given their prior
	// content back, Removed those the apply had created, gone again, and OlderApply says an
	// earlier apply is left that another rollback would undo.
	Rollback   bool
	Restored   []string
	Removed    []string
	OlderApply bool
	LeftOut    []string
	Message    string
}

// CanRollback reports whether a rollback can follow the outcome: after an apply, or after a
// rollback that left an earlier apply.
func (o Outcome) CanRollback() bool { return !o.Rollback || o.OlderApply }

// WholeFileID is the decision key of a change that has no text hunks (a
// binary file, a mode change, a pure rename, an empty file): accepting it
// takes the staged file as a whole.
func WholeFileID(path string) string {
	sum := sha256.Sum256([]byte("whole file\x00" + path))
	return hex.EncodeToString(sum[:8])
}

// Items are the decidable units of a file: its hunks, or one whole-file
// item (with no lines) when it has none or is binary.
func Items(f File) []diff.Hunk {
	if len(f.Diff.Hunks) > 0 && !f.Binary {
		return f.Diff.Hunks
	}
	return []diff.Hunk{{ID: WholeFileID(f.Path), Path: f.Path}}
}

// counts tallies a file's hunks by verdict; a hunk split into pieces counts
// once per piece.
func counts(hunks []diff.Hunk, d map[string]diff.Decision) (acc, rej, und int) {
	for _, h := range hunks {
		switch d[h.ID].Verdict {
		case diff.Accepted:
			acc++
		case diff.Rejected:
			rej++
		default:
			und++
		}
	}
	return acc, rej, und
}

// MakePlan decides, from the files and their decisions, what an apply from
// the review screen writes: files with at least one accepted hunk (or
// accepted as a whole, like a deletion or a binary file) that are not
// protected, ignored, special or in conflict. Everything else with an
// accepted hunk is listed as left out, with the reason.
func MakePlan(files []File) Plan {
	var p Plan
	for _, f := range files {
		_, ds := diff.Resolve(Items(f), f.Decisions)
		pf := PlanFile{Path: f.Path}
		for _, d := range ds {
			switch d.Verdict {
			case diff.Accepted:
				pf.Accepted++
			case diff.Rejected:
				pf.Rejected++
			default:
				pf.Undecided++
			}
		}
		if pf.Accepted == 0 {
			continue
		}
		switch {
		case f.Special != "":
			pf.Reason = fmt.Sprintf("special file (%s), never applied", f.Special)
		case f.Conflict != "":
			pf.Reason = "conflict: " + f.Conflict
		case f.Protected && f.ProtectedWhy != "":
			// The advice first: the dialog cuts long lines.
			pf.Reason = "protected path, apply it with shadow apply --allow-protected: " + f.ProtectedWhy
		case f.Protected:
			pf.Reason = "protected path: apply it with shadow apply --allow-protected"
		case f.Ignored:
			pf.Reason = "ignored path: apply it with shadow apply --include-ignored"
		}
		if pf.Reason != "" {
			p.LeftOut = append(p.LeftOut, pf)
		} else {
			p.Write = append(p.Write, pf)
		}
	}
	return p
}
