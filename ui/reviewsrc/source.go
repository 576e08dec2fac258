// Package reviewsrc is the review browser's source over a session: it adapts the session's
// staged changes, decisions, apply journal and checkpoints to diffview.Source, for `shadow review`
// and the app's review phase alike. It links no app.
package reviewsrc

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session"
)

// Source is the review browser's view of a session: it loads the
// staged changes with their hunks, saved decisions and classification,
// saves each decision into the session as it is made, and applies and rolls
// back through the session's journal. `shadow review` and the app's review
// phase both use it.
type Source struct {
	lock    *session.ProjectLock
	sess    *session.Session
	opts    session.ApplyOptions
	finding func(path string) []string

	mu      sync.Mutex
	changes map[string]*session.Change
	hunks   map[string][]diff.Hunk // display hunks by path
	hunked  map[string]bool        // decided hunk by hunk in the session
}

// Option configures a Source.
type Option func(*Source)

// WithApplyOptions sets the options every apply from the review screen uses
// (the config's protected paths; never All or Paths, which the plan decides).
func WithApplyOptions(o session.ApplyOptions) Option {
	return func(r *Source) {
		o.All, o.Paths = false, nil
		r.opts = o
	}
}

// WithFindings names, for a staged path, the audit rules it fails; they are
// shown as badges in the file tree.
func WithFindings(f func(path string) []string) Option {
	return func(r *Source) { r.finding = f }
}

// New returns the review source of a session. lock is the
// project's writer lock the session was obtained through; without it (nil)
// the source only loads: it is read-only (see ReadOnly) until rebound.
func New(lock *session.ProjectLock, s *session.Session, opts ...Option) *Source {
	r := &Source{lock: lock, sess: s}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Rebind points the source at a session obtained through a new writer
// lock (the app took the lock back from the agent host).
func (r *Source) Rebind(lock *session.ProjectLock, s *session.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lock, r.sess = lock, s
}

// NoLock is why a source without the project's writer lock takes no change.
const NoLock = "another shadow holds the project: decide there, or here once it ends"

// ReadOnly says why the source takes no decision, apply or rollback: it
// holds no writer lock on the project (a second `shadow tui --attach`
// finds the agent, and the project, taken). It is "" otherwise.
func (r *Source) ReadOnly() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lock == nil {
		return NoLock
	}
	return ""
}

// Session is the session the source reads and writes.
func (r *Source) Session() *session.Session { return r.sess }

// Load returns every staged change as the review browser shows it.
func (r *Source) Load() ([]diffview.File, error) {
	cs, err := r.sess.Changes()
	if err != nil {
		return nil, fmt.Errorf("read the staged changes of session %s: %w", r.sess.ID(), err)
	}
	decs, err := r.sess.LoadDecisions()
	if err != nil {
		return nil, fmt.Errorf("read the decisions of session %s: %w", r.sess.ID(), err)
	}
	changes := map[string]*session.Change{}
	hunks := map[string][]diff.Hunk{}
	hunked := map[string]bool{}
	files := make([]diffview.File, 0, len(cs.Changes))
	for i := range cs.Changes {
		c := &cs.Changes[i]
		f, isHunked, err := r.file(c, decs)
		if err != nil {
			return nil, err
		}
		changes[c.Path] = c
		hunks[c.Path] = f.Diff.Hunks
		hunked[c.Path] = isHunked
		files = append(files, f)
	}
	r.mu.Lock()
	r.changes, r.hunks, r.hunked = changes, hunks, hunked
	r.mu.Unlock()
	return files, nil
}

