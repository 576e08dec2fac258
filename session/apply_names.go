package session

import "github.com/shadow-sandbox/shadow/session/apply"

// Apply's vocabulary, as the session's callers name it (package apply plans and writes an apply
// through its journal, rolls one back, and keeps the review's decisions).
type (
	ApplyOptions     = apply.ApplyOptions
	ApplyPlan        = apply.ApplyPlan
	ApplyResult      = apply.ApplyResult
	PlannedFile      = apply.PlannedFile
	InterruptedError = apply.InterruptedError
	Undone           = apply.Undone
	Decisions        = apply.Decisions
	FileDecision     = apply.FileDecision
	HostView         = apply.HostView
	Skipped          = apply.Skipped
)
