package session

import "github.com/shadow-sandbox/shadow/session/store"

// The store's records and errors, as the session's callers name them (package store keeps the
// state directory, the session records, the project indexes and the locks).
type (
	Meta            = store.Meta
	State           = store.State
	Run             = store.Run
	ApplyRecord     = store.ApplyRecord
	ProjectIdentity = store.ProjectIdentity
	BusyError       = store.BusyError
	LockOptions     = store.LockOptions
)

// The states of a session.
const (
	StateOpen      = store.StateOpen
	StateApplied   = store.StateApplied
	StateDiscarded = store.StateDiscarded
)

// DefaultMaxDiffBytes is the largest text file the review and apply diff line by line.
const DefaultMaxDiffBytes = store.DefaultMaxDiffBytes

var (
	// ErrNoSession is returned by Current when the project has no open session.
	ErrNoSession = store.ErrNoSession
	// ErrBusy matches (errors.Is) the error of LockProject when another writer holds the project.
	ErrBusy = store.ErrBusy
)

// DefaultRoot is where the store lives by default (store.DefaultRoot).
func DefaultRoot() (string, error) { return store.DefaultRoot() }

// CheckStateDir tells whether root can hold shadow's sessions (store.CheckStateDir).
func CheckStateDir(root string) error { return store.CheckStateDir(root) }

// ResolveProject turns --project into the project's path (store.ResolveProject).
func ResolveProject(dir string) (string, error) { return store.ResolveProject(dir) }
