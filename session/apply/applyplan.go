package apply

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/store"
)

// The plan of an apply: which changes, hunks and merges it writes, worked out against the bases
// and the project as they are, before anything is written.

// plan works out an apply against bases already loaded and the open project root.
func (s *Session) Plan(opts ApplyOptions, b *changeset.Bases, host *projectfs.Root) (*ApplyPlan, error) {
	if s.Meta.State == store.StateDiscarded {
		return nil, fmt.Errorf("session %s was discarded; nothing to apply", s.ID)
	}
	cs, err := s.ChangesIn(b, host, opts.Protected)
	if err != nil {
		return nil, err
	}
	for _, p := range opts.Paths {
		found := false
		for i := range cs.Changes {
			if changeset.Selected(&cs.Changes[i], []string{p}) {
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("apply: %s has no staged change", quote.Path(p))
		}
	}
	decs, err := s.LoadDecisions()
	if err != nil {
		return nil, err
	}
	pl := &ApplyPlan{Closes: true, Decisions: map[string]*FileDecision{}, Prior: map[string]*FileDecision{}, contents: map[string][]byte{}}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		fd := decs.For(c)
		if f, ok := decs.Files[c.Path]; ok {
			f := f
			pl.Prior[c.Path] = &f
		}
		whole := opts.All || (len(opts.Paths) > 0 && changeset.Selected(c, opts.Paths))
		// Naming an ignored file itself (not a directory above it) is an explicit request for it.
		explicit := slices.Contains(opts.Paths, c.Path) || (c.From != "" && slices.Contains(opts.Paths, c.From))
		if !whole && (opts.All || len(opts.Paths) > 0) {
			pl.Closes = false
			continue
		}
		if !whole {
			if fd.File == diff.Rejected {
				continue
			}
			if fd.File != diff.Accepted && len(fd.Hunks) == 0 {
				pl.Closes = false
				continue
			}
		}
		skip := func(reason string) {
			pl.Skipped = append(pl.Skipped, Skipped{Path: c.Path, Reason: reason})
			if !c.Special {
				pl.Closes = false
			}
		}
		switch {
		case c.Special:
			skip("special file (FIFO, socket or device): never applied")
			continue
		case c.Unreadable != "":
			skip(c.Unreadable)
			continue
		case c.Conflict && c.Merge == "":
			skip("conflict: " + c.Reason + "; " + s.ConflictHelp(c))
			continue
		case c.Ignored && !opts.IncludeIgnored && !explicit:
			skip("ignored by .gitignore (use --include-ignored)")
			continue
		case c.Protected && !opts.AllowProtected:
			skip("protected: " + c.ProtectedWhy + " (use --allow-protected)")
			continue
		case c.OutsideLink && !opts.AllowOutsideLinks:
			skip(fmt.Sprintf("symlink to %q leaves the project (apply it explicitly)", c.New.Target))
			continue
		}
		if c.Merge != "" {
			if reason, err := s.planMerge(pl, b, host, c, fd, whole); err != nil {
				return nil, err
			} else if reason != "" {
				skip(reason)
			}
			continue
		}
		if whole || fd.File == diff.Accepted || !s.Hunkable(c) {
			if !whole && fd.File != diff.Accepted {
				pl.Closes = false
				continue
			}
			s.planWhole(pl, c)
			continue
		}
		if err := s.planHunks(pl, b, host, c, fd); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// planWhole plans writing the agent's exact version of c.
func (s *Session) planWhole(pl *ApplyPlan, c *changeset.Change) {
	if c.From != "" {
		pl.Ops = append(pl.Ops, op{Path: c.From, Kind: 'd'})
		pl.Files = append(pl.Files, PlannedFile{Path: c.From, Action: "delete", Whole: true})
	}
	switch c.New.Kind {
	case changeset.KindNone:
		pl.Ops = append(pl.Ops, op{Path: c.Path, Kind: 'd', Whole: true})
		pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "delete", Whole: true})
	case changeset.KindSymlink:
		pl.Ops = append(pl.Ops, op{Path: c.Path, Kind: 'l', Target: c.New.Target, Whole: true})
		pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "symlink", Whole: true})
	case changeset.KindFile:
		mode := c.New.Mode & 0o777
		if c.New.Mode&0o7000 != 0 {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s: setuid/setgid/sticky bits stripped (mode %04o applied as %04o)", quote.Path(c.Path), c.New.Mode, mode))
		}
		pl.Ops = append(pl.Ops, op{Path: c.Path, Kind: 'f', Mode: mode, Hash: c.New.Hash, Whole: true})
		pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "write", Whole: true})
	}
	pl.Decisions[c.Path] = nil
}

// planHunks plans writing base + the accepted hunks of c.
func (s *Session) planHunks(pl *ApplyPlan, b *changeset.Bases, host *projectfs.Root, c *changeset.Change, fd FileDecision) error {
	old, new, err := s.Source().Contents(b, host, c, s.MaxDiffBytes)
	if err != nil {
		return err
	}
	hunks := diff.Compute(c.Path, old, new, diff.Options{Context: -1, Budget: s.DiffBudget}).Hunks
	hs, ds := diff.Resolve(hunks, fd.Hunks)
	var acc, rej, und int
	exact := true
	for i := range hs {
		switch ds[i].Verdict {
		case diff.Accepted:
			acc++
			if len(ds[i].Lines) > 0 || ds[i].Edit != "" {
				exact = false
			}
		case diff.Rejected:
			rej++
			exact = false
		default:
			und++
			exact = false
		}
	}
	if und > 0 {
		pl.Closes = false
	}
	if acc == 0 {
		return nil
	}
	if exact {
		s.planWhole(pl, c)
		return nil
	}
	content, err := diff.Apply(old, hunks, fd.Hunks)
	if err != nil {
		return fmt.Errorf("apply hunks of %s: %w", quote.Path(c.Path), err)
	}
	if bytes.Equal(content, old) && c.Old.Exists() {
		return nil
	}
	mode := c.Old.Mode & 0o777
	if !c.Old.Exists() {
		mode = c.New.Mode & 0o777
	}
	sum := projectfs.ContentName(content)
	pl.contents[sum] = content
	pl.Ops = append(pl.Ops, op{Path: c.Path, Kind: 'f', Mode: mode, Hash: sum})
	pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "write", Accepted: acc, Rejected: rej, Pending: und})
	// The hunks left between the new base and the staged file: rejections carry over by content.
	rejected := map[string]bool{}
	for i := range hs {
		if ds[i].Verdict == diff.Rejected {
			rejected[hunkCore(hs[i])] = true
		}
	}
	next := &FileDecision{BaseHash: sum, StagedHash: changeset.ContentKey(c.New)}
	if c.New.Kind == changeset.KindNone {
		next.StagedHash = ""
	}
	for _, h := range diff.Compute(c.Path, content, new, diff.Options{Context: -1, Budget: s.DiffBudget}).Hunks {
		if rejected[hunkCore(h)] {
			if next.Hunks == nil {
				next.Hunks = map[string]diff.Decision{}
			}
			next.Hunks[h.ID] = diff.Decision{Verdict: diff.Rejected}
		}
	}
	pl.Decisions[c.Path] = next
	return nil
}
