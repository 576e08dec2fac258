package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/shadow-sandbox/shadow/session/apply"
	"github.com/shadow-sandbox/shadow/session/gitout"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/store"
)

// recover finishes or undoes whatever a crash interrupted in the project's journals: an apply
// whose entry is written but not done is rolled back; a done one is committed; a started rollback
// is finished. It returns a sentence saying what it did ("" when nothing).
func (l *ProjectLock) recover() (string, error) {
	// Only a session with an unsettled journal entry has anything to recover: the others (nearly
	// every session of the project) are not even loaded.
	sessions, _, err := l.store.projectSessionsWhere(l.project, l.store.unsettled)
	if err != nil {
		return "", err
	}
	var msgs []string
	for _, s := range sessions {
		// No run holds a session with an unsettled entry (apply and rollback refuse while one
		// runs, and a run starts only after this recovery): its lock is free.
		if s, err = l.writer(s); err != nil {
			return strings.Join(msgs, "; "), err
		}
		ents, err := os.ReadDir(s.journalDir())
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return "", fmt.Errorf("recover session %s: %w", s.Meta.ID, err)
		}
		for _, je := range ents {
			if !je.IsDir() {
				continue
			}
			msg, err := s.applier().RecoverEntry(filepath.Join(s.journalDir(), je.Name()))
			if err != nil {
				return strings.Join(msgs, "; "), err
			}
			if msg != "" {
				msgs = append(msgs, msg)
			}
		}
	}
	return strings.Join(msgs, "; "), nil
}

