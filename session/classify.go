package session

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DefaultProtected is SPEC §4's list of paths an agent must not change silently, as gitignore-style
// patterns matched at any depth. Config's `protected` key extends it.
var DefaultProtected = []string{
	".git", ".git/**", ".gitmodules", ".github/**", ".gitlab-ci.yml", ".circleci/**", ".husky/**",
	".pre-commit-config.yaml", "lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml",
	"lefthook-local.yml", ".envrc", ".vscode/**", ".idea/**", ".devcontainer/**", ".cursor/**",
	".claude/**", ".mcp.json", "AGENTS.md", "CLAUDE.md", ".npmrc", ".yarnrc*", ".pnpmfile.cjs",
	".cargo/config*", ".shadow.toml",
	// shell rc files
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
	".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login",
	"fish/config.fish", "fish/conf.d/**",
}

// protectedRules compiles patterns so that each matches at any depth.
func protectedRules(patterns []string) []ignoreRule {
	var rules []ignoreRule
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		p = strings.TrimPrefix(p, "/")
		dirOnly := strings.HasSuffix(p, "/")
		p = strings.TrimRight(p, "/")
		if strings.Contains(p, "/") && !strings.HasPrefix(p, "**/") {
			p = "**/" + p
		}
		rules = append(rules, ignoreRule{pattern: p, negate: neg, dirOnly: dirOnly, anchored: strings.Contains(p, "/")})
		if dirOnly {
			// A protected directory protects what is inside it.
			rules = append(rules, ignoreRule{pattern: p + "/**", negate: neg, anchored: true})
		}
	}
	return rules
}

// isProtected reports whether p, or a directory above it, matches a protected rule.
func isProtected(rules []ignoreRule, p string) bool {
	prot := false
	for _, r := range rules {
		if r.match(p, false) {
			prot = !r.negate
		}
	}
	if prot {
		return true
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		for _, r := range rules {
			if !r.negate && r.match(d, true) {
				return true
			}
		}
	}
	return false
}

// looksLikeGitDir reports whether dir (in the staged view: upper first, then host) holds a HEAD
// file and an objects or refs directory, the shape git recognises as a repository.
func looksLikeGitDir(upper, host, dir string) bool {
	exists := func(name string) bool {
		for _, root := range []string{upper, host} {
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir), name)); err == nil {
				return true
			}
		}
		return false
	}
	return exists("HEAD") && (exists("objects") || exists("refs"))
}

// classify marks each change ignored, protected, conflict and outside-link.
func (s *Session) classify(cs *ChangeSet, b *bases, host, upper *projectRoot, extraProtected []string) error {
	exclude := readSmall(host, ".git/info/exclude")
	ign := newIgnoreMatcher(exclude, func(dir string) []byte {
		p := ".gitignore"
		if dir != "" {
			p = dir + "/.gitignore"
		}
		e := b.get(p)
		if e.Kind == baseUnknown {
			return readSmall(host, p)
		}
		if e.Kind == baseAbsent || e.Type != 'f' {
			return nil
		}
		rc, err := b.open(host, p, e)
		if err != nil {
			return nil
		}
		defer rc.Close()
		data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
		return data
	})
	prot := protectedRules(append(append([]string(nil), DefaultProtected...), extraProtected...))
	gitDirs := map[string]bool{}
	gitShaped := func(p string) bool {
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			v, ok := gitDirs[d]
			if !ok {
				v = strings.HasSuffix(parts[i-1], ".git") || looksLikeGitDir(upper.path, host.path, d)
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
		c.Protected = isProtected(prot, c.Path) || gitShaped(c.Path) ||
			(c.From != "" && (isProtected(prot, c.From) || gitShaped(c.From)))
		if c.New.Kind == KindSymlink {
			c.OutsideLink = linkLeavesProject(s.Meta.Project, c.Path, c.New.Target)
		}
		// The reason was found with the change (buildChange), on parallel workers.
		c.Conflict = c.Reason != ""
	}
	return nil
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

func readSmall(root *projectRoot, p string) []byte {
	f, err := root.openRead(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return data
}

// conflictReason says why the host's p no longer matches the base the change was computed on, or
// "" when it matches.
func conflictReason(b *bases, host *projectRoot, p string, e baseEntry) (string, error) {
	h, err := host.lstat(p)
	if err != nil {
		return "", err
	}
	switch e.Kind {
	case baseUnknown:
		return "conflict, base unknown: the host changed it before its pre-image was taken", nil
	case baseAbsent:
		if h.exists && h.stat.Type != 'd' {
			return "the host created it after the session started", nil
		}
		// A host directory where the agent put a file: its contents are deletions of the change set.
		return "", nil
	case baseHost:
		if !h.exists {
			return "the host deleted it since the session started", nil
		}
		if !sameStat(h.stat, e.Host) {
			return "the host changed it since the session started", nil
		}
		return "", nil
	}
	// A captured base: compare content when the stat moved.
	if !h.exists {
		return "the host deleted it since its pre-image was taken", nil
	}
	if sameStat(h.stat, e.Host) {
		return "", nil
	}
	if h.stat.Type != e.Type || h.stat.Mode != e.Mode {
		return "the host changed it since its pre-image was taken", nil
	}
	switch e.Type {
	case 'l':
		if h.target == e.Target {
			return "", nil
		}
	case 'f':
		f, err := host.openRead(p)
		if err != nil {
			return "", fmt.Errorf("check %s for host changes: %w", visible(p), err)
		}
		sum, _, _, err := headHash(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("check %s for host changes: %w", visible(p), err)
		}
		if sum == e.Hash {
			return "", nil
		}
	}
	return "the host changed it since its pre-image was taken", nil
}
