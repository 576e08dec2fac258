package apply

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"github.com/shadow-sandbox/shadow/session/store"
)

// The journal of a session holds one directory per apply: keep/ (hard links to the files each
// path held) or, where no link can be made, prior.pack and prior-N.pack (their bytes), entry.json
// (the plan and each path's prior mode and existence), then the markers "done" (the
// project is written), "committed" (the session's records follow), "rollback" (a rollback began)
// and "rolledback" (it finished, or the apply was undone after a crash).

func ReadEntry(jdir string) (*JournalEntry, error) {
	data, err := os.ReadFile(filepath.Join(jdir, "entry.json"))
	if err != nil {
		return nil, err
	}
	var e JournalEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("corrupt journal entry %s: %w", jdir, err)
	}
	return &e, nil
}

// matchesPrior reports whether the host path holds exactly what it held before the
func matchesPrior(root *projectfs.Root, p string, pr priorState) (bool, error) {
	h, err := root.Lstat(p)
	if err != nil {
		return false, err
	}
	if !h.Exists || !pr.Exists {
		return h.Exists == pr.Exists, nil
	}
	if h.Stat.Type != pr.Type || (pr.Type != 'l' && h.Stat.Mode != pr.Mode) {
		return false, nil
	}
	if pr.Type == 'l' {
		return h.Target == pr.Target, nil
	}
	if pr.Keep != "" {
		return h.Dev == pr.Dev && h.Stat.Ino == pr.Ino, nil
	}
	return projectfs.FileHash(root, p) == pr.Hash, nil
}

// MatchesApplied reports whether the host path holds exactly what the apply wrote.
func MatchesApplied(root *projectfs.Root, jp journalPath) (bool, error) {
	h, err := root.Lstat(jp.Path)
	if err != nil {
		return false, err
	}
	switch jp.Kind {
	case 'd':
		// A deleted file may have become a directory of the same
		return !h.Exists || h.Stat.Type == 'd', nil
	case 'l':
		return h.Exists && h.Stat.Type == 'l' && h.Target == jp.Target, nil
	}
	if !h.Exists || h.Stat.Type != 'f' || h.Stat.Mode&0o7777 != jp.Mode {
		return false, nil
	}
	return projectfs.FileHash(root, jp.Path) == jp.Hash, nil
}

// RollbackEntry puts every path of an apply back as it was (skipping those that already are),
// removes leftover temp files and the directories the apply created, and syncs; it counts what it
// changed. With check set it first refuses, naming them, when paths no longer hold what the apply
// wrote.
func (s *Session) RollbackEntry(root *projectfs.Root, e *JournalEntry, check bool) (Undone, error) {
	jdir := filepath.Join(s.journalDir(), e.ID)
	if check {
		var changed []string
		for _, jp := range e.Paths {
			ok, err := MatchesApplied(root, jp)
			if err != nil {
				return Undone{}, err
			}
			if !ok {
				changed = append(changed, jp.Path)
			}
		}
		if len(changed) > 0 {
			return Undone{}, fmt.Errorf("roll back apply %s: the project changed these paths after the apply, not touching anything: %s", e.ID, strings.Join(QuoteAll(changed), ", "))
		}
	}
	packs := &priorPacks{dir: jdir, open: map[string]*os.File{}}
	defer packs.close()
	var u Undone
	var errs []error
	// First clear what the apply put where nothing (or a directory) was, then take away the
	// directories it made, make again those it removed, and finally put back files and links.
	for _, jp := range e.Paths {
		n, temps, err := clearPath(root, jp)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", quote.Path(jp.Path), err))
		}
		u.Restored += n
		u.Removed += temps
	}
	for i := len(e.Dirs) - 1; i >= 0; i-- {
		root.Rmdir(e.Dirs[i]) // only succeeds when empty, as it should
	}
	for _, d := range e.RemovedDirs {
		if err := root.Mkdir(d.Path, d.Mode); err != nil {
			errs = append(errs, fmt.Errorf("make directory %s again: %w", quote.Path(d.Path), err))
		}
	}
	for i := len(e.Paths) - 1; i >= 0; i-- {
		jp := e.Paths[i]
		if !jp.Prior.Exists || jp.Prior.Type == 'd' {
			continue
		}
		n, err := restorePath(root, jp, packs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", quote.Path(jp.Path), err))
		}
		u.Restored += n
	}
	if err := statefile.SyncFS(s.Project); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return u, fmt.Errorf("roll back apply %s: %w", e.ID, errors.Join(errs...))
	}
	return u, nil
}