// unsettled reports whether the session id may have a journal entry to recover: one that is not
// settled, or a journal that could not be read (recover then says why).
func (st *Store) unsettled(id string) bool {
	jdir := apply.JournalDirOf(filepath.Join(st.SessionsDir(), id))
	ents, err := os.ReadDir(jdir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	return slices.ContainsFunc(ents, func(e fs.DirEntry) bool {
		return e.IsDir() && !apply.Settled(filepath.Join(jdir, e.Name()))
	})
}

// RollbackResult says which applies a rollback undid.
type RollbackResult struct {
	Applies  []string `json:"applies"`
	Restored int      `json:"restored"`
	// PutBack are the paths given their prior content again; Removed are those the applies
	// created, gone again. Each path once, sorted.
	PutBack []string `json:"put_back,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Left is how many earlier applies of the project are still not rolled back.
	Left int `json:"left"`
}

// Rollback undoes the project's last apply, or with toID every apply back to and including that
// one, newest first, restoring content, mode and existence byte for byte. It refuses, naming them,
// when the host changed paths after the apply.
func (l *ProjectLock) Rollback(toID string) (*RollbackResult, error) {
	var res *RollbackResult
	err := l.withProject(func() error {
		var err error
		res, err = l.rollbackLocked(toID)
		return err
	})
	return res, err
}

// rollbackLocked is Rollback under the project's writer lock.
func (l *ProjectLock) rollbackLocked(toID string) (*RollbackResult, error) {
	if msg, err := l.recover(); err != nil {
		return nil, err
	} else if msg != "" {
		l.Recovered = strings.TrimPrefix(l.Recovered+"; "+msg, "; ")
	}
	items, left, err := l.appliesToRollBack(toID)
	if err != nil {
		return nil, err
	}
	unlock, err := l.store.StateLock(l.project, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	root, err := projectfs.OpenRoot(l.project)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	entries, err := unchangedSinceApply(root, items)
	if err != nil {
		return nil, err
	}
	// Applies made with --commit: their commits are undone first, or the rollback refused.
	jdirs := make([]string, 0, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		jdirs = append(jdirs, filepath.Join(items[i].s.journalDir(), entries[i].ID))
	}
	if err := gitout.UncommitApplies(jdirs); err != nil {
		return nil, err
	}
	res := &RollbackResult{Left: left}
	for i := len(entries) - 1; i >= 0; i-- {
		it, e := items[i], entries[i]
		jdir := filepath.Join(it.s.journalDir(), e.ID)
		if err := apply.WriteMarker(jdir, "rollback"); err != nil {
			return res, err
		}
		u, err := it.s.applier().RollbackEntry(root, e, false)
		if err != nil {
			return res, err
		}
		if err := it.s.applier().CommitRollback(root, e); err != nil {
			return res, err
		}
		res.Applies = append(res.Applies, e.ID)
		res.Restored += u.Restored
	}
	res.PutBack, res.Removed = rolledBackPaths(entries)
	return res, nil
}

// rollbackItem is one apply a rollback may undo, with its session.
type rollbackItem struct {
	s   *Session
	rec store.ApplyRecord
}

// appliesToRollBack are the applies of the project a rollback to toID undoes ("": the last one),
// oldest first, and how many older applies stay. It refuses while a run is active on a session
// whose apply it would undo.
func (l *ProjectLock) appliesToRollBack(toID string) ([]rollbackItem, int, error) {
	sessions, _, err := l.store.projectSessions(l.project)
	if err != nil {
		return nil, 0, err
	}
	var items []rollbackItem
	for _, s := range sessions {
		for _, r := range s.Meta.Applies {
			if !r.RolledBack {
				items = append(items, rollbackItem{s, r})
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].rec.Time.Before(items[j].rec.Time) })
	if len(items) == 0 {
		return nil, 0, fmt.Errorf("roll back: project %s has no apply to roll back", l.project)
	}
	from := len(items) - 1
	if toID != "" {
		from = -1
		for i, it := range items {
			if it.rec.ID == toID {
				from = i
			}
		}
		if from < 0 {
			return nil, 0, fmt.Errorf("roll back: no apply %q of project %s that is not rolled back already", toID, l.project)
		}
	}
	for _, it := range items[from:] {
		if it.s.RunActive() {
			return nil, 0, fmt.Errorf("roll back: a run is active on session %s; wait for it to end", it.s.Meta.ID)
		}
		if _, err := l.writer(it.s); err != nil {
			return nil, 0, fmt.Errorf("roll back: %w", err)
		}
	}
	return items[from:], from, nil
}

// unchangedSinceApply reads the journal entries of items and checks every path against the
// newest apply that wrote it, before anything is touched: a path the project changed after the
// apply refuses the whole rollback, naming every such path.
func unchangedSinceApply(root *projectfs.Root, items []rollbackItem) ([]*apply.JournalEntry, error) {
	entries := make([]*apply.JournalEntry, len(items))
	latest := map[string]bool{}
	var changed []string
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		e, err := apply.ReadEntry(filepath.Join(it.s.journalDir(), it.rec.ID))
		if err != nil {
			return nil, fmt.Errorf("roll back apply %s: read its journal: %w", it.rec.ID, err)
		}
		entries[i] = e
		for _, jp := range e.Paths {
			if latest[jp.Path] {
				continue
			}
			latest[jp.Path] = true
			ok, err := apply.MatchesApplied(root, jp)
			if err != nil {
				return nil, err
			}
			if !ok {
				changed = append(changed, jp.Path)
			}
		}
	}
	if len(changed) > 0 {
		return nil, fmt.Errorf("roll back: the project changed these paths after the apply; nothing was rolled back: %s", strings.Join(apply.QuoteAll(changed), ", "))
	}
	return entries, nil
}

// rolledBackPaths are the paths the rolled-back entries put back and those they removed: a
// path's state now is its prior state in the oldest apply rolled back.
func rolledBackPaths(entries []*apply.JournalEntry) (putBack, removed []string) {
	prior := map[string]bool{}
	for i := len(entries) - 1; i >= 0; i-- {
		for _, jp := range entries[i].Paths {
			prior[jp.Path] = jp.Prior.Exists
		}
	}
	for p, existed := range prior {
		if existed {
			putBack = append(putBack, p)
		} else {
			removed = append(removed, p)
		}
	}
	sort.Strings(putBack)
	sort.Strings(removed)
	return putBack, removed
}
