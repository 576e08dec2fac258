package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
	"golang.org/x/sys/unix"
)

// processStart is the start time of pid in clock ticks since boot (field 22 of /proc/PID/stat),
// or 0 when the process does not exist.
func processStart(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// RunActive reports whether a run is recorded as in progress and its process is still alive; the
// record left by a crashed shadow is stale and does not count, nor does a run whose end is in
// runsFile (endRecorded), whose process may live on (the app runs one command after another).
func (s *Session) RunActive() bool {
	a := s.Meta.Active
	if a == nil || a.PID <= 0 {
		return false
	}
	if err := unix.Kill(a.PID, 0); err != nil && err != unix.EPERM {
		return false
	}
	return processStart(a.PID) == a.PIDStart && !s.endRecorded()
}

// endRecorded reports whether the active run's end is already recorded: the last line of
// runsFile is that run. A run that staged nothing ends with that line alone, leaving session.json
// naming it active (EndRunUnchanged), and so does a process killed between an end's line and the
// rewrite of session.json. The last line is the one to look at: nothing appends to runsFile while
// a run is active but that run's end (a stale run is closed before the next one begins). A line
// cut short does not parse: that end is not recorded.
func (s *Session) endRecorded() bool {
	a := s.Meta.Active
	if a == nil {
		return false
	}
	r, ok := lastRun(filepath.Join(s.dir, runsFile))
	return ok && recorded([]store.Run{r}, a)
}

// dropEndedRun clears, in memory, the active run whose end is already recorded, so that every
// reader of the session sees it ended. The next write of session.json leaves it out.
func (s *Session) dropEndedRun() {
	if s.endRecorded() {
		s.Meta.Active = nil
	}
}

// lastRun returns the last line of the runs file at path, read from its end: the cost is one
// line's, however many runs came before (the whole file only for a line longer than the tail).
func lastRun(path string) (store.Run, bool) {
	f, err := os.Open(path)
	if err != nil {
		return store.Run{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return store.Run{}, false
	}
	size := fi.Size()
	for n := min(size, 4096); ; n = size {
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil {
			return store.Run{}, false
		}
		// A last line whose line feed alone was lost is still a run (Runs).
		line := bytes.TrimSuffix(buf, []byte("\n"))
		i := bytes.LastIndexByte(line, '\n')
		if i < 0 && n < size {
			continue // the line is longer than the tail
		}
		var r store.Run
		if json.Unmarshal(line[i+1:], &r) != nil {
			return store.Run{}, false
		}
		return r, true
	}
}

// BeginRun records that argv starts running over the session now, from this process. It refuses
// while another run is active and records an interrupted earlier run as ended with exit code -1.
func (s *Session) BeginRun(argv []string) error {
	if err := s.writable("begin run"); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	if s.Meta.State != store.StateOpen {
		return fmt.Errorf("session %s is %s; start a new one", s.Meta.ID, s.Meta.State)
	}
	if s.RunActive() {
		return fmt.Errorf("session %s: a run is already active (pid %d)", s.Meta.ID, s.Meta.Active.PID)
	}
	if err := s.closeStaleRun(); err != nil {
		return err
	}
	// A revert can be undone until the next run.
	if err := s.layers().DropReverted(); err != nil {
		return err
	}
	pid := os.Getpid()
	s.Meta.Active = &store.Run{Argv: append([]string(nil), argv...), Start: time.Now().UTC(), PID: pid, PIDStart: processStart(pid)}
	return s.saveRunRecord()
}

// closeStaleRun moves a run left active by a crashed process into the finished runs, after taking
// the pre-images it would have taken.
func (s *Session) closeStaleRun() error {
	if s.Meta.Active == nil || s.RunActive() {
		return nil
	}
	r := *s.Meta.Active
	r.End = time.Now().UTC()
	r.ExitCode = -1
	// Its jail may still be writing its last checkpoint, or have died before it merged its
	// checkpoints into the staging layer: what it had written when it took the last one is
	// staged now.
	if err := s.settleRun(); err != nil {
		return err
	}
	// The process that ran it may have died before it synced the staged layer.
	if err := syncStaged(s.UpperDir()); err != nil {
		return err
	}
	v, err := s.takePreimages(false, nil)
	if err != nil {
		return err
	}
	err = v.saveCaptured()
	v.close()
	if err != nil {
		return err
	}
	if err := s.dropUnreferencedPacks(r.Start); err != nil {
		return err
	}
	r.Captured, r.Unknown = v.captured, v.unknown
	// The process may have died after it recorded the run but before it cleared it as active.
	runs, err := s.Runs()
	if err != nil {
		return err
	}
	if !recorded(runs, &r) {
		if err := s.appendRun(r); err != nil {
			return err
		}
	}
	s.Meta.Active = nil
	return s.saveRunRecord()
}

// EndRun records the active run's end and exit code, and copies into base/ the pre-image of every
// path the upper layer changes whose base was not captured yet (if the host file still matches the
// manifest; otherwise its base becomes unknown, a conflict).
func (s *Session) EndRun(exitCode int) error {
	_, _, err := s.endRun(exitCode, false)
	return err
}

// EndRunUnchanged records the active run's end when the run staged nothing (it took no
// checkpoint): there is no pre-image to take and the change set is the one before it, so nothing
// staged is read, however much the session holds.
func (s *Session) EndRunUnchanged(exitCode int) error {
	s.stopPrecapture().abandon()
	if err := s.writable("end run"); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	if s.Meta.Active == nil {
		return fmt.Errorf("end run: session %s has no active run", s.Meta.ID)
	}
	r := *s.Meta.Active
	r.End = time.Now().UTC()
	r.ExitCode = exitCode
	// The line alone ends the run: session.json, which still names it active, is not rewritten
	// (endRecorded; the next run's start rewrites it). Nor is the line fsynced: it records a run
	// that staged nothing, and nothing else depends on it, so its durability is not worth an
	// fsync. A power loss may take it (the next fsync of runsFile, at a run's end that staged
	// something, takes it along): the run is then recorded as active with its process gone, and
	// the next command closes it as interrupted, finding nothing staged, or, were session.json
	// rewritten durably since (the next run's start, an apply, a discard), it is not recorded
	// at all.
	if err := s.appendRunSync(r, false); err != nil {
		return err
	}
	s.Meta.Active = nil
	return nil
}

// EndRunChanges is EndRun followed by Changes, done as one: the upper layer is scanned and the
// bases loaded once for both, the staged files are read as the pre-images are taken, and the
// change set is computed before the state lock is let go, so it is the one the pre-images were
// taken for. Its error says which part failed: "record the run: ..." (then EndRun would have
// failed the same way), or "read the staged changes: ..." (the run is recorded). The change set is
// nil whenever the error is not.
func (s *Session) EndRunChanges(exitCode int) (*changeset.ChangeSet, error) {
	cs, csErr, err := s.endRun(exitCode, true)
	if err != nil {
		return nil, fmt.Errorf("record the run: %w", err)
	}
	if csErr != nil {
		return nil, &ChangeSetError{Err: csErr}
	}
	return cs, nil
}

// ChangeSetError is EndRunChanges' error when the run was recorded but its change set could not be
// read: computing it again would fail the same way.
type ChangeSetError struct{ Err error }

func (e *ChangeSetError) Error() string { return "read the staged changes: " + e.Err.Error() }
func (e *ChangeSetError) Unwrap() error { return e.Err }

// endRun is EndRun (its error is err), and then, with changes set, the change set (or csErr).
func (s *Session) endRun(exitCode int, changes bool) (cs *changeset.ChangeSet, csErr, err error) {
	// What a precapture took is kept; the rest is taken now.
	pre := s.stopPrecapture()
	fail := func(err error) (*changeset.ChangeSet, error, error) {
		pre.abandon()
		return nil, nil, err
	}
	if err := s.writable("end run"); err != nil {
		return fail(err)
	}
	if err := s.reload(); err != nil {
		return fail(err)
	}
	if s.Meta.Active == nil {
		return fail(fmt.Errorf("end run: session %s has no active run", s.Meta.ID))
	}
	// A jail killed before it merged leaves checkpoints for the staging layer, or none for
	// what its command wrote last.
	if err := s.settleRun(); err != nil {
		return fail(err)
	}
	// What the run staged is its checkpoints' files, linked: as durable as the same writes made
	// outside the jail (the page cache, checked by the checkpoints' sums), with no syncfs here.
	v, err := s.takePreimages(changes, pre)
	if err != nil {
		return nil, nil, err
	}
	defer v.close()
	done := make(chan struct{})
	if changes {
		// The change set needs only what the view holds in memory: it is computed while the
		// pre-images are made durable.
		go func() {
			defer close(done)
			cs, csErr = v.changes(s)
		}()
	} else {
		close(done)
	}
	err = v.saveCaptured()
	<-done
	if err != nil {
		return nil, nil, err
	}
	r := *s.Meta.Active
	r.End = time.Now().UTC()
	r.ExitCode = exitCode
	r.Captured, r.Unknown = v.captured, v.unknown
	if err := s.appendRun(r); err != nil {
		return nil, nil, err
	}
	s.Meta.Active = nil
	if err := s.saveRunRecord(); err != nil {
		return nil, nil, err
	}
	return cs, csErr, nil
}

// dropUnreferencedPacks removes the pack files of base/ written since the interrupted run started
// that no base refers to: what its process wrote before it died (its precapture's pack, or the
// pack of an end it did not finish). Older packs stay, referenced or not: an apply's journal may
// still refer to one that the index no longer does, for a rollback to restore. Nothing else writes
// packs meanwhile: the caller holds the project's writer lock.
func (s *Session) dropUnreferencedPacks(since time.Time) error {
	unlock, err := s.store.StateLock(s.Meta.Project, true)
	if err != nil {
		return err
	}
	defer unlock()
	b, err := changeset.LoadIndex(s.dir, s.Meta.ID)
	if err != nil {
		return err
	}
	packs, err := filepath.Glob(filepath.Join(b.Dir, "pack-*"))
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, e := range b.Index.Paths {
		used[e.Pack] = true
	}
	for _, p := range packs {
		fi, err := os.Lstat(p)
		// A file's times come from a clock that lags, never leads: one written before the run
		// started never looks newer.
		if err != nil || used[filepath.Base(p)] || fi.ModTime().Before(since) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the unused pre-images %s: %w", p, err)
		}
	}
	return nil
}

// runsFile holds a session's finished runs, oldest first, one JSON object a line. It is appended
// to, so that recording a run costs the same however many runs came before it.
const runsFile = "runs.jsonl"

// Runs returns the session's finished runs, oldest first: those recorded before runsFile existed
// (Meta.LegacyRuns), then runsFile's. A line that a crash or a failed write cut short is not a run
// (a cut JSON object does not parse), at the end of the file or within it, where statefile.AppendLine ended
// it before the next.
func (s *Session) Runs() ([]store.Run, error) {
	runs := slices.Clone(s.Meta.LegacyRuns)
	data, err := os.ReadFile(filepath.Join(s.dir, runsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return runs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the runs of session %s: %w", s.Meta.ID, err)
	}
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		var r store.Run
		if json.Unmarshal(line, &r) == nil {
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// recorded reports whether runs holds the run a (the same start, by the same process).
func recorded(runs []store.Run, a *store.Run) bool {
	return slices.ContainsFunc(runs, func(r store.Run) bool { return r.Start.Equal(a.Start) && r.PID == a.PID })
}

// appendRun adds r to the finished runs, durably.
func (s *Session) appendRun(r store.Run) error { return s.appendRunSync(r, true) }

// appendRunSync is appendRun; with sync unset, the line is not fsynced (statefile.AppendLineSync).
func (s *Session) appendRunSync(r store.Run, sync bool) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode a run of session %s: %w", s.Meta.ID, err)
	}
	if err := statefile.AppendLineSync(filepath.Join(s.dir, runsFile), line, true, sync); err != nil {
		return fmt.Errorf("record the run: %w", err)
	}
	return nil
}

// saveRunRecord writes session.json for a run's start or end: atomically and with its content
// fsynced, but without the fsync of the directory. Should a crash lose the rename, the previous
// session.json stays, whole: a start not recorded, or a run still active whose end is already in
// runsFile, which every reader takes as ended (endRecorded: its pre-images are already durable in
// base/).
func (s *Session) saveRunRecord() error {
	data, err := json.MarshalIndent(s.Meta, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session %s: %w", s.Meta.ID, err)
	}
	return statefile.WriteFileReplace(filepath.Join(s.dir, "session.json"), append(data, '\n'), 0o600, false)
}

// stagedView is what the end of a run works on: the state lock, the project root, the bases and
// the scan of the upper layer, taken once for the pre-images and the change set. A view of an
// upper layer with nothing staged holds nothing.
type stagedView struct {
	unlock func()
	host   *projectfs.Root
	b      *changeset.Bases
	raw    []changeset.RawEntry
	// captured and unknown count the pre-images taken and the bases that became unknown; packed
	// says that some of them are in the pack.
	captured, unknown int
	packed            bool
}

// takePreimages takes the state lock, opens the project and the bases, and scans the upper layer,
// taking the pre-image of every path it changes whose base still refers to the host: appended to
// one pack file and recorded in the bases' index, in memory (saveCaptured makes them durable). A
// staged file's pre-image is taken as the scan comes to it, right after the host path is looked
// up; the paths the scan finds only as hidden (deleted) are taken after it. With contents set, the
// scan also reads the staged files, for the change set. When nothing is staged it does none of
// that. pre is what a precapture took (nil: nothing): its pack becomes this capture's, and a staged
// path it took whose base still refers to the host keeps the pre-image taken then.
func (s *Session) takePreimages(contents bool, pre *precaptured) (*stagedView, error) {
	if empty, err := projectfs.EmptyDir(s.UpperDir()); err != nil || empty {
		pre.abandon()
		return &stagedView{}, err // nothing staged, nothing to capture
	}
	unlock, err := s.store.StateLock(s.Meta.Project, true)
	if err != nil {
		pre.abandon()
		return nil, err
	}
	host, b, err := s.source().OpenView()
	if err != nil {
		pre.abandon()
		unlock()
		return nil, err
	}
	v := &stagedView{unlock: unlock, host: host, b: b}
	var mu sync.Mutex
	got := map[string]changeset.BaseEntry{}
	var preGot map[string]changeset.BaseEntry
	if pre != nil {
		b.Pack, preGot = pre.pack, pre.got
	}
	// adopt returns the precaptured pre-image of path when it is the one to keep: taken against
	// the base the path still has.
	adopt := func(path string) (changeset.BaseEntry, bool) {
		e, ok := preGot[path]
		cur := b.Get(path)
		return e, ok && cur.Kind == changeset.BaseHost && changeset.SameStat(e.Host, cur.Host)
	}
	visit := func(root *projectfs.Root, path string, h projectfs.HostEntry) error {
		if e, ok := adopt(path); ok {
			mu.Lock()
			got[path] = e
			mu.Unlock()
			return nil
		}
		e, err := b.CaptureSeen(root, path, h)
		if err != nil {
			return fmt.Errorf("take pre-image of %s: %w", quote.Path(path), err)
		}
		if e.Kind != "" {
			mu.Lock()
			got[path] = e
			mu.Unlock()
		}
		return nil
	}
	v.raw, err = changeset.ScanUpper(s.UpperDir(), host, changeset.ScanOptions{Contents: contents, Visit: visit})
	if err == nil {
		err = v.captureRest(got, adopt)
	}
	if err == nil && b.Pack != nil {
		// Written out, the pack can be read while it is made durable (a change set may read a
		// .gitignore's pre-image from it).
		err = b.Pack.Flush()
	}
	if err != nil {
		if b.Pack != nil {
			b.Pack.Abandon()
			b.Pack = nil
		}
		v.close()
		return nil, err
	}
	for _, e := range got {
		if e.Kind == changeset.BaseUnknown {
			v.unknown++
		} else {
			v.captured++
		}
		v.packed = v.packed || e.Pack != ""
	}
	return v, nil
}

// captureRest records in the index the pre-images the scan took (got), then those of the paths
// the scan found only as hidden: what adopt keeps of a precapture, else taken now. They are added
// to got.
func (v *stagedView) captureRest(got map[string]changeset.BaseEntry, adopt func(string) (changeset.BaseEntry, bool)) error {
	for p, e := range got {
		v.b.Index.Paths[p] = e
	}
	paths := make([]string, len(v.raw))
	for i, r := range v.raw {
		paths[i] = r.Path
		if _, ok := got[r.Path]; ok {
			continue
		}
		if e, ok := adopt(r.Path); ok {
			v.b.Index.Paths[r.Path] = e
			got[r.Path] = e
		}
	}
	// What the scan took is in the index now: changeset.CaptureAll leaves it alone.
	rest, err := v.b.CaptureAll(v.host, paths)
	if err != nil {
		return err
	}
	for i, e := range rest {
		if e.Kind != "" {
			v.b.Index.Paths[paths[i]] = e
			got[paths[i]] = e
		}
	}
	return nil
}

func (v *stagedView) close() {
	if v.unlock == nil {
		return
	}
	v.b.Close()
	v.host.Close()
	v.unlock()
}

// saveCaptured makes the pre-images taken durable: the pack with one fsync, then the index that
// refers to it.
func (v *stagedView) saveCaptured() error {
	if v.b == nil {
		return nil
	}
	switch {
	case v.b.Pack != nil && !v.packed:
		// Only a precapture wrote to it, and the end kept none of that: nothing refers to it.
		v.b.Pack.Abandon()
		v.b.Pack = nil
	case v.b.Pack != nil:
		if err := v.b.Pack.Finish(); err != nil {
			return fmt.Errorf("take pre-images: %w", err)
		}
	}
	if v.captured+v.unknown == 0 {
		return nil
	}
	return v.b.Save()
}

// changes is the change set of the view, as Changes computes it; the view was taken with the
// staged files' contents.
func (v *stagedView) changes(s *Session) (*changeset.ChangeSet, error) {
	if v.unlock == nil {
		return &changeset.ChangeSet{}, nil
	}
	return s.source().ChangesFrom(v.b, v.host, v.raw, s.extraProtected(nil))
}

// syncStaged makes what the upper layer holds durable with one syncfs of its filesystem, rather
// than an fsync per file. An empty upper layer has nothing to flush: syncfs would only wait for
// every other writer of the disk.
func syncStaged(upper string) error {
	empty, err := projectfs.EmptyDir(upper)
	if err == nil && !empty {
		err = statefile.SyncFS(upper)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("make the staged changes durable: %w", err)
	}
	return nil
}
