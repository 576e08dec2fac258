package apply

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
	"time"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
	"golang.org/x/sys/unix"
)

// The journaled write of an apply (SPEC §4): the prior state of every path kept in the journal
// entry, temp files beside their targets, the renames, and the commit of the session's records.
// Rolling an entry back and recovering one a kill interrupted are journal.go.

// journalPath is one path of a journal entry: the planned write and the state it replaces.
type journalPath struct {
	op
	Temp  string     `json:"temp"`
	Prior priorState `json:"prior"`
	// PriorBase is the base index entry before the apply (nil: none).
	PriorBase *changeset.BaseEntry `json:"prior_base,omitempty"`
}

// priorState is what a path held before an  A regular file is kept itself, as a hard link
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

// JournalEntry is journal/<apply id>/entry.json.
type JournalEntry struct {
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

// ApplyOps runs the journaled apply: journal entry (prior files, modes, existence) made durable; temp
// files in each target's directory; one syncfs for all of them; renames into place; one syncfs for
// the directories; the entry marked done; then the session's own records (base, decisions, state)
// and the entry committed. Reading the prior bytes, writing the temp files and renaming them run
// on parallel workers, one directory at a time each. Cancelling ctx before the renames undoes
// the apply (abort); from the renames on, it is finished.
func (s *Session) ApplyOps(ctx context.Context, id string, pl *ApplyPlan, b *changeset.Bases, root *projectfs.Root) error {
	if err := storePartials(pl, b); err != nil {
		return err
	}
	jdir := filepath.Join(s.journalDir(), id)
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		return fmt.Errorf("apply: create journal: %w", err)
	}
	e := &JournalEntry{Version: 1, ID: id, Session: s.ID, Created: time.Now().UTC(), Closes: pl.Closes,
		Decisions: pl.Decisions, PriorDecisions: pl.Prior}
	fail := func(err error) error {
		os.RemoveAll(jdir)
		if errors.Is(err, errInterrupted) {
			return &InterruptedError{}
		}
		return err
	}
	priors, err := savePriors(ctx, root, jdir, pl.Ops)
	if err != nil {
		return fail(err)
	}
	deleted := map[string]bool{}
	for _, o := range pl.Ops {
		if o.Kind == 'd' {
			deleted[o.Path] = true
		}
	}
	if err := journalPaths(root, id, pl.Ops, b, priors, deleted, e); err != nil {
		return fail(err)
	}
	sort.Strings(e.Dirs)
	e.RemovedDirs = append(e.RemovedDirs, leftEmpty(root, s.Upper, pl.Ops, deleted, e.RemovedDirs)...)
	// Parents first (a parent's path sorts before its children's).
	sort.Slice(e.RemovedDirs, func(i, j int) bool { return e.RemovedDirs[i].Path < e.RemovedDirs[j].Path })
	if err := statefile.WriteJSON(filepath.Join(jdir, "entry.json"), e); err != nil {
		return fail(err)
	}
	if err := statefile.SyncDir(s.journalDir()); err != nil {
		return err
	}
	step("journal")
	// Resolve every directory afresh from here on: the host may have changed the tree meanwhile.
	root.Invalidate()
	if err := removeForApply(ctx, root, e); err != nil {
		return s.abort(root, e, err)
	}
	root.Invalidate()
	if err := s.writeAndRename(ctx, root, b, e); err != nil {
		return s.abort(root, e, err)
	}
	if err := WriteMarker(jdir, "done"); err != nil {
		return err
	}
	step("done")
	if err := s.commitApply(root, e, b); err != nil {
		return fmt.Errorf("apply %s: the project is written but recording it failed (the next shadow command finishes it): %w", id, err)
	}
	step("committed")
	return nil
}

// storePartials makes the partial contents of the plan (hunks accepted in part) base objects, so
// that a recovered, done apply records them as bases.
func storePartials(pl *ApplyPlan, b *changeset.Bases) error {
	partial := false
	for _, o := range pl.Ops {
		if o.Kind == 'f' && !o.Whole {
			if _, err := b.PutObject(bytes.NewReader(pl.contents[o.Hash]), true); err != nil {
				return err
			}
			partial = true
		}
	}
	if !partial {
		return nil
	}
	return statefile.SyncDir(b.Dir)
}

