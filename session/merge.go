package session

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// Working beside the agent (SPEC §13): where the host changed a path since its pre-image and the
// agent changed it too, the two changes are merged three ways (base = the pre-image) rather than
// refused. The change set says how they combine (Change.Host, Change.Merge); review and apply
// then work on the agent's changes as hunks on the host's current file (diff.Merge3), where
// a hunk whose lines both changed is a conflict that only a decision resolves. After an apply of
// merged content the pre-image stays the path's base, so that the next merge is still made
// against what both sides started from: the lines applied are then on both sides, and only what
// is left of the agent's change (rejected or undecided hunks) shows.

// MergeState says how the host's change to a path and the agent's combine.
type MergeState string

// The merge states of a path both sides changed.
const (
	// MergeClean: no line changed on both sides; the agent's changes apply as hunks on the host's file.
	MergeClean MergeState = "clean"
	// MergeConflict: some lines changed on both sides; those hunks are resolved in review (take
	// the host's, take the agent's, or edit) before apply writes them.
	MergeConflict MergeState = "conflict"
)

// mergeConflicts looks again at every change the host changed too (Reason set): it records what
// the host holds now (Host), merges the two changes where it can (Merge; Conflict is then set only
// when some lines conflict), drops a change whose outcome the project already holds (the host
// made the same change, or an apply wrote it), and says in Reason why a path cannot be merged.
func (s *Session) mergeConflicts(cs *ChangeSet, b *bases, host *projectfs.Root) error {
	out := cs.Changes[:0]
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if c.Reason == "" {
			out = append(out, *c)
			continue
		}
		keep, err := s.mergeOne(b, host, c)
		if err != nil {
			return err
		}
		if keep {
			out = append(out, *c)
		}
	}
	clear(cs.Changes[len(out):])
	cs.Changes = out
	return nil
}

// mergeOne does mergeConflicts' work for one change; keep is false when the project already has
// its outcome.
func (s *Session) mergeOne(b *bases, host *projectfs.Root, c *Change) (keep bool, err error) {
	h, err := host.Lstat(c.Path)
	if err != nil {
		return false, err
	}
	if h.Exists && h.Stat.Type != 'd' {
		c.Host = &Side{Kind: kindOf(h.Stat.Type), Mode: h.Stat.Mode, Size: h.Stat.Size, Target: h.Target}
	}
	var cur []byte
	if c.Host != nil && c.Host.Kind == KindFile {
		f, err := host.OpenRead(c.Path)
		if err != nil {
			return false, fmt.Errorf("read %s on the host: %w", quote.Path(c.Path), err)
		}
		if c.Host.Size <= s.mergeLimit() {
			cur, err = io.ReadAll(io.LimitReader(f, s.mergeLimit()+1))
			c.Host.Hash = projectfs.ContentName(cur)
		} else {
			var sum projectfs.FileSum
			sum, err = projectfs.SumReader(f)
			c.Host.Hash, c.Host.Holes = sum.Hash, projectfs.SparseHoles(sum.Holes)
		}
		f.Close()
		if err != nil {
			return false, fmt.Errorf("read %s on the host: %w", quote.Path(c.Path), err)
		}
	}
	if sameOutcome(c) {
		return false, nil
	}
	c.Conflict = true
	if !s.mergeable(c) || c.Host.Holes > 0 || int64(len(cur)) > s.mergeLimit() {
		return true, nil
	}
	base, agent, err := s.mergeSides(b, host, c)
	if err != nil {
		return false, err
	}
	if diff.IsBinary(base) || diff.IsBinary(cur) || diff.IsBinary(agent) {
		c.Reason = fmt.Sprintf("both changed it and it is binary: yours is %s (sha256 %s), the agent's %s (sha256 %s)",
			projectfs.HumanSize(c.Host.Size), shortHash(c.Host.Hash), projectfs.HumanSize(c.New.Size), shortHash(c.New.Hash))
		return true, nil
	}
	m := diff.Merge3(c.Path, base, cur, agent, diff.Options{Context: -1, Budget: diffBudget})
	if len(m.Diff.Hunks) == 0 {
		return false, nil // every change of the agent's is in the host's file already
	}
	c.Merge, c.Conflict = MergeClean, false
	if !m.Clean() {
		c.Merge, c.Conflict = MergeConflict, true
	}
	return true, nil
}

