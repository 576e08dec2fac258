package changeset

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// The walk of a session's upper layer: every staged entry, with what the overlay makes of it
// (a whiteout, an opaque directory), read in parallel without following a symlink.

// RawEntry is one path the upper layer touches: a staged file, symlink or special file, or a
// deletion (a whiteout, or a host file hidden by an opaque or replaced directory).
type RawEntry struct {
	Path     string
	Kind     byte // 'f' file, 'l' symlink, 'o' special, 'w' deleted, 'u' could not be looked at
	stat     projectfs.FileStat
	target   string
	shadowed bool
	// hash, size, binary and holes describe a staged file's content, read when it was scanned:
	// its projectfs.ContentSum, length, whether its first 8000 bytes hold a NUL, and its bytes in holes.
	// readErr says why it could not be read: a file (or, kind 'u', an entry of a directory)
	// that its mode closes to shadow, which the owner's own files never are (see
	// projectfs.OpenRegularAt and projectfs.ReadableDir). The change lists it, unapplied.
	readErr error
	hash    string
	size    int64
	binary  bool
	holes   int64
}

// ScanUpper lists every path the upper layer changes. It reads the upper layer only, plus the host
// directories an opaque directory or whiteout hides: its cost grows with the change. The
// directories are read on up to projectfs.ApplyWorkers goroutines, a large one in parts of ScanChunk entries.
func ScanUpper(upper string, host *projectfs.Root, opts ScanOptions) ([]RawEntry, error) {
	if err := projectfs.ReadableDir(upper); err != nil {
		return nil, fmt.Errorf("scan staged changes: %w", err)
	}
	sc := &upperScan{upper: upper, opts: opts, seen: map[string]bool{}, hidden: map[string]bool{},
		tasks: []scanTask{{}}, pending: 1}
	sc.more = sync.NewCond(&sc.mu)
	// Each goroutine holds a root of its own, which caches the host directories it looks into;
	// the caller's root is one of them. Each opens the upper directories beneath a root of the
	// upper layer of its own, never by a path joined to it (a staged path may be longer than
	// PATH_MAX).
	up, err := projectfs.OpenRoot(upper)
	if err != nil {
		return nil, fmt.Errorf("scan staged changes: %w", err)
	}
	defer up.Close()
	roots, ups := []*projectfs.Root{host}, []*projectfs.Root{up}
	defer func() {
		for i := 1; i < len(roots); i++ {
			roots[i].Close()
		}
		for i := 1; i < len(ups); i++ {
			ups[i].Close()
		}
	}()
	for range projectfs.ApplyWorkers - 1 {
		r, err := host.Clone()
		if err != nil {
			return nil, err
		}
		roots = append(roots, r)
		u, err := up.Clone()
		if err != nil {
			return nil, err
		}
		ups = append(ups, u)
	}
	var wg sync.WaitGroup
	for i, r := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc.work(r, ups[i])
		}()
	}
	wg.Wait()
	if sc.err != nil {
		return nil, sc.err
	}
	out := sc.out
	for p := range sc.hidden {
		if !sc.seen[p] {
			out = append(out, RawEntry{Path: p, Kind: 'w', shadowed: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ScanOptions says what else ScanUpper does with the entries it finds.
type ScanOptions struct {
	// Contents reads each staged file's content (its hash, size and binary test, in the RawEntry)
	// as the scan comes to it, what a change set needs.
	Contents bool
	// visit, when set, is called on the scan's goroutines for every staged file, symlink or special
	// file with what the project holds at its path, just looked up through host (a root of the
	// goroutine's own): the end of a run takes the pre-images there.
	Visit func(host *projectfs.Root, path string, h projectfs.HostEntry) error
}

// ScanChunk is how many entries of one upper directory a goroutine of ScanUpper describes at a time.
const ScanChunk = 128

// upperScan is the state of one ScanUpper: what it found, and the directories (or parts of one)
// still to describe, which its goroutines take in turn.
type upperScan struct {
	upper string
	opts  ScanOptions

	mu      sync.Mutex
	more    *sync.Cond // signalled when a task is added, the last one done, or the scan failed
	tasks   []scanTask // taken last first: a depth-first walk keeps the list short
	pending int        // tasks listed or being done
	out     []RawEntry
	seen    map[string]bool // paths the upper layer holds
	hidden  map[string]bool // host paths an opaque directory, a whiteout or a file hides
	err     error
}

// scanTask is an upper directory to describe: all its entries (ents nil), or those of ents.
// shadowed says that a directory above replaces the host's; closed that its mode denies its owner
// reading or entering it.
type scanTask struct {
	rel      string
	shadowed bool
	ents     []fs.DirEntry
	closed   bool
}

// work does the scan's tasks with host and up (a root of the upper layer) until there are none
// left, or one failed.
func (sc *upperScan) work(host, up *projectfs.Root) {
	for {
		sc.mu.Lock()
		for len(sc.tasks) == 0 && sc.pending > 0 && sc.err == nil {
			sc.more.Wait()
		}
		if len(sc.tasks) == 0 || sc.err != nil {
			sc.mu.Unlock()
			return
		}
		t := sc.tasks[len(sc.tasks)-1]
		sc.tasks = sc.tasks[:len(sc.tasks)-1]
		sc.mu.Unlock()

		p, more, err := sc.dir(host, up, t)

		sc.mu.Lock()
		if err != nil && sc.err == nil {
			sc.err = err
		}
		sc.out = append(sc.out, p.out...)
		for _, r := range p.out {
			sc.seen[r.Path] = true
		}
		for h := range p.hidden {
			sc.hidden[h] = true
		}
		sc.tasks = append(sc.tasks, more...)
		sc.pending += len(more) - 1
		if len(more) > 0 || sc.pending == 0 || sc.err != nil {
			sc.more.Broadcast()
		}
		sc.mu.Unlock()
	}
}

// dir does the task t: it describes the entries of an upper directory, and returns what it found
// and the tasks that follow (the subdirectories, and the parts of a large directory beyond the
// first ScanChunk entries).
func (sc *upperScan) dir(host, up *projectfs.Root, t scanTask) (*scanPart, []scanTask, error) {
	p := &scanPart{sc: sc, host: host, rel: t.rel, shadowed: t.shadowed, hidden: map[string]bool{}}
	if t.closed {
		// Its entries need it entered, which opening it would not tell. What stays closed is
		// told below, by the open or by each entry.
		_ = up.ReadableDir(t.rel)
	}
	d, err := up.OpenDir(t.rel)
	if errors.Is(err, fs.ErrPermission) && t.rel != "" && up.ReadableDir(t.rel) == nil {
		d, err = up.OpenDir(t.rel) // closed since it was looked at
	}
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist) && t.rel != "":
			return p, nil, nil // removed while a run is going
		case errors.Is(err, fs.ErrPermission) && t.rel != "":
			p.out = append(p.out, RawEntry{Path: t.rel, Kind: 'u', shadowed: t.shadowed,
				readErr: fmt.Errorf("cannot read the staged directory: %w", unix.EACCES)})
			return p, nil, nil
		}
		return p, nil, fmt.Errorf("scan staged changes: %s: %w", quote.Path(t.rel), err)
	}
	defer d.Close()
	p.dfd = int(d.Fd())
	var more []scanTask
	ents := t.ents
	if ents == nil {
		if ents, err = d.ReadDir(-1); err != nil {
			return p, nil, fmt.Errorf("scan staged changes: %s: %w", quote.Path(t.rel), err)
		}
		for len(ents) > ScanChunk {
			more = append(more, scanTask{rel: t.rel, shadowed: t.shadowed, ents: ents[len(ents)-ScanChunk:]})
			ents = ents[:len(ents)-ScanChunk]
		}
	}
	for _, e := range ents {
		if err := p.entry(e.Name(), sc.opts.Contents && e.Type().IsRegular()); err != nil {
			return p, nil, err
		}
	}
	for _, sub := range p.subdirs {
		more = append(more, scanTask{rel: sub.rel, shadowed: sub.shadowed, closed: sub.closed})
	}
	return p, more, nil
}

// scanPart is what one goroutine of ScanUpper finds in some entries of one upper directory.
type scanPart struct {
	sc       *upperScan
	host     *projectfs.Root
	dfd      int // the upper directory
	rel      string
	shadowed bool

	out     []RawEntry
	hidden  map[string]bool
	subdirs []subdir
}

// subdir is a directory of the upper layer still to be read; closed says that its mode denies
// its owner reading or entering it.
type subdir struct {
	rel      string
	shadowed bool
	closed   bool
}

// entry describes the entry name of the directory; open says to open it right away, a regular
// file as the directory listing says. Entries are described relative to the open directory, not
// by looking up their whole path again.
func (p *scanPart) entry(name string, open bool) error {
	child := projectfs.RelJoin(p.rel, name)
	st, fd, err := statEntry(p.dfd, name, open)
	if errors.Is(err, unix.EACCES) {
		// In a directory shadow cannot enter (of another owner): listed as unread.
		p.out = append(p.out, RawEntry{Path: child, Kind: 'u', shadowed: p.shadowed,
			readErr: fmt.Errorf("cannot read the staged entry: %w", err)})
		return nil
	}
	if err != nil {
		return nil // gone since the directory was read: not a change
	}
	if fd >= 0 {
		defer unix.Close(fd)
	}
	kind := layers.KindAt(p.dfd, name, &st)
	if kind == layers.Dir || kind == layers.OpaqueDir {
		h, err := p.host.Lstat(child)
		if err != nil {
			return err
		}
		sub := p.shadowed
		if kind == layers.OpaqueDir || (h.Exists && h.Stat.Type != 'd') {
			if err := p.hideHost(child); err != nil {
				return err
			}
			sub = true
		}
		p.subdirs = append(p.subdirs, subdir{child, sub, st.Mode&0o500 != 0o500})
		return nil
	}
	if kind == layers.Whiteout {
		return p.hideHost(child)
	}
	r := RawEntry{Path: child, stat: projectfs.StatFromUnix(&st), shadowed: p.shadowed}
	switch r.stat.Type {
	case 'f':
		r.Kind = 'f'
		if !p.sc.opts.Contents {
			break
		}
		if fd < 0 {
			// Not open yet (not regular when listed, or not openable, by its mode say): opened
			// now, or the error says why not.
			if fd, _, err = projectfs.OpenRegularAt(p.dfd, name); err != nil {
				r.readErr = fmt.Errorf("cannot read the staged file: %w", err)
				break
			}
			defer unix.Close(fd)
		}
		sum, err := projectfs.SumRegular(fd, st.Size)
		if err != nil {
			r.readErr = fmt.Errorf("cannot read the staged file: %w", err)
			break
		}
		r.hash, r.size, r.binary, r.holes = sum.Hash, sum.Size, sum.Binary, sum.Holes
	case 'l':
		r.Kind = 'l'
		if r.target, err = projectfs.Readlinkat(p.dfd, name); err != nil {
			return nil
		}
	default:
		r.Kind = 'o'
	}
	h, err := p.host.Lstat(child)
	// A file replacing a host directory hides everything in it.
	if err == nil && h.Exists && h.Stat.Type == 'd' {
		if err := p.hideHost(child); err != nil {
			return err
		}
	}
	if p.sc.opts.Visit != nil {
		if err != nil {
			return err
		}
		if err := p.sc.opts.Visit(p.host, child, h); err != nil {
			return err
		}
	}
	p.out = append(p.out, r)
	return nil
}

// statEntry describes the entry name of the directory dfd without following a symlink. With open
// set (for what the directory listing has as a regular file) it is opened, never blocking, never
// through a symlink, and described by its descriptor, returned open for its content to be read:
// one system call fewer than a stat then an open. Otherwise, or when what was opened is not a
// regular file (put there since the listing; closed unread), it is described by name, and fd is -1.
func statEntry(dfd int, name string, open bool) (st unix.Stat_t, fd int, err error) {
	if open {
		if fd, st, err := projectfs.OpenRegularAt(dfd, name); err == nil {
			return st, fd, nil
		}
	}
	return st, -1, unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
}

// hideHost records as hidden the host file at rel, or every file beneath the host directory at rel.
func (p *scanPart) hideHost(rel string) error {
	h, err := p.host.Lstat(rel)
	if err != nil || !h.Exists {
		return err
	}
	if h.Stat.Type != 'd' {
		p.hidden[rel] = true
		return nil
	}
	fd, err := projectfs.Openat(p.host.FD, rel, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		return nil // gone or replaced since it was looked at: nothing there to hide
	}
	defer unix.Close(fd)
	// What cannot be read below it hides nothing the change set could name.
	_ = projectfs.WalkAt(fd, rel, func(f string, _ int, _ string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			p.hidden[f] = true
		}
		return nil
	})
	return nil
}
