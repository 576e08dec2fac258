package sandbox

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Scrubbing a git configuration file runs git on it (scrubGitConfig): a process per file and
// per run, on most hosts /etc/gitconfig and the project's .git/config, which made up most of
// the plan's cost. What git prints for a file depends on the file alone and on git, so the
// scrubbed content is kept in the directory of the mask cache (Policy.MaskCache), keyed by the
// file's identity (device, inode, size, modification and change times) and git's. A file
// changed since reads again; so does one whose times lie within scrubRacyWindow of its
// reading, since a second change in the same tick of the file times would not show in them.
// Like the mask cache, the file must be the invoker's and writable by no one else: its content
// is what the jail's git reads.

// gitConfigCacheName is the cache's file in Policy.MaskCache.
const gitConfigCacheName = "git-configs.json"

// gitConfigCacheVersion changes when the file's meaning, or what scrubGitConfig keeps, does.
const gitConfigCacheVersion = 1

// scrubRacyWindow is how recent a file's change may be, when it is read, for what was read
// to be kept.
const scrubRacyWindow = time.Second

// maxScrubbedFiles bounds the cache: past it, only the files of the last plan are kept.
const maxScrubbedFiles = 256

// fileStamp identifies a version of a file.
type fileStamp struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
}

// stampOf is the stamp of path (followed when a symlink); ok is false when it cannot be had.
func stampOf(path string) (fileStamp, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileStamp{}, false
	}
	return fileStamp{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}

// scrubbedFile is what scrubGitConfig returned for one version of a file, with one git.
type scrubbedFile struct {
	File     fileStamp `json:"file"`
	Git      fileStamp `json:"git"`
	Content  string    `json:"content"`
	Includes []string  `json:"includes,omitempty"`
}

// scrubCache is the cache of one plan: loaded at its start, saved at its end.
type scrubCache struct {
	dir  string
	git  fileStamp
	racy time.Duration // scrubRacyWindow
	mu   sync.Mutex
	// files are the cached files by path; used those the plan read (and the identities it
	// looked up).
	files map[string]scrubbedFile
	used  map[string]bool
	// identities are gitIdentity's answers, by home and XDG_CONFIG_HOME.
	identities map[string]cachedIdentity
	dirty      bool
}

// cachedIdentity is gitIdentity's answer for versions of the global configuration files
// (globalGitConfigs; a zero stamp for a missing one), with one git.
type cachedIdentity struct {
	Files   []fileStamp `json:"files"`
	Git     fileStamp   `json:"git"`
	Content string      `json:"content"`
}

// scrubCacheFile is the cache file's content.
type scrubCacheFile struct {
	Version    int                       `json:"version"`
	Files      map[string]scrubbedFile   `json:"files"`
	Identities map[string]cachedIdentity `json:"identities,omitempty"`
}

// loadScrubCache reads the cache of dir for the git binary git; nil (no caching) when dir or
// git is empty. A missing, corrupt or foreign file reads as empty.
func loadScrubCache(dir, git string) *scrubCache {
	if dir == "" || git == "" {
		return nil
	}
	gs, ok := stampOf(git)
	if !ok {
		return nil
	}
	c := &scrubCache{dir: dir, git: gs, racy: scrubRacyWindow, files: map[string]scrubbedFile{}, used: map[string]bool{},
		identities: map[string]cachedIdentity{}}
	var cf scrubCacheFile
	if !readOwnJSON(dir, gitConfigCacheName, &cf) || cf.Version != gitConfigCacheVersion || cf.Files == nil {
		return c
	}
	c.files = cf.Files
	if cf.Identities != nil {
		c.identities = cf.Identities
	}
	return c
}

// identity is read() (gitIdentity's answer for home, whose global configuration is files), from
// the cache when it holds these versions of files. Only a configuration without includes is
// kept: an include, conditional or not, makes the answer depend on other files, or on the
// project's directory.
func (c *scrubCache) identity(home string, files []string, read func() (string, bool)) string {
	if c == nil {
		content, _ := read()
		return content
	}
	key := home + "\x00" + os.Getenv("XDG_CONFIG_HOME")
	stamps := func() []fileStamp {
		out := make([]fileStamp, len(files))
		for i, f := range files {
			out[i], _ = stampOf(f)
		}
		return out
	}
	before := stamps()
	c.mu.Lock()
	e, hit := c.identities[key]
	c.used[key] = true
	c.mu.Unlock()
	if hit && e.Git == c.git && slices.Equal(e.Files, before) {
		return e.Content
	}
	content, ran := read()
	if !ran {
		return content // a git that failed: asked again next time
	}
	recent := time.Now().Add(-c.racy).UnixNano()
	for i, f := range files {
		st := before[i]
		if st.Mtime >= recent || st.Ctime >= recent {
			return content
		}
		if st == (fileStamp{}) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil || bytes.Contains(bytes.ToLower(b), []byte("include")) {
			return content
		}
	}
	if !slices.Equal(stamps(), before) {
		return content
	}
	c.mu.Lock()
	c.identities[key] = cachedIdentity{Files: before, Git: c.git, Content: content}
	c.dirty = true
	c.mu.Unlock()
	return content
}

// scrub is scrubGitConfig(git, path), from the cache when it holds this version of path. What
// a git that failed gave is not kept.
func (c *scrubCache) scrub(git, path string) (string, []string) {
	if c == nil {
		return scrubGitConfig(git, path)
	}
	before, ok := stampOf(path)
	c.mu.Lock()
	e, hit := c.files[path]
	c.used[path] = true
	c.mu.Unlock()
	if ok && hit && e.File == before && e.Git == c.git {
		return e.Content, e.Includes
	}
	content, includes, ran := scrubGitConfigRan(git, path)
	after, same := stampOf(path)
	recent := time.Now().Add(-c.racy).UnixNano()
	if ran && ok && same && after == before && before.Mtime < recent && before.Ctime < recent {
		c.mu.Lock()
		c.files[path] = scrubbedFile{File: before, Git: c.git, Content: content, Includes: includes}
		c.dirty = true
		c.mu.Unlock()
	}
	return content, includes
}

// save writes the cache for the next plans, atomically, when it changed. It is best effort:
// without it, every file is read by git again.
func (c *scrubCache) save() {
	if c == nil || !c.dirty {
		return
	}
	if len(c.files) > maxScrubbedFiles {
		maps.DeleteFunc(c.files, func(p string, _ scrubbedFile) bool { return !c.used[p] })
	}
	if len(c.identities) > maxScrubbedFiles {
		maps.DeleteFunc(c.identities, func(k string, _ cachedIdentity) bool { return !c.used[k] })
	}
	writeJSONAtomic(c.dir, gitConfigCacheName, scrubCacheFile{Version: gitConfigCacheVersion, Files: c.files, Identities: c.identities})
}
