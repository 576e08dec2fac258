package reviewsrc

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session"
)

// The review's timeline (SPEC §12): the session's checkpoints are the steps the review can narrow
// its change set to.

// Steps lists the session's checkpoints, oldest first, as the review's steps.
func (r *Source) Steps() ([]diffview.Step, error) {
	cps, err := r.session().Checkpoints()
	if err != nil {
		return nil, err
	}
	out := make([]diffview.Step, len(cps))
	for i, c := range cps {
		out[i] = diffview.Step{ID: c.ID, Trigger: c.Trigger, Time: c.Time, Prompt: c.Prompt}
	}
	return out, nil
}

// StepChanges returns what checkpoint id changed (from the one before it, or the base) and what
// the checkpoints after it changed.
func (r *Source) StepChanges(id string) (diffview.StepChanges, error) {
	s := r.session()
	cps, err := s.Checkpoints()
	if err != nil {
		return diffview.StepChanges{}, err
	}
	k, err := session.FindCheckpoint(cps, id)
	if err != nil {
		return diffview.StepChanges{}, fmt.Errorf("session %s: %w", s.ID(), err)
	}
	var sc diffview.StepChanges
	if sc.Step, err = s.HistoryPatches(cps, k-1, k); err != nil {
		return sc, err
	}
	sc.Files, sc.Added, sc.Removed = session.CountStep(sc.Step)
	reqs, err := s.Requests()
	if err != nil {
		return sc, err
	}
	for _, q := range reqs {
		if q.Checkpoint != id {
			continue
		}
		sc.Requests++
		sc.Sent = append(sc.Sent, diffview.StepRequest{Method: quote.Path(q.Method), Destination: quote.Path(q.Destination()),
			Status: q.Status, Allowed: q.Allowed})
		if q.Allowed {
			continue
		}
		sc.Denied++
		if dst := quote.Path(net.JoinHostPort(q.Host, strconv.Itoa(q.Port))); !slices.Contains(sc.DeniedTo, dst) {
			sc.DeniedTo = append(sc.DeniedTo, dst)
		}
	}
	if k < len(cps)-1 {
		if sc.Later, err = s.HistoryPatches(cps, k, len(cps)-1); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

// session is the session the source reads now (the app rebinds it when it takes the project's
// writer lock back).
func (r *Source) session() *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess
}

// Steps are the wrapped source's steps, when it has a history.
func (r ReadOnly) Steps() ([]diffview.Step, error) {
	if h, ok := r.Source.(diffview.History); ok {
		return h.Steps()
	}
	return nil, nil
}

// StepChanges are the wrapped source's.
func (r ReadOnly) StepChanges(id string) (diffview.StepChanges, error) {
	if h, ok := r.Source.(diffview.History); ok {
		return h.StepChanges(id)
	}
	return diffview.StepChanges{}, fmt.Errorf("no step %q", id)
}