// clearPath removes a path's leftover temp file and, when the path held nothing or a directory
// before the apply, whatever non-directory the apply put there. It returns 1 when it removed that
// (restored), and 1 when it removed a temp file (temps).
func clearPath(root *projectfs.Root, jp journalPath) (restored, temps int, err error) {
	dir, name, err := root.OpenParent(jp.Path, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if jp.Kind != 'd' && unix.Unlinkat(dir, jp.Temp, 0) == nil {
		temps = 1
	}
	if jp.Prior.Exists && jp.Prior.Type != 'd' {
		return 0, temps, nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return 0, temps, nil
	}
	if err := unix.Unlinkat(dir, name, 0); err != nil && err != unix.ENOENT {
		return 0, temps, err
	}
	return 1, temps, nil
}

// priorPacks are the prior packs and kept files of one journal entry, opened when first read.
type priorPacks struct {
	dir  string
	open map[string]*os.File
	keep int // descriptor of keep/, 0 until opened
}

// keepDir returns a descriptor of the entry's keep/ directory.
func (p *priorPacks) keepDir() (int, error) {
	if p.keep > 0 {
		return p.keep, nil
	}
	fd, err := unix.Open(filepath.Join(p.dir, "keep"), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("journal %s: %w", p.dir, err)
	}
	p.keep = fd
	return fd, nil
}

// get returns the pack a prior state's bytes are in.
func (p *priorPacks) get(pr priorState) (*os.File, error) {
	name := pr.Pack
	if name == "" {
		name = "prior.pack"
	}
	if !strings.HasPrefix(name, "prior") || !strings.HasSuffix(name, ".pack") || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("corrupt journal entry %s: bad pack name %q", p.dir, name)
	}
	if f, ok := p.open[name]; ok {
		return f, nil
	}
	f, err := os.Open(filepath.Join(p.dir, name))
	if err != nil {
		return nil, err
	}
	p.open[name] = f
	return f, nil
}

func (p *priorPacks) close() {
	for _, f := range p.open {
		f.Close()
	}
	if p.keep > 0 {
		unix.Close(p.keep)
	}
}

// restorePath puts one path back to its prior state; it returns 1 when it changed the project.
func restorePath(root *projectfs.Root, jp journalPath, packs *priorPacks) (int, error) {
	dir, name, err := root.OpenParent(jp.Path, false)
	if errors.Is(err, unix.ENOENT) {
		if !jp.Prior.Exists {
			return 0, nil
		}
		if err := root.MkdirAll(projectfs.FilepathDir(jp.Path)); err != nil {
			return 0, err
		}
		dir, name, err = root.OpenParent(jp.Path, false)
	}
	if err != nil {
		return 0, err
	}
	ok, err := matchesPrior(root, jp.Path, jp.Prior)
	if err != nil {
		return 0, err
	}
	if ok {
		return 0, nil
	}
	tmp := jp.Temp + "-restore"
	unix.Unlinkat(dir, tmp, 0)
	switch {
	case jp.Prior.Type == 'l':
		if err := unix.Symlinkat(jp.Prior.Target, dir, tmp); err != nil {
			return 0, err
		}
	case jp.Prior.Keep != "":
		if strings.Trim(jp.Prior.Keep, "0123456789") != "" {
			return 0, fmt.Errorf("corrupt journal entry %s: bad kept file name %q", packs.dir, jp.Prior.Keep)
		}
		keep, err := packs.keepDir()
		if err != nil {
			return 0, err
		}
		if err := unix.Linkat(keep, jp.Prior.Keep, dir, tmp, 0); err != nil {
			return 0, fmt.Errorf("put back the kept file: %w", err)
		}
	default:
		pack, err := packs.get(jp.Prior)
		if err != nil {
			return 0, err
		}
		if err := writeTempAt(dir, tmp, int(pack.Fd()), jp.Prior.Off, jp.Prior.Len, jp.Prior.Mode, jp.Prior.Hash); err != nil {
			return 0, err
		}
	}
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return 0, err
	}
	return 1, nil
}

func QuoteAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = quote.Path(p)
	}
	return out
}

