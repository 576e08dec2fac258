package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// projectDirs lists every directory of the project down to projectDirDepth on every plan: on a
// project of 100,000 files, a thousand directories and a third of a `shadow run -- true`. What
// it takes of a directory is the names of its entries and their types alone, which change with
// the directory's change time (an entry added, removed or renamed, or a permission changed),
// never with a file's content. So what it found in each directory (its subdirectories and its
// credential entries) is kept in the directory of the mask cache, keyed by the directory's
// identity (device, inode) and its modification and change times; a directory whose stamp
// differs is read again, and so is one whose times lie within scrubRacyWindow of its reading,
// since a second change in the same tick of the file times would not show in them. What a
// stale entry would lose is a nested repository's config or a credential file left unscrubbed,
// so the file has the scrub cache's trust rules: the invoker's, writable by no one else, and
// read as empty when it is anything but this version's. Each project has a file of its own,
// so that a run decodes the directories of its own project alone, not of every project listed
// before (one file for all was 215 KB after a test suite, most of a run's decoding).

// projectDirsCacheFile is the name of project's cache file in Policy.MaskCache.
func projectDirsCacheFile(project string) string {
	sum := sha256.Sum256([]byte(project))
	return projectDirsCachePrefix + hex.EncodeToString(sum[:8]) + ".json"
}

// projectDirsCachePrefix begins the name of every project's file; oldProjectDirsCache is the
// one file of every project of version 1, removed when a project's file is written.
const (
	projectDirsCachePrefix = "project-dirs-"
	oldProjectDirsCache    = "project-dirs.json"
)

// maxProjectDirsCaches bounds the projects kept: past it, the files written longest ago go.
const maxProjectDirsCaches = 256

// projectDirsCacheVersion changes when the file's meaning, or what projectDirs takes of a
// directory, does.
const projectDirsCacheVersion = 2

// maxListedDirs bounds a project's cache: past it, only the directories of the last plan are
// kept.
const maxListedDirs = 8192

// listedDir is what projectDirs took of one version of a directory: the names of its
// subdirectories it goes into and of its credential entries.
type listedDir struct {
	Dir     fileStamp `json:"dir"`
	Subdirs []string  `json:"subdirs,omitempty"`
	Creds   []string  `json:"creds,omitempty"`
}

// dirsCache is the cache of one plan: loaded at its start, saved at its end.
type dirsCache struct {
	dir   string
	file  string        // the project's file in dir
	racy  time.Duration // scrubRacyWindow
	dirs  map[string]listedDir
	used  map[string]bool
	dirty bool
	reads int // of directories the cache did not hold
}

// projectDirsCache is a cache file's content.
type projectDirsCache struct {
	Version int                  `json:"version"`
	Dirs    map[string]listedDir `json:"dirs"`
}

// loadDirsCache reads project's cache in dir; nil (no caching) when dir is empty. A missing,
// corrupt or foreign file reads as empty.
func loadDirsCache(dir, project string) *dirsCache {
	if dir == "" {
		return nil
	}
	c := &dirsCache{dir: dir, file: projectDirsCacheFile(project), racy: scrubRacyWindow,
		dirs: map[string]listedDir{}, used: map[string]bool{}}
	var cf projectDirsCache
	if !readOwnJSON(dir, c.file, &cf) || cf.Version != projectDirsCacheVersion || cf.Dirs == nil {
		return c
	}
	c.dirs = cf.Dirs
	return c
}

// dirStampOf is the stamp of the directory d, not followed when a symlink but for the project
// itself (top), as projectDirs lists it; ok is false when it cannot be had or is no directory.
func dirStampOf(d string, top bool) (fileStamp, bool) {
	var st unix.Stat_t
	var err error
	if top {
		err = unix.Stat(d, &st)
	} else {
		err = unix.Lstat(d, &st)
	}
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fileStamp{}, false
	}
	return fileStamp{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}

// list is listDir(d), from the cache when it holds this version of d.
func (c *dirsCache) list(d string, top bool) (subdirs, creds []string, ok bool) {
	if c == nil {
		return listDir(d)
	}
	start := time.Now()
	before, stamped := dirStampOf(d, top)
	c.used[d] = true
	if e, hit := c.dirs[d]; stamped && hit && e.Dir == before {
		return e.Subdirs, e.Creds, true
	} else if hit {
		delete(c.dirs, d)
		c.dirty = true
	}
	subdirs, creds, ok = listDir(d)
	c.reads++
	recent := start.Add(-c.racy).UnixNano()
	if ok && stamped && before.Mtime < recent && before.Ctime < recent {
		if after, same := dirStampOf(d, top); same && after == before {
			c.dirs[d] = listedDir{Dir: before, Subdirs: subdirs, Creds: creds}
			c.dirty = true
		}
	}
	return subdirs, creds, ok
}

// save writes the cache for the next plans, atomically, when it changed. It is best effort:
// without it, every directory is read again.
func (c *dirsCache) save() {
	if c == nil || !c.dirty {
		return
	}
	if len(c.dirs) > maxListedDirs {
		maps.DeleteFunc(c.dirs, func(p string, _ listedDir) bool { return !c.used[p] })
	}
	writeJSONAtomic(c.dir, c.file, projectDirsCache{Version: projectDirsCacheVersion, Dirs: c.dirs})
	pruneDirsCaches(c.dir)
}

// pruneDirsCaches removes version 1's file of every project and, past maxProjectDirsCaches
// projects, the files written longest ago.
func pruneDirsCaches(dir string) {
	_ = os.Remove(filepath.Join(dir, oldProjectDirsCache))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type kept struct {
		name string
		at   time.Time
	}
	var files []kept
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), projectDirsCachePrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil {
			files = append(files, kept{e.Name(), fi.ModTime()})
		}
	}
	if len(files) <= maxProjectDirsCaches {
		return
	}
	slices.SortFunc(files, func(a, b kept) int { return b.at.Compare(a.at) })
	for _, f := range files[maxProjectDirsCaches:] {
		_ = os.Remove(filepath.Join(dir, f.name))
	}
}