// sameOutcome reports whether the host holds exactly what the agent staged (the same change made
// on both sides, or one an apply or the developer copied over): nothing is left to apply.
func sameOutcome(c *Change) bool {
	if c.From != "" {
		return false
	}
	hs := Side{}
	if c.Host != nil {
		hs = *c.Host
	}
	if hs.Kind != c.New.Kind {
		return false
	}
	switch hs.Kind {
	case KindNone:
		return true
	case KindFile:
		return hs.Hash != "" && hs.Hash == c.New.Hash && hs.Mode&0o7777 == c.New.Mode&0o7777
	case KindSymlink:
		return hs.Target == c.New.Target
	}
	return false
}

// mergeable reports whether a change the host changed too can be merged line by line: a regular
// file on the three sides (or no base at all: both added it), a known pre-image, no rename,
// nothing too large or sparse to read.
func (s *Session) mergeable(c *Change) bool {
	if c.From != "" || c.Special || c.Unreadable != "" || c.BaseUnknown || c.Host == nil || c.Host.Kind != KindFile {
		return false
	}
	if c.New.Kind != KindFile || c.New.Holes > 0 || c.New.Size > s.mergeLimit() {
		return false
	}
	switch c.base.Kind {
	case baseAbsent:
		return true
	case baseObject:
		return c.base.Type == 'f' && c.Old.Holes == 0 && c.Old.Size <= s.mergeLimit()
	}
	return false
}

// mergeSides reads the base (empty when the path had none) and the agent's staged file of a
// mergeable change.
func (s *Session) mergeSides(b *bases, host *projectfs.Root, c *Change) (base, agent []byte, err error) {
	base, agent, err = s.contents(b, host, c, s.mergeLimit())
	if err != nil {
		return nil, nil, err
	}
	return base, agent, nil
}

// mergeInputs reads the three sides of a merged change and merges them. The host's file must
// still be what the change set saw.
func (s *Session) mergeInputs(b *bases, host *projectfs.Root, c *Change) (base, cur, agent []byte, m diff.Merged, err error) {
	if base, agent, err = s.mergeSides(b, host, c); err != nil {
		return
	}
	f, err := host.OpenRead(c.Path)
	if err != nil {
		return
	}
	cur, err = io.ReadAll(io.LimitReader(f, s.mergeLimit()+1))
	f.Close()
	if err != nil {
		return
	}
	if projectfs.ContentName(cur) != c.Host.Hash {
		err = fmt.Errorf("%s changed on the host again while it was being merged; try again", quote.Path(c.Path))
		return
	}
	m = diff.Merge3(c.Path, base, cur, agent, diff.Options{Context: -1, Budget: diffBudget})
	return
}

// decisionBase is what a decision about c records as its base: the base content, or for a merged
// change the base and the host's content both, so that a decision made on the merge against one
// host file does not hold against another.
func (c *Change) decisionBase() string {
	if c.Merge == "" || c.Host == nil {
		return contentKey(c.Old)
	}
	return mergeKey(c.Old, c.Host.Hash)
}

func mergeKey(base Side, hostHash string) string {
	return "merge:" + contentKey(base) + ":" + hostHash
}

