package diff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/english"
)

// Verdict is the developer's answer for a hunk.
type Verdict string

// The verdicts a hunk can carry; the zero value is undecided.
const (
	Undecided Verdict = ""
	Accepted  Verdict = "accept"
	Rejected  Verdict = "reject"
)

// Decision is what was decided about one hunk, keyed by the hunk's ID. Lines
// and Edit refine an accepted hunk: Lines selects some of its +/- lines (by
// index into Hunk.Lines; empty means all), Edit replaces it with an edited
// hunk text (see ParseEdit). At most one of them is set.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Lines   []int   `json:"lines,omitempty"`
	Edit    string  `json:"edit,omitempty"`
}

// Effective is the hunk that an accepted decision writes: the whole hunk,
// its selected lines, or the edited hunk.
func (d Decision) Effective(h Hunk) (Hunk, error) {
	switch {
	case d.Edit != "":
		return ParseEdit(h, d.Edit)
	case len(d.Lines) > 0:
		return SelectLines(h, d.Lines)
	}
	return h, nil
}

// Resolve pairs each hunk with its decision. A hunk with no decision of its
// own whose split pieces (see Split) have decisions is replaced by those
// pieces, so a decision made on a split hunk survives re-computation.
func Resolve(hunks []Hunk, decisions map[string]Decision) ([]Hunk, []Decision) {
	hs := make([]Hunk, 0, len(hunks))
	ds := make([]Decision, 0, len(hunks))
	// Only decisions on ids that are not whole hunks can belong to pieces.
	orphans := len(decisions)
	for _, h := range hunks {
		if _, ok := decisions[h.ID]; ok {
			orphans--
		}
	}
	for _, h := range hunks {
		if orphans == 0 {
			hs, ds = append(hs, h), append(ds, decisions[h.ID])
			continue
		}
		if d, ok := decisions[h.ID]; ok {
			hs, ds = append(hs, h), append(ds, d)
			continue
		}
		pieces := Split(h)
		split := false
		if len(pieces) > 1 {
			for _, p := range pieces {
				if _, ok := decisions[p.ID]; ok {
					split = true
					break
				}
			}
		}
		if !split {
			hs, ds = append(hs, h), append(ds, Decision{})
			continue
		}
		for _, p := range pieces {
			hs, ds = append(hs, p), append(ds, decisions[p.ID])
		}
	}
	return hs, ds
}

// edit replaces base lines [from, to) with text.
type edit struct {
	from, to int
	text     []string
}

// Apply returns base with the accepted hunks (or their selected lines, or
// their edited text) applied; rejected and undecided hunks leave base as it
// is. With every hunk of Compute(base, new) accepted the result is new, byte
// for byte. A hunk that does not match base is an error naming it.
func Apply(base []byte, hunks []Hunk, decisions map[string]Decision) ([]byte, error) {
	lines := SplitLines(base)
	hs, ds := Resolve(hunks, decisions)
	var edits []edit
	for i, h := range hs {
		if ds[i].Verdict != Accepted {
			continue
		}
		eff, err := ds[i].Effective(h)
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", h.Path, err)
		}
		e, ok, err := coreEdit(lines, eff)
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", h.Path, err)
		}
		if ok {
			edits = append(edits, e)
		}
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].from < edits[j].from })
	var b strings.Builder
	b.Grow(len(base))
	pos := 0
	for _, e := range edits {
		if e.from < pos {
			return nil, fmt.Errorf("apply %s: hunks overlap at line %d", pathOf(hunks), e.from+1)
		}
		for _, s := range lines[pos:e.from] {
			b.WriteString(s)
		}
		for _, s := range e.text {
			b.WriteString(s)
		}
		pos = e.to
	}
	for _, s := range lines[pos:] {
		b.WriteString(s)
	}
	return []byte(b.String()), nil
}

// pathOf names the file the hunks belong to, for messages.
func pathOf(hunks []Hunk) string {
	if len(hunks) == 0 {
		return ""
	}
	return hunks[0].Path
}

// coreEdit checks that h's old side matches base at h.OldStart and turns the
// hunk into an edit of the lines from its first to its last change; context
// outside that span is checked but not rewritten, so split pieces that share
// context do not overlap. ok is false when the hunk changes nothing.
func coreEdit(base []string, h Hunk) (e edit, ok bool, err error) {
	at := h.OldStart - 1
	if h.OldCount == 0 && h.OldStart == 0 {
		at = 0
	}
	if at < 0 || at+h.OldCount > len(base) {
		return edit{}, false, fmt.Errorf("hunk %s %s: old lines %d..%d past the end of the base (%s)", h.ID, h.Header(), at+1, at+h.OldCount, english.Count(len(base), "line"))
	}
	first, last := -1, -1
	for i, l := range h.Lines {
		if l.Op != Context {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	o := at
	for i, l := range h.Lines {
		if l.Op == Insert {
			continue
		}
		if base[o] != l.Text {
			return edit{}, false, fmt.Errorf("hunk %s %s: base line %d differs from the hunk's line %d", h.ID, h.Header(), o+1, i+1)
		}
		o++
	}
	if first < 0 {
		return edit{}, false, nil
	}
	e.from = at
	for _, l := range h.Lines[:first] {
		if l.Op != Insert {
			e.from++
		}
	}
	e.to = e.from
	for _, l := range h.Lines[first : last+1] {
		if l.Op != Insert {
			e.to++
		}
		if l.Op != Delete {
			e.text = append(e.text, l.Text)
		}
	}
	return e, true, nil
}
