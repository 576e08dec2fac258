package apply

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
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

// planMerge plans writing the merge of a change the host changed too: the host's file with the
// agent's accepted hunks. With whole (--all, PATHs) every clean hunk is taken and every conflict
// must have been decided in review; reason then says why the path is left out.
func (s *Session) planMerge(pl *ApplyPlan, b *changeset.Bases, host *projectfs.Root, c *changeset.Change, fd FileDecision, whole bool) (reason string, err error) {
	base, cur, agent, m, err := s.Source().MergeInputs(b, host, c)
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
	pl.Ops = append(pl.Ops, op{Path: c.Path, Kind: 'f', Mode: mode, Hash: sum, Merge: true})
	pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "write", Merged: true, Accepted: acc, Rejected: rej, Pending: und})
	pl.Decisions[c.Path] = nextMergeDecision(c, base, content, agent, sum, hs, ds, s.DiffBudget)
	return "", nil
}

// nextMergeDecision is the decision that holds after merged content was written: the next merge
// (the same base, the written content as the host's, the same agent's file) shows only what is
// left of the agent's change, and a hunk of it that was rejected, or what remains of a hunk
// accepted in part or edited, stays decided (kept as the host's). nil when nothing is left.
func nextMergeDecision(c *changeset.Change, base, written, agent []byte, sum string, hs []diff.Hunk, ds []diff.Decision, budget time.Duration) *FileDecision {
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
	next := diff.Merge3(c.Path, base, written, agent, diff.Options{Context: -1, Budget: budget})
	if len(next.Diff.Hunks) == 0 {
		return nil
	}
	fd := &FileDecision{BaseHash: changeset.MergeKey(c.Old, sum), StagedHash: changeset.ContentKey(c.New)}
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
func (s *Session) ConflictHelp(c *changeset.Change) string {
	if !c.Conflict || c.Merge != "" {
		return ""
	}
	take := "rm " + quote.Shell(filepath.Join(s.Project, c.Path))
	if c.New.Exists() {
		take = "cp -P " + quote.Shell(filepath.Join(s.Upper, c.Path)) + " " + quote.Shell(filepath.Join(s.Project, c.Path))
	}
	return "keep yours (reject it in review), or take the agent's: " + take
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
func (s *Session) HostView(c *changeset.Change) (*HostView, error) {
	if !c.Conflict && c.Merge == "" {
		return nil, nil
	}
	host, b, err := s.Source().OpenView()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	defer b.Close()
	v := &HostView{}
	if c.Merge != "" {
		base, cur, _, m, err := s.Source().MergeInputs(b, host, c)
		if err != nil {
			return nil, err
		}
		v.Merge = &m
		v.Diff = diff.Compute(c.Path, base, cur, diff.Options{Budget: s.DiffBudget}).Hunks
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
	if c.Host != nil && c.Host.Kind == changeset.KindFile && c.Old.Kind == changeset.KindFile && !c.BaseUnknown && !c.Binary &&
		c.Host.Size <= s.Source().MergeLimit() && c.Old.Size <= s.Source().MergeLimit() && c.Host.Holes == 0 && c.Old.Holes == 0 && c.From == "" {
		base, _, err := s.Source().Contents(b, host, c, s.Source().MergeLimit())
		if err != nil {
			return nil, err
		}
		f, err := host.OpenRead(c.Path)
		if err != nil {
			return nil, err
		}
		cur, err := io.ReadAll(io.LimitReader(f, s.Source().MergeLimit()+1))
		f.Close()
		if err != nil {
			return nil, err
		}
		if !diff.IsBinary(base) && !diff.IsBinary(cur) {
			v.Diff = diff.Compute(c.Path, base, cur, diff.Options{Budget: s.DiffBudget}).Hunks
		}
	}
	return v, nil
}
