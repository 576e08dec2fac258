package changeset

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/shadow-sandbox/shadow/session/projectfs"
	"github.com/shadow-sandbox/shadow/session/statefile"
	"golang.org/x/sys/unix"
)

const ManifestMagic = "shadow-manifest 1\n"

// Manifest is a project's file list at session start, sorted by path.
type Manifest struct {
	Paths []string
	Stats []projectfs.FileStat
}

func (m *Manifest) Lookup(path string) (projectfs.FileStat, bool) {
	i := sort.SearchStrings(m.Paths, path)
	if i < len(m.Paths) && m.Paths[i] == path {
		return m.Stats[i], true
	}
	return projectfs.FileStat{}, false
}

// hasDir reports whether the manifest holds an entry below dir: it lists no directories, so an
// empty one is not seen.
func (m *Manifest) hasDir(dir string) bool {
	i := sort.SearchStrings(m.Paths, dir+"/")
	return i < len(m.Paths) && strings.HasPrefix(m.Paths[i], dir+"/")
}

// WriteManifest records every non-directory entry of project (symlinks not followed) into out,
// compactly: varint-encoded records sorted by path. skip is a directory never descended (the
// store, should it live inside the project).
func WriteManifest(project, out, skip string) error {
	_, err := RecordManifest(project, out, skip)
	return err
}