// file converts one change, with its decision, into the browser's form. It
// reports whether the session decides the change hunk by hunk.
func (r *Source) file(c *session.Change, decs *session.Decisions) (diffview.File, bool, error) {
	f := diffview.File{
		Path:         c.Path,
		OldPath:      c.From,
		Status:       status(c),
		OldMode:      gitMode(c.Old),
		NewMode:      gitMode(c.New),
		Binary:       c.Binary,
		OldSize:      c.Old.Size,
		NewSize:      c.New.Size,
		Ignored:      c.Ignored,
		Protected:    c.Protected,
		ProtectedWhy: c.ProtectedWhy,
		Note:         c.Note(),
	}
	if r.sess.TooLargeToDiff(c) {
		f.TooLarge, f.ShowCommand = true, r.sess.ShowCommand(c)
	}
	if c.Special {
		f.Special = "FIFO, socket or device"
	}
	switch {
	case c.Conflict && c.Reason != "":
		f.Conflict = c.Reason
	case c.Conflict:
		f.Conflict = "changed on the host since the session started"
	case c.OutsideLink:
		f.Conflict = fmt.Sprintf("symlink to %q leaves the project", c.New.Target)
	}
	if r.finding != nil {
		f.Findings = r.finding(c.Path)
	}
	d, err := r.sess.Diff(c)
	if err != nil {
		return f, false, fmt.Errorf("diff %s: %w", c.Path, err)
	}
	isHunked := d.Hunks != nil
	if !isHunked && (c.Old.Kind == session.KindSymlink || c.New.Kind == session.KindSymlink) {
		// A symlink is decided as a whole, but its target is shown as a diff.
		d = diff.Compute(c.Path, linkText(c.Old), linkText(c.New), diff.Options{})
	}
	f.Diff = d
	if merged, err := r.hostChange(c, &f); err != nil {
		return f, false, err
	} else if merged {
		isHunked = true
	}
	fd := decs.For(c)
	f.Decisions = map[string]diff.Decision{}
	if fd.File != diff.Undecided {
		for _, it := range diffview.Items(f) {
			f.Decisions[it.ID] = diff.Decision{Verdict: fd.File}
		}
	} else {
		for id, d := range fd.Hunks {
			f.Decisions[id] = d
		}
	}
	return f, isHunked, nil
}

// Decide saves one decision into the session. A decision on a change the
// session takes as a whole (binary, symlink, mode, rename) is the file's
// verdict; a hunk decision on a file that carried a whole-file verdict turns
// that verdict into per-hunk decisions first, so the others keep it.
func (r *Source) Decide(path, hunkID string, d diff.Decision) error {
	if why := r.ReadOnly(); why != "" {
		return errors.New(why)
	}
	c, hs, hunked, err := r.lookup(path)
	if err != nil {
		return err
	}
	if !hunked || hunkID == diffview.WholeFileID(path) {
		if err := r.sess.Decide(c, "", diff.Decision{Verdict: d.Verdict}); err != nil {
			return fmt.Errorf("save the decision on %s: %w", path, err)
		}
		return nil
	}
	decs, err := r.sess.LoadDecisions()
	if err != nil {
		return fmt.Errorf("read the decisions of session %s: %w", r.sess.ID(), err)
	}
	if fd := decs.For(c); fd.File != diff.Undecided {
		if err := r.sess.Decide(c, "", diff.Decision{}); err != nil {
			return fmt.Errorf("save the decision on %s: %w", path, err)
		}
		for _, h := range hs {
			if h.ID == hunkID {
				continue
			}
			if err := r.sess.Decide(c, h.ID, diff.Decision{Verdict: fd.File}); err != nil {
				return fmt.Errorf("save the decision on %s: %w", path, err)
			}
		}
	}
	if err := r.sess.Decide(c, hunkID, d); err != nil {
		return fmt.Errorf("save the decision on hunk %s of %s: %w", hunkID, path, err)
	}
	return nil
}

