package session

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shadow-sandbox/shadow/session/changeset"
	"github.com/shadow-sandbox/shadow/session/projectfs"
	"golang.org/x/sys/unix"
)

// A run's end copies the pre-image of every path the run staged. Most of that can be done while
// the run goes: the jail writes only to the upper layer, so a host file the run staged no longer
// changes because of the run, and its content, while it still matches the manifest, is the
// session's start. Precapture copies them in the background as the staged paths appear; the end
// of the run keeps those copies and takes only the rest.

// Precapture starts taking, while the active run goes, the pre-images of the paths it stages, into
// a pack of its own that the run's end adopts (EndRun and EndRunChanges stop it). It looks for new
// paths in the upper layer every precaptureEvery, more rarely while none appear, and reads again
// only the upper directories whose change time moved. It is an optimisation: whatever it
// could not take, or took while the host file no longer matched, the run's end takes as before.
// It only reads the project and writes an unreferenced pack file, so it needs no lock beyond the
// project's writer lock that the caller holds for the run.
func (s *Session) Precapture() {
	if s.pre != nil || s.Meta.Active == nil {
		return
	}
	p := &precapture{stop: make(chan struct{}), done: make(chan struct{}), upper: s.UpperDir(),
		got: map[string]changeset.BaseEntry{}, dirs: map[string]*upperDir{}, seen: map[string]bool{}, upperFd: -1, written: -1}
	p.layer.Store(-1)
	p.man = s.man
	s.pre = p
	// The goroutine gets copies: the session's Meta changes under it (EndRun reloads it).
	go p.run(s.Meta.Project, s.dir, s.Meta.ID)
}

// PrecaptureLayer points the running precapture at the run's own layer, where the jail writes
// while the run goes (the staging layer on disk changes only when the run ends): dir is that
// layer, open; the precapture keeps a descriptor of its own.
func (s *Session) PrecaptureLayer(dir *os.File) {
	if s.pre == nil {
		return
	}
	fd, err := unix.FcntlInt(dir.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	if old := s.pre.layer.Swap(int64(fd)); old >= 0 {
		unix.Close(int(old))
	}
}

// StartRun is BeginRun followed by Precapture: how a run that a jail is about to run begins.
func (s *Session) StartRun(argv []string) error {
	if err := s.BeginRun(argv); err != nil {
		return err
	}
	s.Precapture()
	return nil
}

// precaptureEvery is the shortest pause between two looks at the upper layer; precaptureIdle the
// longest, reached by doubling while nothing new is staged.
const (
	precaptureEvery = 20 * time.Millisecond
	precaptureIdle  = time.Second
)

// precapture is the state of one Precapture.
type precapture struct {
	stop, done chan struct{}
	upper      string
	// layer is the descriptor of the run's layer once PrecaptureLayer gave it (-1 before): the
	// precapture then looks there instead of in upper.
	layer atomic.Int64
	b     *changeset.Bases // the bases as the run's first staged path was found; its pack holds what was taken
	// dir and id are the session's directory and id, which the bases are loaded from, over
	// its manifest man when the process recorded it.
	dir, id string
	man     *changeset.Manifest
	// got holds the pre-images taken, by path; seen the staged paths looked at; dirs what was
	// read of each upper directory.
	got  map[string]changeset.BaseEntry
	seen map[string]bool
	dirs map[string]*upperDir
	err  error // why it stopped early: its pre-images are then not used
	// inLayer is set while a look goes through the run's layer; fresh counts the paths found
	// there that the staging layer (upperFd, open) does not hold, written the count last put in
	// the session's run-staged file (RunStaged).
	inLayer        bool
	upperFd        int
	fresh, written int
}

// runStagedFile is the session's file where the running run's precapture keeps its count of the
// paths the run staged beyond the staging layer: "PID COUNT", PID the precapture's process.
const runStagedFile = "run-staged"

// RunStaged is how many paths the active run has staged so far that the staging layer does not
// hold (the run's own layer is merged into it only at the run's end), as the run's precapture last
// counted them, from whichever process runs it; 0 when no run goes. The status bar adds it to the
// staging layer's count, so that it follows the run's writes as they come.
func (s *Session) RunStaged() int {
	data, err := os.ReadFile(filepath.Join(s.dir, runStagedFile))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0
	}
	pid, err1 := strconv.Atoi(f[0])
	n, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || pid <= 0 || unix.Kill(pid, 0) == unix.ESRCH {
		return 0 // a precapture that died with its process counts nothing
	}
	return n
}

// writeRunStaged puts the count of fresh paths in the session's run-staged file, whole.
func (p *precapture) writeRunStaged(dir string) {
	if p.fresh == p.written {
		return
	}
	tmp := filepath.Join(dir, runStagedFile+".tmp")
	if os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+" "+strconv.Itoa(p.fresh)+"\n"), 0o600) == nil &&
		os.Rename(tmp, filepath.Join(dir, runStagedFile)) == nil {
		p.written = p.fresh
	}
}