// journalPaths records in e what each op replaces (its prior, saved as priors, and its prior
// base), the directories the apply creates and those it removes because the agent replaced a
// directory with a file; deleted are the paths the apply deletes. It refuses an op whose place
// the project holds in a way the apply must not overwrite.
func journalPaths(root *projectfs.Root, id string, ops []op, b *changeset.Bases, priors []priorState, deleted map[string]bool, e *JournalEntry) error {
	dirs := map[string]bool{}  // directories this apply creates
	isDir := map[string]bool{} // directories the project has
	for i, o := range ops {
		jp := journalPath{op: o, Temp: fmt.Sprintf(".shadow-apply-%s-%d", id, i), Prior: priors[i]}
		if pe, ok := b.Index.Paths[o.Path]; ok {
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
					return fmt.Errorf("apply %s: the project has a directory there that this apply does not empty; not replacing it", quote.Path(o.Path))
				}
				e.RemovedDirs = append(e.RemovedDirs, removed...)
			default:
				return fmt.Errorf("apply %s: the project has a special file there; not replacing it", quote.Path(o.Path))
			}
		}
		if o.Kind != 'd' {
			for d := filepath.Dir(o.Path); d != "."; d = filepath.Dir(d) {
				d = filepath.ToSlash(d)
				if dirs[d] || isDir[d] {
					break
				}
				dh, err := root.Lstat(d)
				if err != nil {
					return fmt.Errorf("apply %s: %w", quote.Path(o.Path), err)
				}
				if dh.Exists && dh.Stat.Type == 'd' {
					isDir[d] = true
					break
				}
				if dh.Exists && !deleted[d] {
					return fmt.Errorf("apply %s: %s is not a directory in the project", quote.Path(o.Path), quote.Path(d))
				}
				dirs[d] = true
				e.Dirs = append(e.Dirs, d)
			}
		}
		e.Paths = append(e.Paths, jp)
	}
	return nil
}

// removeForApply deletes the paths the journaled apply e deletes, then the directories it
// removes (children first); a directory the host put something in meanwhile stays.
func removeForApply(ctx context.Context, root *projectfs.Root, e *JournalEntry) error {
	for i, jp := range e.Paths {
		if jp.Kind == 'd' {
			if ctx.Err() != nil {
				return errInterrupted
			}
			if err := deletePath(root, jp); err != nil {
				return err
			}
			step(fmt.Sprintf("delete %d", i))
		}
	}
	for i := len(e.RemovedDirs) - 1; i >= 0; i-- {
		d := e.RemovedDirs[i]
		err := root.Rmdir(d.Path)
		if err != nil && d.Emptied && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOENT)) {
			continue // the host put something in it meanwhile: it stays
		}
		if err != nil {
			return fmt.Errorf("apply: remove directory %s: %w", quote.Path(d.Path), err)
		}
		step("rmdir " + d.Path)
	}
	return nil
}

// writeAndRename writes the temp files of the journaled apply e and renames them over the
// project's files, each stage made durable with one syncfs; an interruption is honoured up to
// the renames, the last moment to undo rather than finish.
func (s *Session) writeAndRename(ctx context.Context, root *projectfs.Root, b *changeset.Bases, e *JournalEntry) error {
	if err := s.writeTemps(ctx, root, b, e); err != nil {
		return err
	}
	// One syncfs makes every temp file durable before any of them replaces a project file.
	if err := statefile.SyncFS(s.Project); err != nil {
		return err
	}
	step("temps")
	if ctx.Err() != nil {
		return errInterrupted
	}
	root.Invalidate()
	if err := renameTemps(root, e); err != nil {
		return err
	}
	// And one more makes the renames (the directories) durable before the entry is marked done.
	if err := statefile.SyncFS(s.Project); err != nil {
		return err
	}
	step("renamed")
	return nil
}

// LinkPriors keeps prior files by hard link where the filesystem allows (tests turn it off to
// take the copying path).
var LinkPriors = true