// CommitRollback records a finished rollback in the session: bases and decisions as before the
// apply (with the restored files' new stats), the apply marked rolled back, the session open again.
func (s *Session) CommitRollback(root *projectfs.Root, e *JournalEntry) error {
	b, err := s.Source().LoadBases()
	if err != nil {
		return err
	}
	defer b.Close()
	for _, jp := range e.Paths {
		if jp.Merge {
			continue // its base was left as it was: the pre-image, which the host's file is not
		}
		h, err := root.Lstat(jp.Path)
		if err != nil {
			return err
		}
		switch {
		case !h.Exists:
			b.Index.Paths[jp.Path] = changeset.BaseEntry{Kind: changeset.BaseAbsent}
		case jp.PriorBase != nil && jp.PriorBase.Kind == changeset.BaseObject:
			pb := *jp.PriorBase
			pb.Host = h.Stat
			b.Index.Paths[jp.Path] = pb
		default:
			b.Index.Paths[jp.Path] = changeset.BaseEntry{Kind: changeset.BaseHost, Type: h.Stat.Type, Mode: h.Stat.Mode, Target: h.Target, Host: h.Stat}
		}
	}
	if err := b.Save(); err != nil {
		return err
	}
	d, err := s.LoadDecisions()
	if err != nil {
		return err
	}
	for _, jp := range e.Paths {
		if fd := e.PriorDecisions[jp.Path]; fd != nil {
			d.Files[jp.Path] = *fd
		} else {
			delete(d.Files, jp.Path)
		}
	}
	if err := s.SaveDecisions(d); err != nil {
		return err
	}
	if err := s.Reload(); err != nil {
		return err
	}
	for i := range s.Meta.Applies {
		if s.Meta.Applies[i].ID == e.ID {
			s.Meta.Applies[i].RolledBack = true
		}
	}
	if s.Meta.State == store.StateApplied {
		if s.NoOpenSession() {
			s.Meta.State = store.StateOpen
			s.Meta.Closed = time.Time{}
		}
	}
	if err := s.SaveMeta(); err != nil {
		return err
	}
	return WriteMarker(filepath.Join(s.journalDir(), e.ID), "rolledback")
}

// Settled reports whether the journal entry jdir needs no recovery: rolled back, or committed
// and no rollback of it started.
func Settled(jdir string) bool {
	return hasMarker(jdir, "rolledback") || (hasMarker(jdir, "committed") && !hasMarker(jdir, "rollback"))
}

func (s *Session) RecoverEntry(jdir string) (string, error) {
	if Settled(jdir) {
		return "", nil
	}
	e, err := ReadEntry(jdir)
	if errors.Is(err, fs.ErrNotExist) {
		// Killed while writing the journal: the project was not touched yet.
		if err := os.RemoveAll(jdir); err != nil {
			return "", fmt.Errorf("recover: remove unfinished journal %s: %w", jdir, err)
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	unlock, err := s.StateLock(true)
	if err != nil {
		return "", err
	}
	defer unlock()
	root, err := projectfs.OpenRoot(s.Project)
	if err != nil {
		return "", err
	}
	defer root.Close()
	switch {
	case hasMarker(jdir, "rollback"):
		if _, err := s.RollbackEntry(root, e, false); err != nil {
			return "", fmt.Errorf("recover: finish the rollback of apply %s: %w", e.ID, err)
		}
		if err := s.CommitRollback(root, e); err != nil {
			return "", err
		}
		return fmt.Sprintf("finished the interrupted rollback of apply %s (session %s)", e.ID, s.ID), nil
	case hasMarker(jdir, "done"):
		if err := s.commitApply(root, e, nil); err != nil {
			return "", fmt.Errorf("recover: finish recording apply %s: %w", e.ID, err)
		}
		return fmt.Sprintf("completed the interrupted apply %s (session %s): %s written", e.ID, s.ID, english.Count(len(e.Paths), "path")), nil
	}
	u, err := s.RollbackEntry(root, e, false)
	if err != nil {
		return "", fmt.Errorf("recover: roll back the interrupted apply %s: %w", e.ID, err)
	}
	if err := WriteMarker(jdir, "rolledback"); err != nil {
		return "", err
	}
	return fmt.Sprintf("rolled back the interrupted apply %s (session %s): %s; the project is as it was before it", e.ID, s.ID, u), nil
}

func JournalDirOf(dir string) string { return filepath.Join(dir, "journal") }
