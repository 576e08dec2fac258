package session

import (
	"fmt"

	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/store"
)

// Changes computes the session's change set from its upper layer, classified (ignored, protected,
// conflict). It works while a run is going.
func (s *Session) Changes() (*changeset.ChangeSet, error) {
	unlock, err := s.store.StateLock(s.Meta.Project, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.changes(nil)
}

// extraProtected is the session's own protected patterns plus more.
func (s *Session) extraProtected(more []string) []string {
	return append(append([]string(nil), s.protected...), more...)
}

// changes computes the change set; extraProtected extends the protected patterns.
func (s *Session) changes(extraProtected []string) (*changeset.ChangeSet, error) {
	if s.Meta.State == store.StateDiscarded {
		return nil, fmt.Errorf("session %s was discarded: its staged changes are gone", s.Meta.ID)
	}
	host, err := projectfs.OpenRoot(s.Meta.Project)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	if empty, err := projectfs.EmptyDir(s.UpperDir()); err == nil && empty {
		return &changeset.ChangeSet{}, nil // nothing staged: no need for the bases and the manifest
	}
	b, err := s.source().LoadBases()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return s.changesIn(b, host, extraProtected)
}

// apply.ChangesIn computes the change set against bases already loaded and the open project root.
func (s *Session) changesIn(b *changeset.Bases, host *projectfs.Root, extraProtected []string) (*changeset.ChangeSet, error) {
	if s.Meta.State == store.StateDiscarded {
		return nil, fmt.Errorf("session %s was discarded: its staged changes are gone", s.Meta.ID)
	}
	raw, err := changeset.ScanUpper(s.UpperDir(), host, changeset.ScanOptions{Contents: true})
	if err != nil {
		return nil, err
	}
	// What a damaged checkpoint holds is neither shown nor applied (see damage.go).
	if raw, err = s.layers().WithoutDamaged(raw); err != nil {
		return nil, err
	}
	return s.source().ChangesFrom(b, host, raw, s.extraProtected(extraProtected))
}

// source is what the session's change set is computed from. It takes the manifest this process
// recorded, if any: the first load of the bases uses it, any later one reads it from disk.
func (s *Session) source() *changeset.Source {
	src := &changeset.Source{ID: s.Meta.ID, Project: s.Meta.Project, Upper: s.UpperDir(), Dir: s.dir, MaxDiffBytes: s.store.maxDiffBytes(), DiffBudget: s.store.diffBudget(), Manifest: s.man}
	s.man = nil
	return src
}
