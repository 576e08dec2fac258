package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The mask cache: the scans of the large system trees, kept in one file
// (maskCacheName) of a JSON document followed by each tree's directories in
// a compact binary form, and read back only when it is the invoker's own.

// maskCacheName is the cache's file in Policy.MaskCache.
const maskCacheName = "system-masks.json"

// maskCacheVersion changes when the file's meaning does.
const maskCacheVersion = 3

// maxMaskCacheSize is the largest cache file read: past it, the trees are walked.
const maxMaskCacheSize = 256 << 20

// maskCache is what the cache file holds: one scan per system tree.
type maskCache struct {
	Version int                 `json:"version"`
	Trees   map[string]treeScan `json:"trees"`
}

// treeScan is one walk of a system tree.
type treeScan struct {
	Scanned time.Time `json:"scanned"` // when the walk started
	// Stamp holds the mtimes (ns; 0 when missing) of the package
	// databases, taken before the walk.
	Stamp map[string]int64 `json:"stamp"`
	// Dirs are the directories the walk read, each its change time (ns)
	// as the walk found it, before reading it, and its path relative to
	// its anchor (see anchorDirs; "" is the tree), in the form of
	// appendDir, parents first. They follow
	// the JSON document in the cache file, DirsSize bytes per tree in the
	// order of the trees' names: some 17,000 directories under /usr read
	// in a millisecond this way, in twenty as JSON.
	Dirs     []byte `json:"-"`
	DirsSize int    `json:"dirs_size"`
	// Racy is set when a directory changed within maskStore.racyWindow of the walk.
	Racy    bool     `json:"racy,omitempty"`
	Entries int      `json:"entries"` // entries the walk looked at
	Masked  []string `json:"masked"`
}

// scanTree walks tree, stamped first so that a change during the walk
// makes the scan stale; a directory changed within racyWindow of its start
// makes it racy.
func scanTree(tree string, racyWindow time.Duration) treeScan {
	ts := treeScan{Scanned: time.Now(), Stamp: map[string]int64{}}
	for _, p := range packageDatabases {
		ts.Stamp[p] = mtime(p)
	}
	w := walkTree(tree)
	ts.Masked, ts.Entries = w.masked, int(w.entries.Load())
	since := ts.Scanned.Add(-racyWindow).UnixNano()
	anchorOf, number := anchorDirs(w.dirs)
	for i, d := range w.dirs {
		a := anchorOf[i]
		rel := ""
		if i > 0 {
			rel = d[len(w.dirs[a])+1:]
		}
		ts.Dirs = appendDir(ts.Dirs, w.ctimes[i], number[a], number[i] > 0, rel)
		ts.Racy = ts.Racy || w.ctimes[i] >= since
	}
	return ts
}

// anchorMin is how many directories of a scan must lie below a directory for it to be an
// anchor.
const anchorMin = 32

// anchorDirs picks the anchors of the directories dirs of a walk (the tree first, every
// directory after its parent): those with anchorMin directories or more below them. The check of
// a cached scan opens each anchor (relative to its own anchor) and looks every other directory
// up from its nearest one, so that a lookup walks a path or two, not the seven of a path from
// the root of /usr: path lookups were most of the check's cost. anchorOf[i] is the index of
// dirs[i]'s nearest anchor above it (0, the tree, for the tree itself and for those with none
// but the tree), number[i] an anchor's number (from 1, in the order of dirs; 0 for the tree and
// for a directory that is no anchor).
func anchorDirs(dirs []string) (anchorOf, number []int) {
	n := len(dirs)
	anchorOf, number = make([]int, n), make([]int, n)
	index := make(map[string]int, n)
	parent := make([]int, n)
	for i, d := range dirs {
		index[d] = i
		if i > 0 {
			p, ok := index[filepath.Dir(d)]
			if !ok {
				p = 0 // not below a directory of the walk: looked up from the tree
			}
			parent[i] = p
		}
	}
	below := make([]int, n)
	for i := n - 1; i > 0; i-- {
		below[parent[i]] += below[i] + 1
	}
	anchors := 0
	for i := 1; i < n; i++ {
		p := parent[i]
		if number[p] > 0 {
			anchorOf[i] = p
		} else {
			anchorOf[i] = anchorOf[p]
		}
		if below[i] >= anchorMin {
			anchors++
			number[i] = anchors
		}
	}
	return anchorOf, number
}

// appendDir appends one directory of treeScan.Dirs to b: its ctime, the number of its anchor
// (0: the tree) with whether it is an anchor itself in the lowest bit, and the length of its path
// relative to its anchor, as varints, then that path.
func appendDir(b []byte, ctime int64, anchor int, isAnchor bool, rel string) []byte {
	b = binary.AppendVarint(b, ctime)
	ref := uint64(anchor) << 1
	if isAnchor {
		ref |= 1
	}
	b = binary.AppendUvarint(b, ref)
	b = binary.AppendUvarint(b, uint64(len(rel)))
	return append(b, rel...)
}