// planMerge plans writing the merge of a change the host changed too: the host's file with the
// agent's accepted hunks. With whole (--all, PATHs) every clean hunk is taken and every conflict
// must have been decided in review; reason then says why the path is left out.
func (s *Session) planMerge(pl *ApplyPlan, b *bases, host *projectfs.Root, c *Change, fd FileDecision, whole bool) (reason string, err error) {
	base, cur, agent, m, err := s.mergeInputs(b, host, c)
	if err != nil {
		return "", fmt.Errorf("merge %s: %w", quote.Path(c.Path), err)
	}
	decided := map[string]diff.Decision{}
	for _, h := range m.Diff.Hunks {
		switch {
		case fd.File != diff.Undecided:
			decided[h.ID] = diff.Decision{Verdict: fd.File}
		case fd.Hunks[h.ID].Verdict != diff.Undecided:
			decided[h.ID] = fd.Hunks[h.ID]
		}
	}
	if whole {
		var open []diff.Hunk
		for _, h := range m.Diff.Hunks {
			_, conflict := m.Conflicts[h.ID]
			switch {
			case conflict && decided[h.ID].Verdict == diff.Undecided:
				open = append(open, h)
			case !conflict:
				decided[h.ID] = diff.Decision{Verdict: diff.Accepted}
			}
		}
		// Split decisions of the review are kept as they are (Resolve finds the pieces).
		for id, d := range fd.Hunks {
			if _, ok := decided[id]; !ok {
				decided[id] = d
			}
		}
		if len(open) > 0 {
			return "conflict: you and the agent both changed " + lineList(open) +
				"; resolve it in shadow review (a takes the agent's lines, r keeps yours, e edits)", nil
		}
	}
	hs, ds := diff.Resolve(m.Diff.Hunks, decided)
	var acc, rej, und int
	for i := range hs {
		switch ds[i].Verdict {
		case diff.Accepted:
			acc++
		case diff.Rejected:
			rej++
		default:
			und++
		}
	}
	if und > 0 {
		pl.Closes = false
	}
	if acc == 0 {
		return "", nil
	}
	content, err := diff.Apply(cur, m.Diff.Hunks, decided)
	if err != nil {
		return "", fmt.Errorf("merge %s: %w", quote.Path(c.Path), err)
	}
	if bytes.Equal(content, cur) {
		return "", nil
	}
	// The agent's mode change is taken where the host kept the base's mode.
	mode := c.Host.Mode & 0o777
	if c.Old.Exists() && c.New.Mode != c.Old.Mode && c.Host.Mode == c.Old.Mode {
		mode = c.New.Mode & 0o777
	}
	sum := projectfs.ContentName(content)
	pl.contents[sum] = content
	pl.ops = append(pl.ops, op{Path: c.Path, Kind: 'f', Mode: mode, Hash: sum, Merge: true})
	pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "write", Merged: true, Accepted: acc, Rejected: rej, Pending: und})
	pl.decisions[c.Path] = nextMergeDecision(c, base, content, agent, sum, hs, ds)
	return "", nil
}

// nextMergeDecision is the decision that holds after merged content was written: the next merge
// (the same base, the written content as the host's, the same agent's file) shows only what is
// left of the agent's change, and a hunk of it that was rejected, or what remains of a hunk
// accepted in part or edited, stays decided (kept as the host's). nil when nothing is left.
func nextMergeDecision(c *Change, base, written, agent []byte, sum string, hs []diff.Hunk, ds []diff.Decision) *FileDecision {
	rejected, kept := map[string]bool{}, map[string]bool{}
	for i, h := range hs {
		switch d := ds[i]; {
		case d.Verdict == diff.Rejected:
			rejected[hunkCore(h)] = true
		case d.Verdict == diff.Accepted && (d.Edit != "" || len(d.Lines) > 0):
			if eff, err := d.Effective(h); err == nil {
				kept[sideText(eff, diff.Insert)] = true
			}
		}
	}
	next := diff.Merge3(c.Path, base, written, agent, diff.Options{Context: -1, Budget: diffBudget})
	if len(next.Diff.Hunks) == 0 {
		return nil
	}
	fd := &FileDecision{BaseHash: mergeKey(c.Old, sum), StagedHash: contentKey(c.New)}
	for _, h := range next.Diff.Hunks {
		if rejected[hunkCore(h)] || kept[sideText(h, diff.Delete)] {
			if fd.Hunks == nil {
				fd.Hunks = map[string]diff.Decision{}
			}
			fd.Hunks[h.ID] = diff.Decision{Verdict: diff.Rejected}
		}
	}
	return fd
}

// sideText is the changed lines of h with the op (with the context between them), joined.
func sideText(h diff.Hunk, op diff.Op) string {
	var b strings.Builder
	for _, l := range h.Lines {
		if l.Op == op {
			b.WriteString(l.Text)
		}
	}
	return b.String()
}