// RecordManifest is WriteManifest, returning the manifest written: the process that creates a
// session keeps it rather than read it back.
func RecordManifest(project, out, skip string) (*Manifest, error) {
	m, err := ListProject(project, skip)
	if err != nil {
		return nil, fmt.Errorf("record manifest of %s: %w", project, err)
	}
	f, err := os.Create(out)
	if err != nil {
		return nil, fmt.Errorf("record manifest: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<16)
	w.WriteString(ManifestMagic)
	var buf [binary.MaxVarintLen64]byte
	uv := func(v uint64) { w.Write(buf[:binary.PutUvarint(buf[:], v)]) }
	sv := func(v int64) { w.Write(buf[:binary.PutVarint(buf[:], v)]) }
	for i := range m.Paths {
		st := m.Stats[i]
		uv(uint64(len(m.Paths[i])))
		w.WriteString(m.Paths[i])
		w.WriteByte(st.Type)
		uv(uint64(st.Mode))
		sv(st.Size)
		sv(st.Mtime)
		uv(st.Ino)
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("record manifest %s: %w", out, err)
	}
	if err := statefile.Fsync(f); err != nil {
		return nil, fmt.Errorf("record manifest %s: fsync: %w", out, err)
	}
	return m, nil
}

// ListProject lists every non-directory entry beneath project (symlinks not followed) with its
// stat, sorted by path, on projectfs.ApplyWorkers goroutines that each take a directory at a time, list it and stat its
// entries relative to its descriptor. skip is a directory never descended. A subtree that cannot
// be read is left out (its changes are then conflicts); the project itself must be readable.
func ListProject(project, skip string) (*Manifest, error) {
	root, err := unix.Open(project, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: project, Err: err}
	}
	defer unix.Close(root)
	var (
		mu    sync.Mutex
		more  = sync.NewCond(&mu)
		queue = []string{""} // directories to list, relative to project
		busy  int            // workers listing one
		wg    sync.WaitGroup
	)
	parts := make([]Manifest, projectfs.ApplyWorkers)
	for w := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for {
				mu.Lock()
				for len(queue) == 0 && busy > 0 {
					more.Wait()
				}
				if len(queue) == 0 {
					mu.Unlock()
					return // nothing left, and nobody listing what could add more
				}
				rel := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				busy++
				mu.Unlock()
				subdirs := listDir(root, project, rel, skip, &parts[w], buf)
				mu.Lock()
				queue = append(queue, subdirs...)
				busy--
				more.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Directories are listed in any order, on parallel workers: the entries are sorted by path.
	type entry struct {
		path string
		st   projectfs.FileStat
	}
	n := 0
	for _, p := range parts {
		n += len(p.Paths)
	}
	all := make([]entry, 0, n)
	for _, p := range parts {
		for i := range p.Paths {
			all = append(all, entry{p.Paths[i], p.Stats[i]})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	m := &Manifest{Paths: make([]string, len(all)), Stats: make([]projectfs.FileStat, len(all))}
	for i, e := range all {
		m.Paths[i], m.Stats[i] = e.path, e.st
	}
	return m, nil
}

// listDir adds the non-directory entries of the project directory rel to m, and returns its
// subdirectories but skip. buf is the worker's buffer for the directory's entries, which are read
// and stated straight from it: a project's 100,000 files cost their fstatat and their path, no
// other allocation.
func listDir(root int, project, rel, skip string, m *Manifest, buf []byte) []string {
	name := rel
	if name == "" {
		name = "."
	}
	// Beneath the root's descriptor, in parts for a path past PATH_MAX (openat): a deep subtree
	// is in the manifest like any other.
	fd, err := projectfs.Openat(root, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var subdirs []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return subdirs // what could be read of a directory failing midway
		}
		// Each record is a linux_dirent64: inode (8 bytes), offset (8), length (2), type (1),
		// then the name, ended by a NUL.
		for b := buf[:n]; len(b) > 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen <= 19 || reclen > len(b) {
				return subdirs
			}
			typ, nul := b[18], b[19:reclen]
			b = b[reclen:]
			end := bytes.IndexByte(nul, 0)
			if end <= 0 {
				continue
			}
			ename := nul[:end]
			if string(ename) == "." || string(ename) == ".." {
				continue
			}
			var st unix.Stat_t
			if typ != unix.DT_DIR && fstatatName(fd, nul, &st) != nil {
				continue // gone meanwhile
			}
			child := projectfs.RelJoin(rel, string(ename))
			if typ == unix.DT_DIR || st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if filepath.Join(project, child) != skip {
					subdirs = append(subdirs, child)
				}
				continue
			}
			m.Paths = append(m.Paths, child)
			m.Stats = append(m.Stats, projectfs.StatFromUnix(&st))
		}
	}
}

// fstatatName is fstatat(2) of the entry of dir whose NUL-ended name is nul, not following a
// symlink: the name is passed as it lies in the entries read, not copied to be ended again.
func fstatatName(dir int, nul []byte, st *unix.Stat_t) error {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dir), uintptr(unsafe.Pointer(&nul[0])),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

var errCorruptManifest = errors.New("corrupt manifest")

// ReadManifest reads the manifest at path. Its paths are cut from one copy of the file, its
// varints decoded in place, and its records counted first so that each slice is made once: a
// 100,000-file project's manifest costs a few allocations, not one per path (every command that
// reads the bases reads it).
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !bytes.HasPrefix(data, []byte(ManifestMagic)) {
		return nil, fmt.Errorf("read manifest %s: %w", path, errCorruptManifest)
	}
	text := string(data)
	var i int
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(data[i:])
		i += max(n, 0)
		return v, n > 0
	}
	sv := func() (int64, bool) {
		v, n := binary.Varint(data[i:])
		i += max(n, 0)
		return v, n > 0
	}
	// record decodes the record at i and moves past it.
	record := func() (p string, st projectfs.FileStat, ok bool) {
		n, ok := uv()
		if !ok || n >= uint64(len(data)-i) {
			return "", st, false
		}
		p = text[i : i+int(n)]
		i += int(n)
		st.Type = data[i]
		i++
		mode, ok1 := uv()
		size, ok2 := sv()
		mt, ok3 := sv()
		ino, ok4 := uv()
		st.Mode, st.Size, st.Mtime, st.Ino = uint32(mode), size, mt, ino
		return p, st, ok1 && ok2 && ok3 && ok4
	}
	count := 0
	for i = len(ManifestMagic); i < len(data); count++ {
		if _, _, ok := record(); !ok {
			return nil, fmt.Errorf("read manifest %s: %w", path, errCorruptManifest)
		}
	}
	m := &Manifest{Paths: make([]string, 0, count), Stats: make([]projectfs.FileStat, 0, count)}
	for i = len(ManifestMagic); i < len(data); {
		p, st, _ := record()
		m.Paths = append(m.Paths, p)
		m.Stats = append(m.Stats, st)
	}
	return m, nil
}