// savePriors records what every path of ops holds now: existence, type, mode, a symlink's target,
// and a regular file itself, hard-linked into jdir/keep, or where that cannot be done its bytes,
// appended to one pack per worker in jdir (prior.pack, prior-1.pack, ...), each fsynced. Paths are
// read beneath root, never through a symlink.
func savePriors(ctx context.Context, root *projectfs.Root, jdir string, ops []op) ([]priorState, error) {
	out := make([]priorState, len(ops))
	paths := make([]string, len(ops))
	for i, o := range ops {
		paths[i] = o.Path
	}
	keep := -1
	if LinkPriors {
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
	packs := make([]*changeset.PackWriter, projectfs.ApplyWorkers)
	closeAll := func() {
		for _, p := range packs {
			if p != nil {
				p.File.Close()
			}
		}
	}
	err := root.InDirs(projectfs.GroupByDir(paths, nil), func(w, dir int, dirErr error, i int) error {
		if ctx.Err() != nil {
			return errInterrupted
		}
		name := paths[i][strings.LastIndexByte(paths[i], '/')+1:]
		pr, err := readPrior(dir, dirErr, name, keep, strconv.Itoa(i), func() (*changeset.PackWriter, error) {
			if packs[w] == nil {
				f, err := os.OpenFile(filepath.Join(jdir, priorPackName(w)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				if err != nil {
					return nil, fmt.Errorf("apply: create journal: %w", err)
				}
				packs[w] = &changeset.PackWriter{File: f, Buf: bufio.NewWriterSize(f, 1<<16), Name: priorPackName(w)}
			}
			return packs[w], nil
		})
		if err != nil {
			return fmt.Errorf("apply %s: save prior content: %w", quote.Path(paths[i]), err)
		}
		out[i] = pr
		return nil
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	linked := slices.ContainsFunc(out, func(pr priorState) bool { return pr.Keep != "" })
	if linked && statefile.Durable {
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
		if err := p.Seal(); err != nil {
			closeAll()
			return nil, fmt.Errorf("apply: write journal %s: %w", p.Name, err)
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
func readPrior(dir int, dirErr error, name string, keep int, keepName string, pack func() (*changeset.PackWriter, error)) (priorState, error) {
	st, exists, err := projectfs.StatAt(dir, dirErr, name)
	if err != nil || !exists {
		return priorState{}, err
	}
	fs := projectfs.StatFromUnix(&st)
	pr := priorState{Exists: true, Type: fs.Type, Mode: fs.Mode}
	switch fs.Type {
	case 'l':
		t, err := projectfs.Readlinkat(dir, name)
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
		fd, fst, err := projectfs.OpenRegularAt(dir, name)
		if err != nil {
			return priorState{}, err
		}
		defer unix.Close(fd)
		p, err := pack()
		if err != nil {
			return priorState{}, err
		}
		sum, off, err := p.AddFile(fd, fst.Size)
		if err != nil {
			return priorState{}, err
		}
		pr.Pack, pr.Off, pr.Len, pr.Hash = p.Name, off, sum.Size, sum.Hash
		if p.Name == "prior.pack" {
			pr.Pack = ""
		}
	}
	return pr, nil
}

// abort rolls back an apply that failed (or was interrupted: cause is errInterrupted) part-way,
// then reports the original error, or an *InterruptedError.
func (s *Session) abort(root *projectfs.Root, e *JournalEntry, cause error) error {
	u, err := s.RollbackEntry(root, e, false)
	if err != nil {
		return fmt.Errorf("%w; rolling it back failed too (the next shadow command retries): %v", cause, err)
	}
	if err := WriteMarker(filepath.Join(s.journalDir(), e.ID), "rolledback"); err != nil {
		return fmt.Errorf("%w (the project was restored)", cause)
	}
	if errors.Is(cause, errInterrupted) {
		return &InterruptedError{ID: e.ID, Undone: u}
	}
	return fmt.Errorf("%w (nothing was changed)", cause)
}

// writeTemps writes each planned file or symlink as a temp file next to its target, on parallel
// workers that each take one directory at a time.
func (s *Session) writeTemps(ctx context.Context, root *projectfs.Root, b *changeset.Bases, e *JournalEntry) error {
	for _, d := range e.Dirs {
		if err := root.MkdirAll(d); err != nil {
			return err
		}
	}
	upper, err := projectfs.OpenRoot(s.Upper)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	defer upper.Close()
	return e.inWrittenDirs(root, func(dir, i int, jp journalPath) error {
		if ctx.Err() != nil {
			return errInterrupted
		}
		if err := writeTemp(upper, b, dir, jp); err != nil {
			return fmt.Errorf("apply %s: write: %w", quote.Path(jp.Path), err)
		}
		step(fmt.Sprintf("temp %d", i))
		return nil
	})
}

// writeTemp writes one path's temp file (or symlink) in its directory dir: the staged file, read
// beneath the upper layer without following a symlink, or the base object of a partial
func writeTemp(upper *projectfs.Root, b *changeset.Bases, dir int, jp journalPath) error {
	if jp.Kind == 'l' {
		return unix.Symlinkat(jp.Target, dir, jp.Temp)
	}
	var src int
	var err error
	if jp.Whole {
		src, err = projectfs.Openat(upper.FD, jp.Path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err == unix.EACCES {
			// Closed to its owner by its mode: opened as projectfs.OpenRegularAt does.
			src, err = upper.OpenReadFD(jp.Path)
		}
	} else {
		src, err = unix.Open(b.ObjectPath(jp.Hash), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
// data segments, its holes left holes (projectfs.CopySparse). A non-empty hash must match the copied
// content.
func writeTempAt(dir int, name string, src int, off, n int64, mode uint32, hash string) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	var sum string
	if n >= projectfs.SparseMin {
		var s projectfs.FileSum
		s, err = projectfs.CopySparse(fd, src, off, n)
		sum = s.Hash
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

// copySmall copies the n bytes at off of src, fewer than projectfs.SparseMin, to dst and returns their
// sha256 (which is their projectfs.ContentSum).
func copySmall(dst, src int, off, n int64) (string, error) {
	h := sha256.New()
	bp := projectfs.CopyBuffers.Get().(*[]byte)
	defer projectfs.CopyBuffers.Put(bp)
	buf := *bp
	for done := int64(0); done < n; {
		k, err := projectfs.Pread(src, buf[:min(int64(len(buf)), n-done)], off+done)
		if err != nil {
			return "", err
		}
		if k == 0 {
			return "", projectfs.ErrShrank
		}
		if _, err := projectfs.FdIO(dst).Write(buf[:k]); err != nil {
			return "", err
		}
		h.Write(buf[:k])
		done += int64(k)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// renameTemps renames every temp file of an apply over its target, on parallel workers that each
// take one directory at a time.
func renameTemps(root *projectfs.Root, e *JournalEntry) error {
	return e.inWrittenDirs(root, func(dir, i int, jp journalPath) error {
		name := jp.Path[strings.LastIndexByte(jp.Path, '/')+1:]
		if err := unix.Renameat(dir, jp.Temp, dir, name); err != nil {
			return fmt.Errorf("apply %s: rename into place: %w", quote.Path(jp.Path), err)
		}
		step(fmt.Sprintf("rename %d", i))
		return nil
	})
}

// inWrittenDirs calls fn for every path the entry writes (all but deletions), with its directory
// open beneath root, on parallel workers that each take one directory at a time (see projectfs.InDirs).
func (e *JournalEntry) inWrittenDirs(root *projectfs.Root, fn func(dir, i int, jp journalPath) error) error {
	paths := make([]string, len(e.Paths))
	for i, jp := range e.Paths {
		paths[i] = jp.Path
	}
	groups := projectfs.GroupByDir(paths, func(i int) bool { return e.Paths[i].Kind != 'd' })
	return root.InDirs(groups, func(_, dir int, dirErr error, i int) error {
		jp := e.Paths[i]
		if dirErr != nil {
			return fmt.Errorf("apply %s: open its directory: %w", quote.Path(jp.Path), dirErr)
		}
		return fn(dir, i, jp)
	})
}

// deletePath deletes a path an apply deletes.
func deletePath(root *projectfs.Root, jp journalPath) error {
	dir, name, err := root.OpenParent(jp.Path, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("apply %s: open its directory: %w", quote.Path(jp.Path), err)
	}
	if err := unix.Unlinkat(dir, name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("apply %s: delete: %w", quote.Path(jp.Path), err)
	}
	return nil
}

func WriteMarker(dir, name string) error {
	if err := statefile.WriteFileAtomic(filepath.Join(dir, name), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		return fmt.Errorf("journal %s: %w", dir, err)
	}
	return nil
}

func hasMarker(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// commitApply records a done apply in the session: the applied content becomes the base of each
// path, decisions move on, the apply is listed. It is idempotent, so recovery can repeat it.
// root is the project, opened; b, when not nil, is the session's bases already loaded.
func (s *Session) commitApply(root *projectfs.Root, e *JournalEntry, b *changeset.Bases) error {
	var err error
	if b == nil {
		if b, err = s.Source().LoadBases(); err != nil {
			return err
		}
		defer b.Close()
	}
	for _, jp := range e.Paths {
		h, err := root.Lstat(jp.Path)
		if err != nil {
			return err
		}
		switch {
		case jp.Merge:
			// The pre-image stays the base the next merge is made against.
		case jp.Kind == 'd' || !h.Exists:
			b.Index.Paths[jp.Path] = changeset.BaseEntry{Kind: changeset.BaseAbsent}
		case jp.Kind == 'l':
			b.Index.Paths[jp.Path] = changeset.BaseEntry{Kind: changeset.BaseObject, Type: 'l', Mode: h.Stat.Mode, Target: jp.Target, Host: h.Stat}
		case jp.Whole:
			// The content is on the host (and in the upper layer): the hash is enough to tell the
			// staged copy is unchanged, whatever the host does with the file later.
			b.Index.Paths[jp.Path] = changeset.BaseEntry{Kind: changeset.BaseHost, Type: 'f', Mode: h.Stat.Mode, Hash: jp.Hash, Host: h.Stat}
		default:
			b.Index.Paths[jp.Path] = changeset.BaseEntry{Kind: changeset.BaseObject, Type: 'f', Mode: h.Stat.Mode, Hash: jp.Hash, Host: h.Stat}
		}
	}
	if err := b.Save(); err != nil {
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
	if err := s.SaveDecisions(d); err != nil {
		return err
	}
	if err := s.Reload(); err != nil {
		return err
	}
	if !slices.ContainsFunc(s.Meta.Applies, func(r store.ApplyRecord) bool { return r.ID == e.ID }) {
		rec := store.ApplyRecord{ID: e.ID, Time: e.Created, Files: len(e.Paths)}
		s.Meta.Applies = append(s.Meta.Applies, rec)
		if e.Closes && s.Meta.State == store.StateOpen {
			s.Meta.State = store.StateApplied
			s.Meta.Closed = time.Now().UTC()
		}
		if err := s.SaveMeta(); err != nil {
			return err
		}
	}
	return WriteMarker(filepath.Join(s.journalDir(), e.ID), "committed")
}

// Session is a session as an apply sees it: its directories, its project, its record, where its
// pre-images and change set come from, and the locks it takes.
type Session struct {
	ID      string // the session's, for messages
	Dir     string // the session's directory: its decisions and journal
	Upper   string // the staging layer
	Project string
	// meta is the session's record, which an apply's commit and a rollback update: reload reads
	// it afresh, saveMeta writes it.
	Meta     *store.Meta
	Reload   func() error
	SaveMeta func() error
	// source is what the pre-images are read from; ChangesIn computes the change set over bases
	// already loaded, without what a damaged checkpoint holds.
	Source    func() *changeset.Source
	ChangesIn func(b *changeset.Bases, host *projectfs.Root, extraProtected []string) (*changeset.ChangeSet, error)
	// StateLock takes the project's state lock; NoOpenSession says whether the project has no
	// open session (a rolled-back apply then reopens its session).
	StateLock     func(exclusive bool) (func(), error)
	NoOpenSession func() bool
	MaxDiffBytes  int64
	DiffBudget    time.Duration
}

// journalDir holds the session's apply journal, a directory an
func (s *Session) journalDir() string { return JournalDirOf(s.Dir) }
