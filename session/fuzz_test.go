package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/apply"
)

// FuzzApplyDecisions applies random decision sets (accept, reject, undecided, selected lines) to
// the hunks between random base and staged files, and checks the project file is exactly base +
// accepted hunks, and that a rollback gives the base back.
func FuzzApplyDecisions(f *testing.F) {
	f.Add("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n", "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\nk\nl\n", []byte{1, 2})
	f.Add("one\ntwo\n", "one\ntwo\nthree", []byte{3})
	f.Add("x\ny\nz", "", []byte{1})
	f.Add("", "new\nfile\n", []byte{0, 1})
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nX\n4\n5\n6\n7\n8\n9\nY\n11\n12\n", []byte{3, 3, 1})
	f.Fuzz(func(t *testing.T, base, staged string, choices []byte) {
		if len(base) > 4096 || len(staged) > 4096 || base == staged {
			return
		}
		fx := newFixture(t, map[string]file{"f.txt": {Data: base}})
		fx.stage(t, map[string]file{"f.txt": {Data: staged}})
		fx.run(t)
		cs := fx.changes(t)
		c, ok := cs.Find("f.txt")
		if !ok {
			t.Fatalf("no change for differing contents: %v", statuses(cs))
		}
		if !fx.s.applier().Hunkable(c) {
			return // binary content is decided as a whole file
		}
		d, err := fx.s.Diff(c)
		hunks := d.Hunks
		if err != nil {
			t.Fatal(err)
		}
		decs := map[string]diff.Decision{}
		for i, h := range hunks {
			if len(choices) == 0 {
				break
			}
			var d diff.Decision
			switch choices[i%len(choices)] % 4 {
			case 1:
				d.Verdict = diff.Accepted
			case 2:
				d.Verdict = diff.Rejected
			case 3:
				d.Verdict = diff.Accepted
				for j, l := range h.Lines {
					if l.Op != diff.Context && j%2 == 0 {
						d.Lines = append(d.Lines, j)
					}
				}
				if len(d.Lines) == 0 {
					d.Lines = nil
				}
			default:
				continue
			}
			decs[h.ID] = d
			if err := fx.s.Decide(c, h.ID, d); err != nil {
				t.Fatal(err)
			}
		}
		want, err := diff.Apply([]byte(base), hunks, decs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := fx.s.Apply(apply.ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(fx.project, "f.txt"))
		if err != nil {
			got = nil
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("applied %q, want %q (decisions %+v)", got, want, decs)
		}
		// The ends need no hunk arithmetic: nothing accepted leaves the base, every hunk
		// accepted whole gives the staged file.
		accepted, allWhole := 0, true
		for _, h := range hunks {
			d := decs[h.ID]
			if d.Verdict == diff.Accepted {
				accepted++
			}
			allWhole = allWhole && d.Verdict == diff.Accepted && d.Lines == nil
		}
		if accepted == 0 && string(got) != base {
			t.Fatalf("nothing accepted, yet the file is %q, not the base %q", got, base)
		}
		if allWhole && string(got) != staged {
			t.Fatalf("every hunk accepted, yet the file is %q, not the staged %q", got, staged)
		}
		if res.ID == "" {
			return // nothing was written, nothing to roll back
		}
		if _, err := fx.lock.Rollback(""); err != nil {
			t.Fatalf("rollback of apply %s: %v", res.ID, err)
		}
		if got, _ := os.ReadFile(filepath.Join(fx.project, "f.txt")); string(got) != base {
			t.Fatalf("rollback gave %q, want %q", got, base)
		}
	})
}
