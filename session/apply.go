package session

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
)

const noFollow = unix.O_NOFOLLOW

// ApplyOptions choose what Apply writes into the project.
type ApplyOptions struct {
	// All applies every change as a whole file (the agent's exact bytes).
	All bool
	// Paths applies the changes at or below these project-relative paths as whole files.
	Paths []string
	// IncludeIgnored lets ignored paths be applied; AllowProtected protected ones.
	IncludeIgnored bool
	AllowProtected bool
	// AllowOutsideLinks applies staged symlinks whose target leaves the project.
	AllowOutsideLinks bool
	// Protected extends DefaultProtected (the config's `protected` key).
	Protected []string
}

// Skipped is a change Apply left out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// PlannedFile is one path an apply writes or deletes.
type PlannedFile struct {
	Path string `json:"path"`
	// Action is "write", "symlink" or "delete".
	Action string `json:"action"`
	// Whole is set when the agent's exact bytes are written; otherwise base + accepted hunks.
	Whole bool `json:"whole"`
	// Merged is set when the content is the host's file with the agent's accepted hunks (SPEC §13).
	Merged   bool `json:"merged,omitempty"`
	Accepted int  `json:"hunks_accepted,omitempty"`
	Rejected int  `json:"hunks_rejected,omitempty"`
	Pending  int  `json:"hunks_undecided,omitempty"`
}