// inUpper reports whether the staging layer holds path, looked up beneath it without following
// a symlink (what is in it the jail made).
func (p *precapture) inUpper(path string) bool {
	if p.upperFd < 0 {
		return false
	}
	fd, err := unix.Openat2(p.upperFd, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// upperDir is an upper directory as a precapture last read it: its change time then (0 when that
// may predate a change, see racyChange), and the names of its subdirectories. The change time, not
// the modification time: a copy-up puts the parent directory's times back, which moves only its
// change time.
type upperDir struct {
	ctime   int64
	subdirs []string
}

// run looks through the upper layer until stopped, taking the pre-images of the new paths. The
// pause between two looks is at least twice the last look: a large upper layer costs no more than
// a third of a core.
func (p *precapture) run(project, dir, id string) {
	defer close(p.done)
	host, err := projectfs.OpenRoot(project)
	if err != nil {
		p.err = err
		return
	}
	defer host.Close()
	defer func() {
		if fd := p.layer.Swap(-1); fd >= 0 {
			unix.Close(int(fd))
		}
	}()
	if fd, err := unix.Open(p.upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		p.upperFd = fd
		defer unix.Close(fd)
	}
	defer os.Remove(filepath.Join(dir, runStagedFile))
	p.dir, p.id = dir, id
	pause := precaptureEvery
	src := int64(-1)
	for {
		select {
		case <-p.stop:
			return
		case <-time.After(pause):
		}
		t0 := time.Now()
		found := false
		// The upper directory is the session's; what is beneath it the jail made, so that is
		// opened by descriptor, never through a symlink.
		var fd int
		var err error
		p.inLayer = false
		if l := p.layer.Load(); l >= 0 {
			if src != l {
				src, p.dirs = l, map[string]*upperDir{} // what was read of upper is not the layer's
			}
			p.inLayer = true
			fd, err = unix.Openat(int(l), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		} else {
			fd, err = unix.Open(p.upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err == nil {
			if found, err = p.walk(host, fd, ""); err != nil {
				p.err = err
				return
			}
		}
		if p.inLayer {
			p.writeRunStaged(dir)
		}
		if found {
			pause = precaptureEvery
		} else {
			pause = min(2*pause, precaptureIdle)
		}
		pause = max(pause, 2*time.Since(t0))
	}
}

// racyChange is how recent a directory's change time may be and still be the time of a change
// made after the directory was read: the kernel takes it from a clock that ticks every few
// milliseconds. Such a directory is read again on the next look.
const racyChange = 20 * time.Millisecond

// walk looks at the upper directory rel, open as fd (which it closes), and at those beneath it,
// reading again only the directories whose change time moved, and takes the pre-image of each new
// path whose base is still the host's. It reports whether it found any.
func (p *precapture) walk(host *projectfs.Root, fd int, rel string) (bool, error) {
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	select {
	case <-p.stop:
		return false, nil
	default:
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, nil
	}
	found := false
	ctime := st.Ctim.Nano()
	d := p.dirs[rel]
	if d == nil || d.ctime != ctime {
		// The time is taken before the directory is read: an entry added meanwhile moves it.
		ents, err := f.ReadDir(-1)
		if err != nil {
			return false, nil
		}
		d = &upperDir{ctime: ctime}
		if time.Since(time.Unix(0, ctime)) < racyChange {
			d.ctime = 0
		}
		p.dirs[rel] = d
		for _, e := range ents {
			if e.IsDir() {
				d.subdirs = append(d.subdirs, e.Name())
				continue
			}
			child := projectfs.RelJoin(rel, e.Name())
			if p.seen[child] {
				continue
			}
			p.seen[child], found = true, true
			if p.inLayer && !p.inUpper(child) {
				p.fresh++
			}
			if err := p.take(host, child); err != nil {
				return found, err
			}
			if precaptureLooked != nil {
				precaptureLooked(child)
			}
		}
	}
	// A path added deeper down moves only its own directory's time.
	for _, name := range d.subdirs {
		child := projectfs.RelJoin(rel, name)
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or no longer a directory
		}
		more, err := p.walk(host, cfd, child)
		found = found || more
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

// take copies the host's pre-image of path, when its base still refers to the host. The bases
// are loaded at the first path: a run that stages nothing never reads the project's manifest.
func (p *precapture) take(host *projectfs.Root, path string) error {
	if p.b == nil {
		b, err := changeset.LoadBases(p.dir, p.id, p.man)
		if err != nil {
			return err
		}
		p.b = b
	}
	if p.b.Get(path).Kind != changeset.BaseHost {
		return nil
	}
	h, err := host.Lstat(path)
	if err != nil {
		return err
	}
	e, err := p.b.CaptureSeen(host, path, h)
	if err != nil {
		return err
	}
	if e.Kind == changeset.BaseObject {
		p.got[path] = e
	}
	return nil
}

// precaptureLooked, when set, is called when a precapture has looked at a staged path (tests wait
// for it).
var precaptureLooked func(path string)

// precaptured is what a precapture took: its pack, still open, and the pre-images in it, by path.
// Whoever gets it adopts the pack or abandons it.
type precaptured struct {
	pack *changeset.PackWriter
	got  map[string]changeset.BaseEntry
}

// abandon drops the pack; a nil precaptured has none.
func (pc *precaptured) abandon() {
	if pc != nil {
		pc.pack.Abandon()
	}
}

// stopPrecapture stops the session's precapture, if one is going, and returns what it took (nil
// when it took nothing, or failed).
func (s *Session) stopPrecapture() *precaptured {
	p := s.pre
	if p == nil {
		return nil
	}
	s.pre = nil
	close(p.stop)
	<-p.done
	if p.b == nil || p.b.Pack == nil {
		return nil
	}
	if p.err != nil || len(p.got) == 0 {
		p.b.Pack.Abandon()
		return nil
	}
	return &precaptured{pack: p.b.Pack, got: p.got}
}