// cachedDir is one directory of treeScan.Dirs, as nextDir reads it.
type cachedDir struct {
	ctime    int64
	anchor   int
	isAnchor bool
	rel      []byte
}

// nextDir reads the first directory of b and returns the rest; ok is false when b is
// malformed.
func nextDir(b []byte) (d cachedDir, rest []byte, ok bool) {
	ctime, n := binary.Varint(b)
	if n <= 0 {
		return d, nil, false
	}
	b = b[n:]
	ref, n := binary.Uvarint(b)
	if n <= 0 || ref>>1 > 1<<30 {
		return d, nil, false
	}
	b = b[n:]
	size, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < size {
		return d, nil, false
	}
	d = cachedDir{ctime: ctime, anchor: int(ref >> 1), isAnchor: ref&1 == 1, rel: b[n : n+int(size)]}
	return d, b[n+int(size):], true
}

// memoryMasks is the cache of a process given no cache directory.
var memoryMasks struct {
	sync.Mutex
	cache maskCache
}

// loadMaskCache reads the cache of dir (the process's own when dir is
// empty). A missing, corrupt or foreign file reads as empty: every tree is
// then walked. The file must be the invoker's and writable by no one else,
// or a user could hide nothing from a root-run jail by editing it.
func loadMaskCache(dir string) maskCache {
	empty := maskCache{Version: maskCacheVersion, Trees: map[string]treeScan{}}
	if dir == "" {
		memoryMasks.Lock()
		defer memoryMasks.Unlock()
		c := empty
		for t, s := range memoryMasks.cache.Trees {
			c.Trees[t] = s
		}
		return c
	}
	f, err := os.Open(filepath.Join(dir, maskCacheName))
	if err != nil {
		return empty
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return empty
	}
	// Read at once, in a buffer of its size: a megabyte or so, read on every run, that
	// growing a buffer to would allocate several times over.
	if st.Size <= 0 || st.Size > maxMaskCacheSize {
		return empty
	}
	data := make([]byte, st.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return empty
	}
	// The JSON document ends with a newline; the directories follow.
	doc, blobs, ok := bytes.Cut(data, []byte("\n"))
	var c maskCache
	if !ok || json.Unmarshal(doc, &c) != nil || c.Version != maskCacheVersion || c.Trees == nil {
		return empty
	}
	for _, t := range slices.Sorted(maps.Keys(c.Trees)) {
		s := c.Trees[t]
		if s.DirsSize < 0 || s.DirsSize > len(blobs) {
			return empty
		}
		s.Dirs, blobs = blobs[:s.DirsSize], blobs[s.DirsSize:]
		c.Trees[t] = s
	}
	if len(blobs) != 0 {
		return empty
	}
	for t, s := range c.Trees {
		if !validScan(t, s) {
			delete(c.Trees, t)
		}
	}
	return c
}

// validScan reports whether every masked path of s lies in tree.
func validScan(tree string, s treeScan) bool {
	if !filepath.IsAbs(tree) || filepath.Clean(tree) != tree {
		return false
	}
	for _, p := range s.Masked {
		if filepath.Clean(p) != p || !within(p, tree) {
			return false
		}
	}
	return true
}

// saveMaskCache writes c for the next runs, atomically. It is best
// effort: without a cache, runs walk every tree.
func saveMaskCache(dir string, c maskCache) {
	if dir == "" {
		memoryMasks.Lock()
		memoryMasks.cache = c
		memoryMasks.Unlock()
		return
	}
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	removeStaleTemps(dir)
	f, err := os.CreateTemp(dir, "."+maskCacheName+"-*")
	if err != nil {
		return
	}
	trees := slices.Sorted(maps.Keys(c.Trees))
	for _, t := range trees {
		s := c.Trees[t]
		s.DirsSize = len(s.Dirs)
		c.Trees[t] = s
	}
	err = json.NewEncoder(f).Encode(c)
	for _, t := range trees {
		if err == nil {
			_, err = f.Write(c.Trees[t].Dirs)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, maskCacheName))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// removeStaleTemps removes the temporary files of saveMaskCache in dir that a process which
// ended while it wrote one left behind (a check started early, by a command that then had no
// jail to run): those more than a minute old.
func removeStaleTemps(dir string) {
	temps, _ := filepath.Glob(filepath.Join(dir, "."+maskCacheName+"-*"))
	for _, t := range temps {
		if fi, err := os.Lstat(t); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(t)
		}
	}
}