// lookup finds the change at path as last loaded, loading once if it is
// not known yet.
func (r *Source) lookup(path string) (*session.Change, []diff.Hunk, bool, error) {
	r.mu.Lock()
	c, ok := r.changes[path]
	hs, hunked := r.hunks[path], r.hunked[path]
	r.mu.Unlock()
	if ok {
		return c, hs, hunked, nil
	}
	if _, err := r.Load(); err != nil {
		return nil, nil, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok = r.changes[path]
	if !ok {
		return nil, nil, false, fmt.Errorf("decide %s: the session stages no change there", path)
	}
	return c, r.hunks[path], r.hunked[path], nil
}

// Apply writes the accepted decisions into the project. The session plans
// the apply from the saved decisions; it must write only files the review's
// plan lists, or nothing is written.
func (r *Source) Apply(plan diffview.Plan) (diffview.Outcome, error) {
	if why := r.ReadOnly(); why != "" {
		return diffview.Outcome{}, errors.New(why)
	}
	want := map[string]bool{}
	for _, f := range plan.Write {
		want[f.Path] = true
	}
	if len(want) == 0 {
		return diffview.Outcome{}, errors.New("apply: nothing accepted to write")
	}
	sp, err := r.sess.PlanApply(r.opts)
	if err != nil {
		return diffview.Outcome{}, fmt.Errorf("plan the apply of session %s: %w", r.sess.ID(), err)
	}
	renamed := r.renameSources()
	var extra []string
	for _, f := range sp.Files {
		if !want[f.Path] && !want[renamed[f.Path]] {
			extra = append(extra, f.Path)
		}
	}
	if len(extra) > 0 {
		return diffview.Outcome{}, fmt.Errorf("apply: the session would also write %s, which the review did not accept; nothing written", strings.Join(extra, ", "))
	}
	res, err := r.sess.Apply(r.opts)
	if err != nil {
		return diffview.Outcome{}, fmt.Errorf("apply session %s: %w", r.sess.ID(), err)
	}
	out := diffview.Outcome{ApplyID: res.ID}
	written := map[string]bool{}
	for _, f := range res.Files {
		if f.Action == "delete" {
			out.Deleted = append(out.Deleted, f.Path)
		} else {
			out.Written = append(out.Written, f.Path)
		}
		written[f.Path] = true
	}
	for _, s := range res.Skipped {
		out.LeftOut = append(out.LeftOut, s.Path)
	}
	for _, f := range plan.LeftOut {
		out.LeftOut = append(out.LeftOut, f.Path)
	}
	var notes []string
	if res.Recovered != "" {
		notes = append(notes, res.Recovered)
	}
	notes = append(notes, res.Warnings...)
	var same []string
	for p := range want {
		if !written[p] {
			same = append(same, p)
		}
	}
	sort.Strings(same)
	if len(same) > 0 {
		notes = append(notes, "already as accepted: "+strings.Join(same, ", "))
	}
	out.Message = strings.Join(notes, "; ")
	return out, nil
}

// renameSources maps the source path of each rename to its new path.
func (r *Source) renameSources() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]string{}
	for _, c := range r.changes {
		if c.From != "" {
			m[c.From] = c.Path
		}
	}
	return m
}

// Rollback undoes the project's last apply.
func (r *Source) Rollback() (diffview.Outcome, error) {
	r.mu.Lock()
	lock := r.lock
	r.mu.Unlock()
	if lock == nil {
		return diffview.Outcome{}, errors.New(NoLock)
	}
	res, err := lock.Rollback("")
	if err != nil {
		return diffview.Outcome{}, fmt.Errorf("roll back the last apply of %s: %w", lock.Project(), err)
	}
	return diffview.Outcome{
		ApplyID:    strings.Join(res.Applies, ", "),
		Rollback:   true,
		Restored:   res.PutBack,
		Removed:    res.Removed,
		OlderApply: res.Left > 0,
	}, nil
}

// ReadOnly shows a source's changes but refuses every decision,
// apply and rollback: the review of a session whose agent is still running,
// or of a project another shadow holds.
type ReadOnly struct {
	Source diffview.Source
	// Why is the one-line reason the review gives when it refuses a key
	// (default: the agent is still running).
	Why string
}

// agentRunning is why the review of a running agent takes no change.
const agentRunning = "the agent is still running: decide once it ends"

// ReadOnly says why the source takes no change.
func (r ReadOnly) ReadOnly() string {
	if r.Why == "" {
		return agentRunning
	}
	return r.Why
}

// Load returns the source's changes.
func (r ReadOnly) Load() ([]diffview.File, error) { return r.Source.Load() }

// Decide refuses.
func (r ReadOnly) Decide(string, string, diff.Decision) error {
	return errors.New(r.ReadOnly())
}

// Apply refuses.
func (r ReadOnly) Apply(diffview.Plan) (diffview.Outcome, error) {
	return diffview.Outcome{}, errors.New(r.ReadOnly())
}

// Rollback refuses.
func (r ReadOnly) Rollback() (diffview.Outcome, error) {
	return diffview.Outcome{}, errors.New(r.ReadOnly())
}

// status maps a session change's letter to the browser's.
func status(c *session.Change) diffview.Status {
	switch c.Status {
	case session.Added:
		return diffview.StatusAdded
	case session.Deleted:
		return diffview.StatusDeleted
	case session.Renamed:
		return diffview.StatusRenamed
	default:
		return diffview.StatusModified
	}
}

// gitMode is the git mode of one side of a change (0 when it does not exist).
func gitMode(s session.Side) uint32 {
	switch s.Kind {
	case session.KindFile:
		if s.Mode&0o111 != 0 {
			return diff.ModeExecutable
		}
		return diff.ModeFile
	case session.KindSymlink:
		return diff.ModeSymlink
	case session.KindSpecial:
		return diff.ModeFile
	}
	return 0
}

// linkText is a symlink side's target as diffable text.
func linkText(s session.Side) []byte {
	if s.Kind != session.KindSymlink {
		return nil
	}
	return []byte(s.Target + "\n")
}
