// Package apply moves accepted changes into the project (SPEC §4): the plan (which changes,
// hunks and merges an apply writes, against the pre-images and the project as they are), the
// journaled write that a crash at any instant leaves finished or undone, the rollback that
// restores the project byte for byte, and the review's decisions the plan follows.
package apply

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

const noFollow = unix.O_NOFOLLOW

// ApplyOptions choose what Apply writes into the project.
type ApplyOptions struct {
	// All applies every change as a whole file (the agent's exact bytes).
	All bool
	// Paths applies the changes at or below these project-relative paths as whole files.
	Paths []string
	// IncludeIgnored lets ignored paths be applied; AllowProtected protected ones.
	IncludeIgnored bool
	AllowProtected bool
	// AllowOutsideLinks applies staged symlinks whose target leaves the project.
	AllowOutsideLinks bool
	// Protected extends DefaultProtected (the config's `protected` key).
	Protected []string
}

// Skipped is a change an apply or an export leaves out, and why (changeset.Skipped).
type Skipped = changeset.Skipped

// PlannedFile is one path an apply writes or deletes.
type PlannedFile struct {
	Path string `json:"path"`
	// Action is "write", "symlink" or "delete".
	Action string `json:"action"`
	// Whole is set when the agent's exact bytes are written; otherwise base + accepted hunks.
	Whole bool `json:"whole"`
	// Merged is set when the content is the host's file with the agent's accepted hunks (SPEC §13).
	Merged   bool `json:"merged,omitempty"`
	Accepted int  `json:"hunks_accepted,omitempty"`
	Rejected int  `json:"hunks_rejected,omitempty"`
	Pending  int  `json:"hunks_undecided,omitempty"`
}

// ApplyPlan is what an apply would do, for a confirmation before it is made.
type ApplyPlan struct {
	Files    []PlannedFile `json:"files"`
	Skipped  []Skipped     `json:"skipped,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// Closes is set when nothing stays pending afterwards: the session becomes applied.
	Closes bool `json:"closes_session"`

	Ops       []op
	contents  map[string][]byte        // the content of partial applies, by sha256
	Decisions map[string]*FileDecision // the file decisions to keep after the apply (nil: drop)
	Prior     map[string]*FileDecision
}

// ApplyResult is what an apply did.
type ApplyResult struct {
	ID string `json:"id"`
	// Recovered says what was done about an earlier apply a crash interrupted ("" if none).
	Recovered string `json:"recovered,omitempty"`
	// Interrupted is set when ApplyContext's context was cancelled once the apply had begun
	// to replace project files: it was finished rather than undone.
	Interrupted bool `json:"interrupted,omitempty"`
	ApplyPlan
}

// InterruptedError is ApplyContext's error when its context was cancelled (Ctrl+C) before the
// apply began to replace project files: what it had done was undone, and the project is as
// it was.
type InterruptedError struct {
	// ID is the apply's id; "" when it was interrupted before it wrote anything.
	ID     string
	Undone Undone
}

// Error says that the apply was undone, with what undoing it did.
func (e *InterruptedError) Error() string {
	if e.ID == "" {
		return "apply interrupted before it wrote anything: the project is unchanged"
	}
	return fmt.Sprintf("apply %s interrupted, and undone: %s; the project is as it was before it", e.ID, e.Undone)
}

// Undone counts what undoing an apply did to the project.
type Undone struct {
	// Restored are the paths put back as they were before the
	Restored int `json:"restored"`
	// Removed are the apply's unfinished files (the temp files beside their targets) removed.
	Removed int `json:"removed,omitempty"`
}

// String says what was undone: "3 paths restored, 3645 unfinished files removed".
func (u Undone) String() string {
	s := english.Count(u.Restored, "path") + " restored"
	if u.Removed > 0 {
		s += ", " + english.Count(u.Removed, "unfinished file") + " removed"
	}
	return s
}

// errInterrupted stops the workers of an apply whose context was cancelled.
var errInterrupted = errors.New("apply interrupted")

// op is one write of an
type op struct {
	Path   string `json:"path"`
	Kind   byte   `json:"kind"` // 'f' write a file, 'l' a symlink, 'd' delete
	Mode   uint32 `json:"mode,omitempty"`
	Target string `json:"target,omitempty"`
	Hash   string `json:"hash,omitempty"`
	// Whole: the content is the staged upper file; otherwise it is the base object Hash.
	Whole bool `json:"whole,omitempty"`
	// Merge: the content merges the host's change and the agent's; the path keeps its pre-image
	// as its base (see merge.go).
	Merge bool `json:"merge,omitempty"`
}

// ApplyStep, when set, is called at each step of an apply (tests kill the process there).
var ApplyStep func(step string)

// stepMu serializes the calls of ApplyStep made by parallel workers.
var stepMu sync.Mutex

func step(name string) {
	if ApplyStep != nil {
		stepMu.Lock()
		defer stepMu.Unlock()
		ApplyStep(name)
	}
}