// ApplyPlan is what an apply would do, for a confirmation before it is made.
type ApplyPlan struct {
	Files    []PlannedFile `json:"files"`
	Skipped  []Skipped     `json:"skipped,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// Closes is set when nothing stays pending afterwards: the session becomes applied.
	Closes bool `json:"closes_session"`

	ops       []op
	contents  map[string][]byte        // the content of partial applies, by sha256
	decisions map[string]*FileDecision // the file decisions to keep after the apply (nil: drop)
	prior     map[string]*FileDecision
}

// ApplyResult is what an apply did.
type ApplyResult struct {
	ID string `json:"id"`
	// Recovered says what was done about an earlier apply a crash interrupted ("" if none).
	Recovered string `json:"recovered,omitempty"`
	// Interrupted is set when ApplyContext's context was cancelled once the apply had begun
	// to replace project files: it was finished rather than undone.
	Interrupted bool `json:"interrupted,omitempty"`
	ApplyPlan
}

// InterruptedError is ApplyContext's error when its context was cancelled (Ctrl+C) before the
// apply began to replace project files: what it had done was undone, and the project is as
// it was.
type InterruptedError struct {
	// ID is the apply's id; "" when it was interrupted before it wrote anything.
	ID     string
	Undone Undone
}

// Error says that the apply was undone, with what undoing it did.
func (e *InterruptedError) Error() string {
	if e.ID == "" {
		return "apply interrupted before it wrote anything: the project is unchanged"
	}
	return fmt.Sprintf("apply %s interrupted, and undone: %s; the project is as it was before it", e.ID, e.Undone)
}

// Undone counts what undoing an apply did to the project.
type Undone struct {
	// Restored are the paths put back as they were before the apply.
	Restored int `json:"restored"`
	// Removed are the apply's unfinished files (the temp files beside their targets) removed.
	Removed int `json:"removed,omitempty"`
}

// String says what was undone: "3 paths restored, 3645 unfinished files removed".
func (u Undone) String() string {
	s := english.Count(u.Restored, "path") + " restored"
	if u.Removed > 0 {
		s += ", " + english.Count(u.Removed, "unfinished file") + " removed"
	}
	return s
}

// errInterrupted stops the workers of an apply whose context was cancelled.
var errInterrupted = errors.New("apply interrupted")

// op is one write of an apply.
type op struct {
	Path   string `json:"path"`
	Kind   byte   `json:"kind"` // 'f' write a file, 'l' a symlink, 'd' delete
	Mode   uint32 `json:"mode,omitempty"`
	Target string `json:"target,omitempty"`
	Hash   string `json:"hash,omitempty"`
	// Whole: the content is the staged upper file; otherwise it is the base object Hash.
	Whole bool `json:"whole,omitempty"`
	// Merge: the content merges the host's change and the agent's; the path keeps its pre-image
	// as its base (see merge.go).
	Merge bool `json:"merge,omitempty"`
}

// applyStep, when set, is called at each step of an apply (tests kill the process there).
var applyStep func(step string)

// stepMu serializes the calls of applyStep made by parallel workers.
var stepMu sync.Mutex

func step(name string) {
	if applyStep != nil {
		stepMu.Lock()
		defer stepMu.Unlock()
		applyStep(name)
	}
}

// selected reports whether change c is named by the PATH arguments.
func selected(c *Change, paths []string) bool {
	for _, p := range paths {
		p = strings.Trim(filepath.ToSlash(filepath.Clean(p)), "/")
		if p == "" || p == "." {
			return true
		}
		for _, q := range []string{c.Path, c.From} {
			if q != "" && (q == p || strings.HasPrefix(q, p+"/")) {
				return true
			}
		}
	}
	return false
}

// PlanApply works out what Apply would write with these options, without writing anything.
func (s *Session) PlanApply(opts ApplyOptions) (*ApplyPlan, error) {
	unlock, err := s.store.stateLock(s.Meta.Project, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	host, b, err := s.openView()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	defer b.close()
	return s.plan(opts, b, host)
}

// plan works out an apply against bases already loaded and the open project root.
func (s *Session) plan(opts ApplyOptions, b *bases, host *projectRoot) (*ApplyPlan, error) {
	if s.Meta.State == StateDiscarded {
		return nil, fmt.Errorf("session %s was discarded; nothing to apply", s.Meta.ID)
	}
	cs, err := s.changesIn(b, host, opts.Protected)
	if err != nil {
		return nil, err
	}
	for _, p := range opts.Paths {
		found := false
		for i := range cs.Changes {
			if selected(&cs.Changes[i], []string{p}) {
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("apply: %s has no staged change", visible(p))
		}
	}
	decs, err := s.LoadDecisions()
	if err != nil {
		return nil, err
	}
	pl := &ApplyPlan{Closes: true, decisions: map[string]*FileDecision{}, prior: map[string]*FileDecision{}, contents: map[string][]byte{}}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		fd := decs.For(c)
		if f, ok := decs.Files[c.Path]; ok {
			f := f
			pl.prior[c.Path] = &f
		}
		whole := opts.All || (len(opts.Paths) > 0 && selected(c, opts.Paths))
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
		if whole || fd.File == diff.Accepted || !s.hunkable(c) {
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
func (s *Session) planWhole(pl *ApplyPlan, c *Change) {
	if c.From != "" {
		pl.ops = append(pl.ops, op{Path: c.From, Kind: 'd'})
		pl.Files = append(pl.Files, PlannedFile{Path: c.From, Action: "delete", Whole: true})
	}
	switch c.New.Kind {
	case KindNone:
		pl.ops = append(pl.ops, op{Path: c.Path, Kind: 'd', Whole: true})
		pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "delete", Whole: true})
	case KindSymlink:
		pl.ops = append(pl.ops, op{Path: c.Path, Kind: 'l', Target: c.New.Target, Whole: true})
		pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "symlink", Whole: true})
	case KindFile:
		mode := c.New.Mode & 0o777
		if c.New.Mode&0o7000 != 0 {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s: setuid/setgid/sticky bits stripped (mode %04o applied as %04o)", visible(c.Path), c.New.Mode, mode))
		}
		pl.ops = append(pl.ops, op{Path: c.Path, Kind: 'f', Mode: mode, Hash: c.New.Hash, Whole: true})
		pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "write", Whole: true})
	}
	pl.decisions[c.Path] = nil
}

// planHunks plans writing base + the accepted hunks of c.
func (s *Session) planHunks(pl *ApplyPlan, b *bases, host *projectRoot, c *Change, fd FileDecision) error {
	old, new, err := s.contents(b, host, c, s.store.maxDiffBytes())
	if err != nil {
		return err
	}
	hunks := diff.Compute(c.Path, old, new, diff.Options{Context: -1, Budget: diffBudget}).Hunks
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
		return fmt.Errorf("apply hunks of %s: %w", visible(c.Path), err)
	}
	if bytes.Equal(content, old) && c.Old.Exists() {
		return nil
	}
	mode := c.Old.Mode & 0o777
	if !c.Old.Exists() {
		mode = c.New.Mode & 0o777
	}
	sum := contentName(content)
	pl.contents[sum] = content
	pl.ops = append(pl.ops, op{Path: c.Path, Kind: 'f', Mode: mode, Hash: sum})
	pl.Files = append(pl.Files, PlannedFile{Path: c.Path, Action: "write", Accepted: acc, Rejected: rej, Pending: und})
	// The hunks left between the new base and the staged file: rejections carry over by content.
	rejected := map[string]bool{}
	for i := range hs {
		if ds[i].Verdict == diff.Rejected {
			rejected[hunkCore(hs[i])] = true
		}
	}
	next := &FileDecision{BaseHash: sum, StagedHash: contentKey(c.New)}
	if c.New.Kind == KindNone {
		next.StagedHash = ""
	}
	for _, h := range diff.Compute(c.Path, content, new, diff.Options{Context: -1, Budget: diffBudget}).Hunks {
		if rejected[hunkCore(h)] {
			if next.Hunks == nil {
				next.Hunks = map[string]diff.Decision{}
			}
			next.Hunks[h.ID] = diff.Decision{Verdict: diff.Rejected}
		}
	}
	pl.decisions[c.Path] = next
	return nil
}

// Apply writes the planned changes into the project, journaled so that a crash at any instant is
// recovered by the next command (SPEC §4). It refuses while a run is active.
func (s *Session) Apply(opts ApplyOptions) (*ApplyResult, error) {
	return s.ApplyContext(context.Background(), opts)
}

// ApplyContext is Apply, stopped when ctx is cancelled (Ctrl+C): before the apply begins to
// replace project files, what it did is undone and the error is an *InterruptedError; after,
// it is finished (the renames left are quick) and the result says it was interrupted.
func (s *Session) ApplyContext(ctx context.Context, opts ApplyOptions) (*ApplyResult, error) {
	if err := s.writable("apply"); err != nil {
		return nil, err
	}
	recovered, err := s.lock.recover()
	if err != nil {
		return nil, err
	}
	if err := s.reload(); err != nil {
		return nil, err
	}
	if s.RunActive() {
		return nil, fmt.Errorf("apply: a run is active on session %s (pid %d); wait for it to end", s.Meta.ID, s.Meta.Active.PID)
	}
	if err := s.closeStaleRun(); err != nil {
		return nil, err
	}
	unlock, err := s.store.stateLock(s.Meta.Project, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// One load of the bases serves the plan, the journal and the commit.
	root, b, err := s.openView()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	defer b.close()
	pl, err := s.plan(opts, b, root)
	if err != nil {
		return nil, err
	}
	res := &ApplyResult{ApplyPlan: *pl, Recovered: recovered}
	if len(pl.ops) == 0 {
		return res, nil
	}
	res.ID = newID(time.Now())
	for p := range pl.prior {
		if _, ok := pl.decisions[p]; !ok {
			delete(pl.prior, p)
		}
	}
	if ctx.Err() != nil {
		return nil, &InterruptedError{}
	}
	if err := s.applyOps(ctx, res.ID, pl, b, root); err != nil {
		return nil, err
	}
	res.Interrupted = ctx.Err() != nil
	return res, nil
}

// journalPath is one path of a journal entry: the planned write and the state it replaces.
type journalPath struct {
	op
	Temp  string     `json:"temp"`
	Prior priorState `json:"prior"`
	// PriorBase is the base index entry before the apply (nil: none).
	PriorBase *baseEntry `json:"prior_base,omitempty"`
}

// priorState is what a path held before an apply. A regular file is kept itself, as a hard link
// keep/<Keep> in the entry's directory (the inode Ino of device Dev), so that renaming the new
// content over it frees nothing and a rollback puts back the very same file; where no link can be
// made (the state is on another filesystem, or the kernel refuses to link a file of another user),
// its bytes are copied into a pack of the entry's directory: Pack, or prior.pack when Pack is empty.
type priorState struct {
	Exists bool   `json:"exists"`
	Type   byte   `json:"type,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
	Target string `json:"target,omitempty"`
	Keep   string `json:"keep,omitempty"`
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Pack   string `json:"pack,omitempty"`
	Off    int64  `json:"off,omitempty"`
	Len    int64  `json:"len,omitempty"`
	Hash   string `json:"hash,omitempty"`
}