// lineList names the host's lines the hunks change: "line 5", "lines 5-7 and 12".
func lineList(hs []diff.Hunk) string {
	var parts []string
	n := 0
	for _, h := range hs {
		at, first, last := h.OldStart, 0, -1
		for _, l := range h.Lines {
			switch l.Op {
			case diff.Context:
				if last < 0 {
					at++
				}
				continue
			case diff.Delete:
				if last < 0 {
					first = at
				}
				last = at
				at++
				n++
			case diff.Insert:
				if last < 0 {
					first, last = at, at
					n++
				}
			}
		}
		if first == last {
			parts = append(parts, fmt.Sprint(first))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", first, last))
		}
	}
	word := "line "
	if n > 1 || len(parts) > 1 || strings.Contains(strings.Join(parts, ""), "-") {
		word = "lines "
	}
	if len(parts) > 1 {
		return word + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return word + parts[0]
}

// ConflictHelp says, for a change in conflict that cannot be merged line by line, how to settle
// it: keep the host's version, or put the agent's in its place (the change then leaves the set).
func (s *Session) ConflictHelp(c *Change) string {
	if !c.Conflict || c.Merge != "" {
		return ""
	}
	take := "rm " + shellQuote(filepath.Join(s.Meta.Project, c.Path))
	if c.New.Exists() {
		take = "cp -P " + shellQuote(filepath.Join(s.UpperDir(), c.Path)) + " " + shellQuote(filepath.Join(s.Meta.Project, c.Path))
	}
	return "keep yours (reject it in review), or take the agent's: " + take
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shortHash is the first 12 hex digits of a content hash.
func shortHash(h string) string {
	h = strings.TrimPrefix(h, "zeros-")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// HostView is what review shows of a path the host changed too: a line saying what the host did
// and what to do, the host's change against the pre-image (read-only, nil where it cannot be
// shown), and, where the two changes merge, the merge as hunks on the host's file.
type HostView struct {
	Summary string
	Diff    []diff.Hunk
	Merge   *diff.Merged
}

// HostView works out what review shows of a change the host changed too (c.Conflict or c.Merge
// set); nil for any other change.
func (s *Session) HostView(c *Change) (*HostView, error) {
	if !c.Conflict && c.Merge == "" {
		return nil, nil
	}
	host, b, err := s.openView()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	defer b.close()
	v := &HostView{}
	if c.Merge != "" {
		base, cur, _, m, err := s.mergeInputs(b, host, c)
		if err != nil {
			return nil, err
		}
		v.Merge = &m
		v.Diff = diff.Compute(c.Path, base, cur, diff.Options{Budget: diffBudget}).Hunks
		if m.Clean() {
			v.Summary = "you changed this file too since the agent's pre-image (your change is below, already in the project): the agent's hunks are shown on your current file and merge without overlap"
		} else {
			verb := "change"
			if len(m.Conflicts) == 1 {
				verb = "changes"
			}
			v.Summary = fmt.Sprintf("you changed this file too: %s marked CONFLICT %s lines you both changed — a takes the agent's lines, r keeps yours, e edits; the other hunks merge without overlap", english.Count(len(m.Conflicts), "hunk"), verb)
		}
		return v, nil
	}
	v.Summary = "CONFLICT: " + c.Reason + " — apply refuses this path; " + s.ConflictHelp(c)
	if c.Host != nil && c.Host.Kind == KindFile && c.Old.Kind == KindFile && !c.BaseUnknown && !c.Binary &&
		c.Host.Size <= s.mergeLimit() && c.Old.Size <= s.mergeLimit() && c.Host.Holes == 0 && c.Old.Holes == 0 && c.From == "" {
		base, _, err := s.contents(b, host, c, s.mergeLimit())
		if err != nil {
			return nil, err
		}
		f, err := host.OpenRead(c.Path)
		if err != nil {
			return nil, err
		}
		cur, err := io.ReadAll(io.LimitReader(f, s.mergeLimit()+1))
		f.Close()
		if err != nil {
			return nil, err
		}
		if !diff.IsBinary(base) && !diff.IsBinary(cur) {
			v.Diff = diff.Compute(c.Path, base, cur, diff.Options{Budget: diffBudget}).Hunks
		}
	}
	return v, nil
}

// mergeLimit bounds each side of a file merged line by line (the store's diff limit): a larger
// one is a conflict that is settled as a whole file.
func (s *Session) mergeLimit() int64 { return s.store.maxDiffBytes() }
