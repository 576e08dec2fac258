package session

import (
	"fmt"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/history"
)

// The history's vocabulary, as the session's callers name it (package history keeps the
// checkpoints, the steps between them and the revert).
type (
	Checkpoint  = history.Checkpoint
	DamagedStep = history.DamagedStep
	StepStat    = history.StepStat
)

// Base is the moment before the first checkpoint (history.Base).
const Base = history.Base

// FindCheckpoint finds a checkpoint by its id, "c2" or "2" (history.FindCheckpoint).
func FindCheckpoint(cps []Checkpoint, id string) (int, error) { return history.FindCheckpoint(cps, id) }

// CountStep counts the files and lines a step's patches change (history.CountStep).
func CountStep(patches []diff.FilePatch) (files, added, removed int) {
	return history.CountStep(patches)
}

// Revert drops every staged change made after checkpoint id: the staging layer becomes the
// checkpoints up to id merged, and the later checkpoints are kept aside, with the staging layer
// they replace, for RevertUndo until the next run. It is refused while a run is active. It returns
// the checkpoints it dropped.
func (s *Session) Revert(id string) ([]history.Checkpoint, error) {
	if err := s.writable("revert"); err != nil {
		return nil, err
	}
	if s.RunActive() {
		return nil, fmt.Errorf("session %s: a run is active (pid %d); revert once it has ended", s.Meta.ID, s.Meta.Active.PID)
	}
	if err := s.closeStaleRun(); err != nil {
		return nil, err
	}
	return s.layers().Revert(id, s.Meta.Applies)
}

// RevertUndo puts back what the last revert dropped, if no run came since. It returns the
// checkpoints it restored.
func (s *Session) RevertUndo() ([]history.Checkpoint, error) {
	if err := s.writable("revert --undo"); err != nil {
		return nil, err
	}
	if s.RunActive() {
		return nil, fmt.Errorf("session %s: a run is active (pid %d)", s.Meta.ID, s.Meta.Active.PID)
	}
	return s.layers().RevertUndo()
}

// layers is the session's history, made on first use and kept for the command.
func (s *Session) layers() *history.Layers {
	if s.hist == nil {
		s.hist = &history.Layers{ID: s.Meta.ID, Dir: s.dir, Upper: s.UpperDir(), Project: s.Meta.Project, Created: s.Meta.Created,
			Source: s.source, MarkIncomplete: s.MarkIncomplete}
	}
	return s.hist
}

// CheckpointDir holds the session's checkpoints, a directory each (see package sandbox/layers).
func (s *Session) CheckpointDir() string { return s.layers().CheckpointDir() }

// history.RevertedDir holds what the last revert set aside, until the next run.
func (s *Session) revertedDir() string { return s.layers().RevertedDir() }

// Checkpoints lists the session's checkpoints, oldest first.
func (s *Session) Checkpoints() ([]history.Checkpoint, error) { return s.layers().Checkpoints() }

// Checkpointing is what a run's policy needs for its checkpoints: the directory and the number
// of the next one (history.Layers.Checkpointing).
func (s *Session) Checkpointing() (dir string, next int, err error) {
	return s.layers().Checkpointing()
}

// HistoryPatches is the change from checkpoint from to checkpoint to, as patches (from -1: the
// session's start).
func (s *Session) HistoryPatches(cps []history.Checkpoint, from, to int) ([]diff.FilePatch, error) {
	return s.layers().HistoryPatches(cps, from, to)
}

// Log counts what each step of the session changed (see history.Layers.Log).
func (s *Session) Log() ([]history.StepStat, error) { return s.layers().Log() }

// DamagedSteps are the session's checkpoints whose contents no longer match their sums.
func (s *Session) DamagedSteps() ([]history.DamagedStep, error) { return s.layers().DamagedSteps() }
