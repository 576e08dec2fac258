package changeset

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/projectfs"
)

// classify marks each change ignored, protected, conflict and outside-link.
func (s *Source) classify(cs *ChangeSet, b *Bases, host, upper *projectfs.Root, extraProtected []string) error {
	exclude := readSmall(host, ".git/info/exclude")
	ign := NewIgnoreMatcher(exclude, func(dir string) []byte {
		p := ".gitignore"
		if dir != "" {
			p = dir + "/.gitignore"
		}
		e := b.Get(p)
		if e.Kind == BaseUnknown {
			return readSmall(host, p)
		}
		if e.Kind == BaseAbsent || e.Type != 'f' {
			return nil
		}
		rc, err := b.Open(host, p, e)
		if err != nil {
			return nil
		}
		defer rc.Close()
		data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
		return data
	})
	prot := NewProtectedMatcher(ProtectedPaths, extraProtected)
	gitDirs := map[string]bool{}
	gitShaped := func(p string) bool {
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			v, ok := gitDirs[d]
			if !ok {
				v = strings.HasSuffix(parts[i-1], ".git") || looksLikeGitDir(upper, host, d)
				gitDirs[d] = v
			}
			if v {
				return true
			}
		}
		return false
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		c.Ignored = ign.Ignored(c.Path, false) && (c.From == "" || ign.Ignored(c.From, false))
		c.ProtectedWhy = protectedWhy(prot, gitShaped, c.Path)
		if c.ProtectedWhy == "" && c.From != "" {
			if why := protectedWhy(prot, gitShaped, c.From); why != "" {
				c.ProtectedWhy = "moved from a protected path: " + why
			}
		}
		// The list names the tool; the dot-file rule covers what the list misses.
		if c.ProtectedWhy == "" {
			st := c.Status
			if st == Renamed {
				st = Added
			}
			c.ProtectedWhy = prot.DotWhy(c.Path, st, b.Manifest.hasDir)
		}
		if c.ProtectedWhy == "" && c.From != "" {
			if why := prot.DotWhy(c.From, Deleted, b.Manifest.hasDir); why != "" {
				c.ProtectedWhy = "moved from a protected path: " + why
			}
		}
		c.Protected = c.ProtectedWhy != ""
		if c.New.Kind == KindSymlink {
			c.OutsideLink = linkLeavesProject(s.Project, c.Path, c.New.Target)
		}
		// The reason was found with the change (buildChange), on parallel workers.
		c.Conflict = c.Reason != ""
	}
	return nil
}

// protectedWhy says why p is protected, by the list and config or by a git-shaped directory above
// it, or "" when it is not.
func protectedWhy(prot *protectedMatcher, gitShaped func(string) bool, p string) string {
	if why := prot.Why(p); why != "" {
		return why
	}
	if gitShaped(p) {
		return GitShapedWhy
	}
	return ""
}

// linkLeavesProject reports whether a symlink at p with the given target resolves (lexically)
// outside the project.
func linkLeavesProject(project, p, target string) bool {
	if target == "" {
		return true
	}
	var abs string
	if path.IsAbs(target) {
		abs = path.Clean(target)
	} else {
		abs = path.Join(project, path.Dir(p), target)
	}
	return abs != project && !strings.HasPrefix(abs, project+"/")
}

func readSmall(root *projectfs.Root, p string) []byte {
	f, err := root.OpenRead(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return data
}

// conflictReason says why the host's p no longer matches the base the change was computed on, or
// "" when it matches.
func conflictReason(b *Bases, host *projectfs.Root, p string, e BaseEntry) (string, error) {
	h, err := host.Lstat(p)
	if err != nil {
		return "", err
	}
	switch e.Kind {
	case BaseUnknown:
		return "conflict, base unknown: the host changed it before its pre-image was taken", nil
	case BaseAbsent:
		if h.Exists && h.Stat.Type != 'd' {
			return "the host created it after the session started", nil
		}
		// A host directory where the agent put a file: its contents are deletions of the change set.
		return "", nil
	case BaseHost:
		if !h.Exists {
			return "the host deleted it since the session started", nil
		}
		if !SameStat(h.Stat, e.Host) {
			return "the host changed it since the session started", nil
		}
		return "", nil
	}
	// A captured base: compare content when the stat moved.
	if !h.Exists {
		return "the host deleted it since its pre-image was taken", nil
	}
	if SameStat(h.Stat, e.Host) {
		return "", nil
	}
	if h.Stat.Type != e.Type || h.Stat.Mode != e.Mode {
		return "the host changed it since its pre-image was taken", nil
	}
	switch e.Type {
	case 'l':
		if h.Target == e.Target {
			return "", nil
		}
	case 'f':
		f, err := host.OpenRead(p)
		if err != nil {
			return "", fmt.Errorf("check %s for host changes: %w", quote.Path(p), err)
		}
		sum, _, _, err := projectfs.HeadHash(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("check %s for host changes: %w", quote.Path(p), err)
		}
		if sum == e.Hash {
			return "", nil
		}
	}
	return "the host changed it since its pre-image was taken", nil
}