// journalEntry is journal/<apply id>/entry.json.
type journalEntry struct {
	Version int           `json:"version"`
	ID      string        `json:"id"`
	Session string        `json:"session"`
	Created time.Time     `json:"created"`
	Paths   []journalPath `json:"paths"`
	// Dirs are the directories the apply creates (removed again by a rollback).
	Dirs []string `json:"dirs,omitempty"`
	// RemovedDirs are the directories it removes, parents first (made again by a rollback).
	RemovedDirs    []removedDir             `json:"removed_dirs,omitempty"`
	Closes         bool                     `json:"closes,omitempty"`
	Decisions      map[string]*FileDecision `json:"decisions,omitempty"`
	PriorDecisions map[string]*FileDecision `json:"prior_decisions,omitempty"`
}

// applyOps runs the journaled apply: journal entry (prior files, modes, existence) made durable; temp
// files in each target's directory; one syncfs for all of them; renames into place; one syncfs for
// the directories; the entry marked done; then the session's own records (base, decisions, state)
// and the entry committed. Reading the prior bytes, writing the temp files and renaming them run
// on parallel workers, one directory at a time each. Cancelling ctx before the renames undoes
// the apply (abort); from the renames on, it is finished.
func (s *Session) applyOps(ctx context.Context, id string, pl *ApplyPlan, b *bases, root *projectRoot) error {
	// Partial contents become base objects first: a recovered, done apply records them as bases.
	partial := false
	for _, o := range pl.ops {
		if o.Kind == 'f' && !o.Whole {
			if _, err := b.putObject(bytes.NewReader(pl.contents[o.Hash]), true); err != nil {
				return err
			}
			partial = true
		}
	}
	if partial {
		if err := syncDir(b.dir); err != nil {
			return err
		}
	}
	jdir := filepath.Join(s.journalDir(), id)
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		return fmt.Errorf("apply: create journal: %w", err)
	}
	e := &journalEntry{Version: 1, ID: id, Session: s.Meta.ID, Created: time.Now().UTC(), Closes: pl.Closes,
		Decisions: pl.decisions, PriorDecisions: pl.prior}
	fail := func(err error) error {
		os.RemoveAll(jdir)
		if errors.Is(err, errInterrupted) {
			return &InterruptedError{}
		}
		return err
	}
	priors, err := savePriors(ctx, root, jdir, pl.ops)
	if err != nil {
		return fail(err)
	}
	dirs := map[string]bool{}  // directories this apply creates
	isDir := map[string]bool{} // directories the project has
	deleted := map[string]bool{}
	for _, o := range pl.ops {
		if o.Kind == 'd' {
			deleted[o.Path] = true
		}
	}
	for i, o := range pl.ops {
		jp := journalPath{op: o, Temp: fmt.Sprintf(".shadow-apply-%s-%d", id, i), Prior: priors[i]}
		if pe, ok := b.index.Paths[o.Path]; ok {
			pe := pe
			jp.PriorBase = &pe
		}
		if jp.Prior.Exists {
			switch jp.Prior.Type {
			case 'f', 'l':
			case 'd':
				// The agent replaced a directory with a file: allowed when this apply deletes
				// everything in it; the directories are removed and recorded for a rollback.
				removed, err := emptiedDirs(root, o.Path, deleted)
				if err != nil || o.Kind == 'd' {
					return fail(fmt.Errorf("apply %s: the project has a directory there that this apply does not empty; not replacing it", visible(o.Path)))
				}
				e.RemovedDirs = append(e.RemovedDirs, removed...)
			default:
				return fail(fmt.Errorf("apply %s: the project has a special file there; not replacing it", visible(o.Path)))
			}
		}
		if o.Kind != 'd' {
			for d := filepath.Dir(o.Path); d != "."; d = filepath.Dir(d) {
				d = filepath.ToSlash(d)
				if dirs[d] || isDir[d] {
					break
				}
				dh, err := root.lstat(d)
				if err != nil {
					return fail(fmt.Errorf("apply %s: %w", visible(o.Path), err))
				}
				if dh.exists && dh.stat.Type == 'd' {
					isDir[d] = true
					break
				}
				if dh.exists && !deleted[d] {
					return fail(fmt.Errorf("apply %s: %s is not a directory in the project", visible(o.Path), visible(d)))
				}
				dirs[d] = true
				e.Dirs = append(e.Dirs, d)
			}
		}
		e.Paths = append(e.Paths, jp)
	}
	sort.Strings(e.Dirs)
	e.RemovedDirs = append(e.RemovedDirs, leftEmpty(root, s.UpperDir(), pl.ops, deleted, e.RemovedDirs)...)
	// Parents first (a parent's path sorts before its children's).
	sort.Slice(e.RemovedDirs, func(i, j int) bool { return e.RemovedDirs[i].Path < e.RemovedDirs[j].Path })
	if err := writeJSONAtomic(filepath.Join(jdir, "entry.json"), e); err != nil {
		return fail(err)
	}
	if err := syncDir(s.journalDir()); err != nil {
		return err
	}
	step("journal")
	// Resolve every directory afresh from here on: the host may have changed the tree meanwhile.
	root.invalidate()

	for i, jp := range e.Paths {
		if jp.Kind == 'd' {
			if ctx.Err() != nil {
				return s.abort(root, e, errInterrupted)
			}
			if err := deletePath(root, jp); err != nil {
				return s.abort(root, e, err)
			}
			step(fmt.Sprintf("delete %d", i))
		}
	}
	for i := len(e.RemovedDirs) - 1; i >= 0; i-- {
		d := e.RemovedDirs[i]
		err := root.rmdir(d.Path)
		if err != nil && d.Emptied && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOENT)) {
			continue // the host put something in it meanwhile: it stays
		}
		if err != nil {
			return s.abort(root, e, fmt.Errorf("apply: remove directory %s: %w", visible(d.Path), err))
		}
		step("rmdir " + d.Path)
	}
	root.invalidate()
	if err := s.writeTemps(ctx, root, b, e); err != nil {
		return s.abort(root, e, err)
	}
	// One syncfs makes every temp file durable before any of them replaces a project file.
	if err := syncfsAt(s.Meta.Project); err != nil {
		return s.abort(root, e, err)
	}
	step("temps")
	// The last moment to undo rather than finish: the renames replace project files.
	if ctx.Err() != nil {
		return s.abort(root, e, errInterrupted)
	}
	root.invalidate()
	if err := renameTemps(root, e); err != nil {
		return s.abort(root, e, err)
	}
	// And one more makes the renames (the directories) durable before the entry is marked done.
	if err := syncfsAt(s.Meta.Project); err != nil {
		return s.abort(root, e, err)
	}
	step("renamed")
	if err := writeMarker(jdir, "done"); err != nil {
		return err
	}
	step("done")
	if err := s.commitApply(root, e, b); err != nil {
		return fmt.Errorf("apply %s: the project is written but recording it failed (the next shadow command finishes it): %w", id, err)
	}
	step("committed")
	return nil
}

