package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/store"
)

// Apply writes the planned changes into the project, journaled so that a crash at any instant is
// recovered by the next command (SPEC §4). It refuses while a run is active.
func (s *Session) Apply(opts apply.ApplyOptions) (*apply.ApplyResult, error) {
	return s.ApplyContext(context.Background(), opts)
}

// ApplyContext is Apply, stopped when ctx is cancelled (Ctrl+C): before the apply begins to
// replace project files, what it did is undone and the error is an *InterruptedError; after,
// it is finished (the renames left are quick) and the result says it was interrupted.
func (s *Session) ApplyContext(ctx context.Context, opts apply.ApplyOptions) (*apply.ApplyResult, error) {
	if err := s.writable("apply"); err != nil {
		return nil, err
	}
	var res *apply.ApplyResult
	err := s.lock.withProject(func() error {
		var err error
		res, err = s.applyLocked(ctx, opts)
		return err
	})
	return res, err
}

// applyLocked is ApplyContext under the project's writer lock.
func (s *Session) applyLocked(ctx context.Context, opts apply.ApplyOptions) (*apply.ApplyResult, error) {
	recovered, err := s.lock.recover()
	if err != nil {
		return nil, err
	}
	if err := s.reload(); err != nil {
		return nil, err
	}
	if s.RunActive() {
		return nil, fmt.Errorf("apply: a run is active on session %s (pid %d); wait for it to end", s.Meta.ID, s.Meta.Active.PID)
	}
	if err := s.closeStaleRun(); err != nil {
		return nil, err
	}
	unlock, err := s.store.StateLock(s.Meta.Project, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// One load of the bases serves the plan, the journal and the commit.
	root, b, err := s.source().OpenView()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	defer b.Close()
	pl, err := s.applier().Plan(opts, b, root)
	if err != nil {
		return nil, err
	}
	res := &apply.ApplyResult{ApplyPlan: *pl, Recovered: recovered}
	if len(pl.Ops) == 0 {
		return res, nil
	}
	res.ID = store.NewID(time.Now())
	for p := range pl.Prior {
		if _, ok := pl.Decisions[p]; !ok {
			delete(pl.Prior, p)
		}
	}
	if ctx.Err() != nil {
		return nil, &apply.InterruptedError{}
	}
	if err := s.applier().ApplyOps(ctx, res.ID, pl, b, root); err != nil {
		return nil, err
	}
	res.Interrupted = ctx.Err() != nil
	return res, nil
}

// applier is the session as an apply sees it (apply.Session).
func (s *Session) applier() *apply.Session {
	return &apply.Session{ID: s.Meta.ID, Dir: s.dir, Upper: s.UpperDir(), Project: s.Meta.Project,
		Meta: &s.Meta, Reload: s.reload, SaveMeta: s.saveMeta,
		Source: s.source, ChangesIn: s.changesIn,
		StateLock: func(exclusive bool) (func(), error) { return s.store.StateLock(s.Meta.Project, exclusive) },
		NoOpenSession: func() bool {
			_, err := s.store.Current(s.Meta.Project)
			return errors.Is(err, store.ErrNoSession)
		},
		MaxDiffBytes: s.store.maxDiffBytes(), DiffBudget: s.store.diffBudget()}
}

// LoadDecisions reads the session's review decisions (an empty set when there are none).
func (s *Session) LoadDecisions() (*apply.Decisions, error) { return s.applier().LoadDecisions() }

// Decide records a decision about change c and saves it at once: with hunkID "" a whole-file
// verdict (Undecided clears every decision of the file), otherwise the decision of that hunk.
func (s *Session) Decide(c *changeset.Change, hunkID string, dec diff.Decision) error {
	return s.applier().Decide(c, hunkID, dec)
}

// Contents returns the base and staged content of a regular-file change (see apply.Session.Contents).
func (s *Session) Contents(c *changeset.Change, limit int64) (old, new []byte, err error) {
	return s.applier().Contents(c, limit)
}

// Diff is the hunk-level diff of a text change (see apply.Session.Diff).
func (s *Session) Diff(c *changeset.Change) (diff.FileDiff, error) { return s.applier().Diff(c) }

// TooLargeToDiff reports whether a text change has a side larger than the store's MaxDiffBytes.
func (s *Session) TooLargeToDiff(c *changeset.Change) bool { return s.applier().TooLargeToDiff(c) }

// ConflictHelp says what to do about a path the host and the agent both changed.
func (s *Session) ConflictHelp(c *changeset.Change) string { return s.applier().ConflictHelp(c) }

// HostView is what review shows of a path the host changed too (see apply.Session.HostView).
func (s *Session) HostView(c *changeset.Change) (*apply.HostView, error) {
	return s.applier().HostView(c)
}

// PlanApply works out what Apply would write with these options, without writing anything.
func (s *Session) PlanApply(opts apply.ApplyOptions) (*apply.ApplyPlan, error) {
	unlock, err := s.store.StateLock(s.Meta.Project, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	host, b, err := s.source().OpenView()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	defer b.Close()
	return s.applier().Plan(opts, b, host)
}
