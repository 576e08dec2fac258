package apply

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/sandbox/layers"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// The directories an apply removes: those the agent deleted whole, once the apply's deletions
// leave them empty; a rollback makes them again.

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
func leftEmpty(root *projectfs.Root, upper string, ops []op, deleted map[string]bool, known []removedDir) []removedDir {
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
		for d := projectfs.FilepathDir(o.Path); d != "" && !seen[d]; d = projectfs.FilepathDir(d) {
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
		if listed[d] || AgentHasDir(upper, d) {
			continue
		}
		h, err := root.Lstat(d)
		if err != nil || !h.Exists || h.Stat.Type != 'd' || !onlyDeleted(root, d, deleted, gone) {
			continue
		}
		gone[d] = true
		out = append(out, removedDir{Path: d, Mode: h.Stat.Mode, Emptied: true})
	}
	return out
}

// AgentHasDir reports whether the agent's tree (the upper layer over the project) still has the
// project directory dir: not when dir or a directory above it is deleted (a whiteout) or replaced
// by a file or symlink, or hidden by an opaque directory that does not have it again. No symlink
// of the upper layer is followed.
func AgentHasDir(upper, dir string) bool {
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
		opaque = opaque || layers.KindAt(cur, c, &st) == layers.OpaqueDir
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
func onlyDeleted(root *projectfs.Root, dir string, deleted, gone map[string]bool) bool {
	fd, err := projectfs.Openat(root.FD, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
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
func emptiedDirs(root *projectfs.Root, dir string, deleted map[string]bool) ([]removedDir, error) {
	fd, err := projectfs.Openat(root.FD, dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", quote.Path(dir), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	out := []removedDir{{Path: dir, Mode: projectfs.StatFromUnix(&st).Mode}}
	err = projectfs.WalkAt(fd, dir, func(rel string, _ int, _ string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if !deleted[rel] {
				return fmt.Errorf("%s stays", quote.Path(rel))
			}
			return nil
		}
		out = append(out, removedDir{Path: rel, Mode: projectfs.StatFromUnix(st).Mode})
		return nil
	})
	return out, err
}