// linkPriors keeps prior files by hard link where the filesystem allows (tests turn it off to
// take the copying path).
var linkPriors = true

// savePriors records what every path of ops holds now: existence, type, mode, a symlink's target,
// and a regular file itself, hard-linked into jdir/keep, or where that cannot be done its bytes,
// appended to one pack per worker in jdir (prior.pack, prior-1.pack, ...), each fsynced. Paths are
// read beneath root, never through a symlink.
func savePriors(ctx context.Context, root *projectRoot, jdir string, ops []op) ([]priorState, error) {
	out := make([]priorState, len(ops))
	paths := make([]string, len(ops))
	for i, o := range ops {
		paths[i] = o.Path
	}
	keep := -1
	if linkPriors {
		if err := os.Mkdir(filepath.Join(jdir, "keep"), 0o700); err != nil {
			return nil, fmt.Errorf("apply: create journal: %w", err)
		}
		fd, err := unix.Open(filepath.Join(jdir, "keep"), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("apply: create journal: %w", err)
		}
		defer unix.Close(fd)
		keep = fd
	}
	packs := make([]*packWriter, applyWorkers)
	closeAll := func() {
		for _, p := range packs {
			if p != nil {
				p.f.Close()
			}
		}
	}
	err := root.inDirs(groupByDir(paths, nil), func(w, dir int, dirErr error, i int) error {
		if ctx.Err() != nil {
			return errInterrupted
		}
		name := paths[i][strings.LastIndexByte(paths[i], '/')+1:]
		pr, err := readPrior(dir, dirErr, name, keep, strconv.Itoa(i), func() (*packWriter, error) {
			if packs[w] == nil {
				f, err := os.OpenFile(filepath.Join(jdir, priorPackName(w)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				if err != nil {
					return nil, fmt.Errorf("apply: create journal: %w", err)
				}
				packs[w] = &packWriter{f: f, w: bufio.NewWriterSize(f, 1<<16), name: priorPackName(w)}
			}
			return packs[w], nil
		})
		if err != nil {
			return fmt.Errorf("apply %s: save prior content: %w", visible(paths[i]), err)
		}
		out[i] = pr
		return nil
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	linked := slices.ContainsFunc(out, func(pr priorState) bool { return pr.Keep != "" })
	if linked && durable {
		// The links are on the project's filesystem: one syncfs makes them (the keep/ entries and
		// the inodes' link counts) durable before the project is touched.
		if err := unix.Syncfs(keep); err != nil {
			closeAll()
			return nil, fmt.Errorf("apply: syncfs journal: %w", err)
		}
	}
	for _, p := range packs {
		if p == nil {
			continue
		}
		if err := p.seal(); err != nil {
			closeAll()
			return nil, fmt.Errorf("apply: write journal %s: %w", p.name, err)
		}
	}
	return out, nil
}

// priorPackName is the prior pack of worker w.
func priorPackName(w int) string {
	if w == 0 {
		return "prior.pack"
	}
	return fmt.Sprintf("prior-%d.pack", w)
}

// readPrior describes name in the directory dir (dirErr when it could not be opened: a missing
// parent, or one that is a file or a symlink, means nothing exists there) and keeps a regular file
// as keepName in the directory keep (when keep >= 0), or else appends its bytes to the pack that
// pack returns.
func readPrior(dir int, dirErr error, name string, keep int, keepName string, pack func() (*packWriter, error)) (priorState, error) {
	st, exists, err := statAt(dir, dirErr, name)
	if err != nil || !exists {
		return priorState{}, err
	}
	fs := statFromUnix(&st)
	pr := priorState{Exists: true, Type: fs.Type, Mode: fs.Mode}
	switch fs.Type {
	case 'l':
		t, err := readlinkat(dir, name)
		if err != nil {
			return priorState{}, err
		}
		pr.Target = t
	case 'f':
		// linkat without AT_SYMLINK_FOLLOW links whatever the name is now, never a symlink's
		// target; what was linked is then checked to be a regular file.
		if keep >= 0 && unix.Linkat(dir, name, keep, keepName, 0) == nil {
			var kst unix.Stat_t
			if err := unix.Fstatat(keep, keepName, &kst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return priorState{}, err
			}
			if kst.Mode&unix.S_IFMT == unix.S_IFREG {
				return priorState{Exists: true, Type: 'f', Mode: kst.Mode & 0o7777, Keep: keepName, Dev: kst.Dev, Ino: kst.Ino}, nil
			}
			unix.Unlinkat(keep, keepName, 0)
		}
		fd, fst, err := openRegularAt(dir, name)
		if err != nil {
			return priorState{}, err
		}
		defer unix.Close(fd)
		p, err := pack()
		if err != nil {
			return priorState{}, err
		}
		sum, off, err := p.addFile(fd, fst.Size)
		if err != nil {
			return priorState{}, err
		}
		pr.Pack, pr.Off, pr.Len, pr.Hash = p.name, off, sum.size, sum.hash
		if p.name == "prior.pack" {
			pr.Pack = ""
		}
	}
	return pr, nil
}

// removedDir is a project directory an apply removes, with its mode.
type removedDir struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
	// Emptied marks a directory removed only because the apply's deletions left it empty: when
	// the host put something in it meanwhile, it stays.
	Emptied bool `json:"emptied,omitempty"`
}

// leftEmpty lists the project directories that the deletions of ops leave empty and that the
// agent's tree no longer has (the agent deleted the whole directory), deepest first, so that the
// apply removes them too and a rollback makes them again. Directories in known are left out.
func leftEmpty(root *projectRoot, upper string, ops []op, deleted map[string]bool, known []removedDir) []removedDir {
	listed := map[string]bool{}
	for _, d := range known {
		listed[d.Path] = true
	}
	var cands []string
	seen := map[string]bool{}
	for _, o := range ops {
		if o.Kind != 'd' {
			continue
		}
		for d := filepathDir(o.Path); d != "" && !seen[d]; d = filepathDir(d) {
			seen[d] = true
			cands = append(cands, d)
		}
	}
	// Deepest first: a directory is empty once the directories in it are gone.
	sort.Slice(cands, func(i, j int) bool {
		di, dj := strings.Count(cands[i], "/"), strings.Count(cands[j], "/")
		if di != dj {
			return di > dj
		}
		return cands[i] < cands[j]
	})
	gone := map[string]bool{}
	var out []removedDir
	for _, d := range cands {
		if listed[d] || agentHasDir(upper, d) {
			continue
		}
		h, err := root.lstat(d)
		if err != nil || !h.exists || h.stat.Type != 'd' || !onlyDeleted(root, d, deleted, gone) {
			continue
		}
		gone[d] = true
		out = append(out, removedDir{Path: d, Mode: h.stat.Mode, Emptied: true})
	}
	return out
}

// agentHasDir reports whether the agent's tree (the upper layer over the project) still has the
// project directory dir: not when dir or a directory above it is deleted (a whiteout) or replaced
// by a file or symlink, or hidden by an opaque directory that does not have it again. No symlink
// of the upper layer is followed.
func agentHasDir(upper, dir string) bool {
	cur, err := unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer func() { unix.Close(cur) }()
	opaque := false
	for _, c := range strings.Split(dir, "/") {
		var st unix.Stat_t
		err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			// Not staged: the project's directory shows through, unless an opaque one hides it.
			return !opaque
		}
		if err != nil {
			return true
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
		opaque = opaque || isOpaque(cur, c)
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return true
		}
		unix.Close(cur)
		cur = next
	}
	return true
}

// onlyDeleted reports whether every entry of the project directory dir goes with the apply: a
// non-directory in deleted, or a directory in gone.
func onlyDeleted(root *projectRoot, dir string, deleted, gone map[string]bool) bool {
	fd, err := openat(root.fd, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return false
	}
	for _, e := range ents {
		child := dir + "/" + e.Name()
		if e.IsDir() {
			if !gone[child] {
				return false
			}
		} else if !deleted[child] {
			return false
		}
	}
	return true
}

// emptiedDirs lists dir and every directory below it, parents first, when every non-directory
// below dir is in deleted; otherwise it fails.
func emptiedDirs(root *projectRoot, dir string, deleted map[string]bool) ([]removedDir, error) {
	fd, err := openat(root.fd, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", visible(dir), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	out := []removedDir{{Path: dir, Mode: statFromUnix(&st).Mode}}
	err = walkAt(fd, dir, func(rel string, _ int, _ string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if !deleted[rel] {
				return fmt.Errorf("%s stays", visible(rel))
			}
			return nil
		}
		out = append(out, removedDir{Path: rel, Mode: statFromUnix(st).Mode})
		return nil
	})
	return out, err
}

// abort rolls back an apply that failed (or was interrupted: cause is errInterrupted) part-way,
// then reports the original error, or an *InterruptedError.
func (s *Session) abort(root *projectRoot, e *journalEntry, cause error) error {
	u, err := s.rollbackEntry(root, e, false)
	if err != nil {
		return fmt.Errorf("%w; rolling it back failed too (the next shadow command retries): %v", cause, err)
	}
	if err := writeMarker(filepath.Join(s.journalDir(), e.ID), "rolledback"); err != nil {
		return fmt.Errorf("%w (the project was restored)", cause)
	}
	if errors.Is(cause, errInterrupted) {
		return &InterruptedError{ID: e.ID, Undone: u}
	}
	return fmt.Errorf("%w (nothing was changed)", cause)
}

// writeTemps writes each planned file or symlink as a temp file next to its target, on parallel
// workers that each take one directory at a time.
func (s *Session) writeTemps(ctx context.Context, root *projectRoot, b *bases, e *journalEntry) error {
	for _, d := range e.Dirs {
		if err := root.mkdirAll(d); err != nil {
			return err
		}
	}
	upper, err := openRoot(s.UpperDir())
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	defer upper.Close()
	return e.inWrittenDirs(root, func(dir, i int, jp journalPath) error {
		if ctx.Err() != nil {
			return errInterrupted
		}
		if err := writeTemp(upper, b, dir, jp); err != nil {
			return fmt.Errorf("apply %s: write: %w", visible(jp.Path), err)
		}
		step(fmt.Sprintf("temp %d", i))
		return nil
	})
}

// writeTemp writes one path's temp file (or symlink) in its directory dir: the staged file, read
// beneath the upper layer without following a symlink, or the base object of a partial apply.
func writeTemp(upper *projectRoot, b *bases, dir int, jp journalPath) error {
	if jp.Kind == 'l' {
		return unix.Symlinkat(jp.Target, dir, jp.Temp)
	}
	var src int
	var err error
	if jp.Whole {
		src, err = openat(upper.fd, jp.Path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err == unix.EACCES {
			// Closed to its owner by its mode: opened as openRegularAt does.
			src, err = upper.openReadFD(jp.Path)
		}
	} else {
		src, err = unix.Open(b.objectPath(jp.Hash), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("the staged file is not a regular file")
	}
	// Copying the size the file has spares a read to find its end; had it changed since the
	// plan, the hash would not match.
	return writeTempAt(dir, jp.Temp, src, 0, st.Size, jp.Mode&0o777, jp.Hash)
}

// writeTempAt creates name in dir (never following a symlink, never reusing a file), copies the
// n bytes at off of the regular file src into it and sets mode; a large file is copied by its
// data segments, its holes left holes (copySparse). A non-empty hash must match the copied
// content.
func writeTempAt(dir int, name string, src int, off, n int64, mode uint32, hash string) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	var sum string
	if n >= sparseMin {
		var s fileSum
		s, err = copySparse(fd, src, off, n)
		sum = s.hash
	} else {
		sum, err = copySmall(fd, src, off, n)
	}
	if err == nil {
		err = unix.Fchmod(fd, mode)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil && hash != "" && sum != hash {
		err = errors.New("the staged content changed while it was applied")
	}
	if err != nil {
		unix.Unlinkat(dir, name, 0)
	}
	return err
}

// copySmall copies the n bytes at off of src, fewer than sparseMin, to dst and returns their
// sha256 (which is their contentSum).
func copySmall(dst, src int, off, n int64) (string, error) {
	h := sha256.New()
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	for done := int64(0); done < n; {
		k, err := pread(src, buf[:min(int64(len(buf)), n-done)], off+done)
		if err != nil {
			return "", err
		}
		if k == 0 {
			return "", errShrank
		}
		if _, err := fdIO(dst).Write(buf[:k]); err != nil {
			return "", err
		}
		h.Write(buf[:k])
		done += int64(k)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// renameTemps renames every temp file of an apply over its target, on parallel workers that each
// take one directory at a time.
func renameTemps(root *projectRoot, e *journalEntry) error {
	return e.inWrittenDirs(root, func(dir, i int, jp journalPath) error {
		name := jp.Path[strings.LastIndexByte(jp.Path, '/')+1:]
		if err := unix.Renameat(dir, jp.Temp, dir, name); err != nil {
			return fmt.Errorf("apply %s: rename into place: %w", visible(jp.Path), err)
		}
		step(fmt.Sprintf("rename %d", i))
		return nil
	})
}

// inWrittenDirs calls fn for every path the entry writes (all but deletions), with its directory
// open beneath root, on parallel workers that each take one directory at a time (see inDirs).
func (e *journalEntry) inWrittenDirs(root *projectRoot, fn func(dir, i int, jp journalPath) error) error {
	paths := make([]string, len(e.Paths))
	for i, jp := range e.Paths {
		paths[i] = jp.Path
	}
	groups := groupByDir(paths, func(i int) bool { return e.Paths[i].Kind != 'd' })
	return root.inDirs(groups, func(_, dir int, dirErr error, i int) error {
		jp := e.Paths[i]
		if dirErr != nil {
			return fmt.Errorf("apply %s: open its directory: %w", visible(jp.Path), dirErr)
		}
		return fn(dir, i, jp)
	})
}

// deletePath deletes a path an apply deletes.
func deletePath(root *projectRoot, jp journalPath) error {
	dir, name, err := root.openParent(jp.Path, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("apply %s: open its directory: %w", visible(jp.Path), err)
	}
	if err := unix.Unlinkat(dir, name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("apply %s: delete: %w", visible(jp.Path), err)
	}
	return nil
}

func writeMarker(dir, name string) error {
	if err := writeFileAtomic(filepath.Join(dir, name), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		return fmt.Errorf("journal %s: %w", dir, err)
	}
	return nil
}

func hasMarker(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// ApplyRecord is one committed apply of a session.
// The paths themselves are in the apply's journal entry: listing them here too would make
// session.json, read by every command, grow by every path of every apply.
type ApplyRecord struct {
	ID         string    `json:"id"`
	Time       time.Time `json:"time"`
	Files      int       `json:"files"`
	RolledBack bool      `json:"rolled_back,omitempty"`
}

// commitApply records a done apply in the session: the applied content becomes the base of each
// path, decisions move on, the apply is listed. It is idempotent, so recovery can repeat it.
// root is the project, opened; b, when not nil, is the session's bases already loaded.
func (s *Session) commitApply(root *projectRoot, e *journalEntry, b *bases) error {
	var err error
	if b == nil {
		if b, err = s.loadBases(); err != nil {
			return err
		}
		defer b.close()
	}
	for _, jp := range e.Paths {
		h, err := root.lstat(jp.Path)
		if err != nil {
			return err
		}
		switch {
		case jp.Merge:
			// The pre-image stays the base the next merge is made against.
		case jp.Kind == 'd' || !h.exists:
			b.index.Paths[jp.Path] = baseEntry{Kind: baseAbsent}
		case jp.Kind == 'l':
			b.index.Paths[jp.Path] = baseEntry{Kind: baseObject, Type: 'l', Mode: h.stat.Mode, Target: jp.Target, Host: h.stat}
		case jp.Whole:
			// The content is on the host (and in the upper layer): the hash is enough to tell the
			// staged copy is unchanged, whatever the host does with the file later.
			b.index.Paths[jp.Path] = baseEntry{Kind: baseHost, Type: 'f', Mode: h.stat.Mode, Hash: jp.Hash, Host: h.stat}
		default:
			b.index.Paths[jp.Path] = baseEntry{Kind: baseObject, Type: 'f', Mode: h.stat.Mode, Hash: jp.Hash, Host: h.stat}
		}
	}
	if err := b.save(); err != nil {
		return err
	}
	d, err := s.LoadDecisions()
	if err != nil {
		return err
	}
	for p, fd := range e.Decisions {
		if fd == nil {
			delete(d.Files, p)
		} else {
			d.Files[p] = *fd
		}
	}
	if err := s.saveDecisions(d); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	if !slices.ContainsFunc(s.Meta.Applies, func(r ApplyRecord) bool { return r.ID == e.ID }) {
		rec := ApplyRecord{ID: e.ID, Time: e.Created, Files: len(e.Paths)}
		s.Meta.Applies = append(s.Meta.Applies, rec)
		if e.Closes && s.Meta.State == StateOpen {
			s.Meta.State = StateApplied
			s.Meta.Closed = time.Now().UTC()
		}
		if err := s.saveMeta(); err != nil {
			return err
		}
	}
	return writeMarker(filepath.Join(s.journalDir(), e.ID), "committed")
}
