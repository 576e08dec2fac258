package reviewsrc

import (
	"fmt"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/session"
)

// hostChange fills in what the review shows of a change the host changed too (SPEC §13): the
// host's side (f.Host), and, where the two changes merge, the merge's hunks on the host's file in
// place of the diff against the pre-image; merged reports that. A path that merges is no longer
// left out of the review's apply: only its conflict hunks wait for a decision.
func (r *Source) hostChange(c *session.Change, f *diffview.File) (merged bool, err error) {
	v, err := r.sess.HostView(c)
	if err != nil {
		return false, fmt.Errorf("merge %s: %w", c.Path, err)
	}
	if v == nil {
		return false, nil
	}
	f.Host = &diffview.HostChange{Summary: v.Summary, Diff: v.Diff}
	if v.Merge == nil {
		return false, nil
	}
	f.Host.Conflicts = v.Merge.Conflicts
	f.Diff = v.Merge.Diff
	f.Conflict = ""
	// The sizes and mode shown are the host's file's, which the hunks apply to.
	f.OldSize = c.Host.Size
	f.OldMode = gitMode(*c.Host)
	return true, nil
}
