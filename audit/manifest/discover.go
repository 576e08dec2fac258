package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Kind names the type of a discovered file.
type Kind string

// Kinds of file Discover finds.
const (
	KindPackageJSON   Kind = "package.json"
	KindPackageLock   Kind = "package-lock.json"
	KindShrinkwrap    Kind = "npm-shrinkwrap.json"
	KindHiddenLock    Kind = "node_modules/.package-lock.json" // npm's record of what is installed
	KindYarnLock      Kind = "yarn.lock"
	KindPnpmLock      Kind = "pnpm-lock.yaml"
	KindBunLock       Kind = "bun.lock"
	KindBunLockb      Kind = "bun.lockb" // binary; no parser, so its checks are skipped
	KindCargoToml     Kind = "Cargo.toml"
	KindCargoLock     Kind = "Cargo.lock"
	KindCargoConfig   Kind = ".cargo/config.toml" // .cargo/config or .cargo/config.toml
	KindNpmrc         Kind = ".npmrc"
	KindYarnrc        Kind = ".yarnrc.yml"
	KindYarnrcClassic Kind = ".yarnrc"
	KindBuildRS       Kind = "build.rs" // a build.rs next to a Cargo.toml
	KindBindingGyp    Kind = "binding.gyp"
)

// IsLockfile reports whether files of this kind are lockfiles.
func (k Kind) IsLockfile() bool {
	switch k {
	case KindPackageLock, KindShrinkwrap, KindHiddenLock, KindYarnLock, KindPnpmLock, KindBunLock, KindBunLockb, KindCargoLock:
		return true
	}
	return false
}

// Limit is the size cap for files of this kind.
func (k Kind) Limit() int64 {
	switch {
	case k == KindCargoLock:
		return MaxCargoLockSize
	case k.IsLockfile():
		return MaxLockfileSize
	case k == KindBuildRS:
		return MaxSourceSize
	case k == KindNpmrc || k == KindYarnrc || k == KindYarnrcClassic || k == KindCargoConfig:
		return MaxConfigSize
	}
	return MaxManifestSize
}

// File is one manifest, lockfile, configuration file or build script found in a project.
type File struct {
	Kind Kind
	Path string // as joined onto the root given to Discover
	Rel  string // slash-separated, relative to the root
}

// InstalledPackage is a package installed under a node_modules directory.
type InstalledPackage struct {
	// Rel is the package directory relative to the root, slash-separated:
	// "node_modules/a", "node_modules/@s/b", "node_modules/a/node_modules/c",
	// "node_modules/.pnpm/c@1.0.0/node_modules/c".
	Rel string
	// Dir is the package directory as joined onto the root.
	Dir string
	// PathName is the package name the install path implies ("@s/b").
	PathName string
	// Manifest is the parsed package.json; nil when Err is set.
	Manifest *PackageJSON
	// Err is the read or parse error of package.json (errors.Is ErrTooLarge for
	// an oversized one, fs.ErrNotExist when the directory has none).
	Err error
	// HasBindingGyp is set when the package has a binding.gyp, which npm builds
	// with node-gyp at install time even without an install script.
	HasBindingGyp bool
	// HasShrinkwrap is set when the package ships an npm-shrinkwrap.json, which
	// npm obeys for the package's own dependencies.
	HasShrinkwrap bool
}

// Inventory is what Discover found in a project.
type Inventory struct {
	Root      string
	Files     []File             // sorted by Rel
	Installed []InstalledPackage // sorted by Rel
	// Errors are directories that could not be read; the walk went on without them.
	Errors []error
}

// FilesOf returns the files of the given kinds, in Rel order.
func (inv *Inventory) FilesOf(kinds ...Kind) []File {
	var out []File
	for _, f := range inv.Files {
		for _, k := range kinds {
			if f.Kind == k {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// skipDirs are never walked: version control, package caches and stores.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, ".jj": true,
	".pnpm-store": true, ".yarn": true, ".cache": true, ".npm": true,
}

const (
	maxWalkDepth    = 64
	maxNestedDepth  = 32
	discoverWorkers = 8
)

// KindOf returns the kind of a file from its slash-separated path relative to
// the project, and false when it is not a file Discover reports.
func KindOf(rel string) (Kind, bool) {
	base := path.Base(rel)
	dir := path.Base(path.Dir(rel))
	switch base {
	case "package.json":
		return KindPackageJSON, true
	case "package-lock.json":
		return KindPackageLock, true
	case "npm-shrinkwrap.json":
		return KindShrinkwrap, true
	case ".package-lock.json":
		if dir == "node_modules" {
			return KindHiddenLock, true
		}
	case "yarn.lock":
		return KindYarnLock, true
	case "pnpm-lock.yaml":
		return KindPnpmLock, true
	case "bun.lock":
		return KindBunLock, true
	case "bun.lockb":
		return KindBunLockb, true
	case "Cargo.toml":
		return KindCargoToml, true
	case "Cargo.lock":
		return KindCargoLock, true
	case "config", "config.toml":
		if dir == ".cargo" {
			return KindCargoConfig, true
		}
	case ".npmrc":
		return KindNpmrc, true
	case ".yarnrc.yml":
		return KindYarnrc, true
	case ".yarnrc":
		return KindYarnrcClassic, true
	case "build.rs":
		return KindBuildRS, true
	case "binding.gyp":
		return KindBindingGyp, true
	}
	return "", false
}

// Discover finds the manifests, lockfiles, package-manager configuration and
// build scripts of the project at root, and reads and parses the package.json
// of every package installed under its node_modules directories (npm's nested
// layout and pnpm's .pnpm store). It skips version-control and cache
// directories and a Cargo target directory, never follows symbolic links, and
// reads only regular files. Each installed package costs one directory listing
// and one read; the reads run on a small worker pool.
func Discover(root string) (Inventory, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return Inventory{}, fmt.Errorf("discover manifests: %w", err)
	}
	if !fi.IsDir() {
		return Inventory{}, fmt.Errorf("discover manifests: %s is not a directory", root)
	}
	d := &discovery{root: root}
	d.cond = sync.NewCond(&d.mu)
	d.inv.Root = root
	d.walk(root, "", 0)
	d.run()
	sort.Slice(d.inv.Files, func(i, j int) bool { return d.inv.Files[i].Rel < d.inv.Files[j].Rel })
	sort.Slice(d.inv.Installed, func(i, j int) bool { return d.inv.Installed[i].Rel < d.inv.Installed[j].Rel })
	return d.inv, nil
}

type discovery struct {
	root string
	mu   sync.Mutex
	cond *sync.Cond // signals new jobs and the end of work
	// jobs are the directories still to read; busy counts jobs being read.
	jobs []discoveryJob
	busy int
	inv  Inventory
}

// discoveryJob is one installed-package directory to read, or one pnpm store
// entry to list when store is set.
type discoveryJob struct {
	dir, rel string
	nest     int
	follow   bool // follow a nested node_modules
	store    bool
}

func (d *discovery) push(j discoveryJob) {
	d.mu.Lock()
	d.jobs = append(d.jobs, j)
	d.mu.Unlock()
	d.cond.Signal()
}

// run reads the queued jobs on a fixed pool of workers; jobs may queue more.
func (d *discovery) run() {
	var wg sync.WaitGroup
	for range discoverWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				d.mu.Lock()
				for len(d.jobs) == 0 && d.busy > 0 {
					d.cond.Wait()
				}
				if len(d.jobs) == 0 {
					d.mu.Unlock()
					d.cond.Broadcast()
					return
				}
				j := d.jobs[len(d.jobs)-1]
				d.jobs = d.jobs[:len(d.jobs)-1]
				d.busy++
				d.mu.Unlock()
				if j.store {
					d.storeEntry(j.dir, j.rel)
				} else {
					d.readPackage(j.dir, j.rel, j.nest, j.follow)
				}
				d.mu.Lock()
				d.busy--
				done := d.busy == 0 && len(d.jobs) == 0
				d.mu.Unlock()
				if done {
					d.cond.Broadcast()
				}
			}
		}()
	}
	wg.Wait()
}

func (d *discovery) addFile(f File) {
	d.mu.Lock()
	d.inv.Files = append(d.inv.Files, f)
	d.mu.Unlock()
}

func (d *discovery) addErr(err error) {
	d.mu.Lock()
	d.inv.Errors = append(d.inv.Errors, err)
	d.mu.Unlock()
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// walk lists one project directory and descends into its subdirectories.
func (d *discovery) walk(dir, rel string, depth int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		d.addErr(fmt.Errorf("discover manifests: list %s: %w", dir, err))
		return
	}
	hasCargo := false
	for _, e := range entries {
		if e.Name() == "Cargo.toml" && e.Type().IsRegular() {
			hasCargo = true
		}
	}
	isCargoDir := path.Base(rel) == ".cargo"
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		erel := joinRel(rel, name)
		switch {
		case e.Type().IsRegular():
			k, ok := KindOf(erel)
			if !ok || k == KindHiddenLock {
				continue
			}
			if k == KindCargoConfig && !isCargoDir {
				continue
			}
			if k == KindBuildRS && !hasCargo {
				continue
			}
			d.addFile(File{Kind: k, Path: full, Rel: erel})
		case e.IsDir():
			switch {
			case name == "node_modules":
				d.nodeModules(full, erel, 0)
			case skipDirs[name]:
			case name == "target" && hasCargo:
			case depth >= maxWalkDepth:
				d.addErr(fmt.Errorf("discover manifests: %s is nested more than %d directories deep; not searched", full, maxWalkDepth))
			default:
				d.walk(full, erel, depth+1)
			}
		}
	}
}

// nodeModules lists a node_modules directory and queues each package in it.
func (d *discovery) nodeModules(dir, rel string, nest int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		d.addErr(fmt.Errorf("discover installed packages: list %s: %w", dir, err))
		return
	}
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		erel := rel + "/" + name
		switch {
		case name == ".package-lock.json" && e.Type().IsRegular():
			d.addFile(File{Kind: KindHiddenLock, Path: full, Rel: erel})
		case name == ".pnpm" && e.IsDir() && nest == 0:
			d.pnpmStore(full, erel)
		case strings.HasPrefix(name, ".") || !e.IsDir():
			// .bin, .cache, .modules.yaml, and symlinks (workspace and pnpm links)
		case strings.HasPrefix(name, "@"):
			scoped, err := os.ReadDir(full)
			if err != nil {
				d.addErr(fmt.Errorf("discover installed packages: list %s: %w", full, err))
				continue
			}
			for _, s := range scoped {
				if s.IsDir() {
					d.pkg(filepath.Join(full, s.Name()), erel+"/"+s.Name(), nest)
				}
			}
		default:
			d.pkg(full, erel, nest)
		}
	}
}

// pnpmStore queues the real package directories of pnpm's virtual store:
// .pnpm/<id>/node_modules/<name> (other entries there are links).
func (d *discovery) pnpmStore(dir, rel string) {
	ids, err := os.ReadDir(dir)
	if err != nil {
		d.addErr(fmt.Errorf("discover installed packages: list %s: %w", dir, err))
		return
	}
	for _, id := range ids {
		if !id.IsDir() || id.Name() == "node_modules" {
			continue
		}
		d.push(discoveryJob{dir: filepath.Join(dir, id.Name(), "node_modules"), rel: rel + "/" + id.Name() + "/node_modules", store: true})
	}
}

// storeEntry lists one .pnpm/<id>/node_modules and queues its real package directories.
func (d *discovery) storeEntry(nm, nmRel string) {
	entries, err := os.ReadDir(nm)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.addErr(fmt.Errorf("discover installed packages: list %s: %w", nm, err))
		}
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		if strings.HasPrefix(name, "@") {
			sub, err := os.ReadDir(filepath.Join(nm, name))
			if err != nil {
				d.addErr(fmt.Errorf("discover installed packages: list %s: %w", filepath.Join(nm, name), err))
				continue
			}
			for _, s := range sub {
				if s.IsDir() {
					d.push(discoveryJob{dir: filepath.Join(nm, name, s.Name()), rel: nmRel + "/" + name + "/" + s.Name()})
				}
			}
			continue
		}
		d.push(discoveryJob{dir: filepath.Join(nm, name), rel: nmRel + "/" + name})
	}
}

func (d *discovery) pkg(dir, rel string, nest int) {
	d.push(discoveryJob{dir: dir, rel: rel, nest: nest, follow: true})
}

// readPackage lists one installed package and reads its package.json; a
// nested node_modules is followed as npm lays it out.
func (d *discovery) readPackage(dir, rel string, nest int, followNested bool) {
	entries, err := os.ReadDir(dir)
	p := InstalledPackage{Rel: rel, Dir: dir, PathName: NameFromPath(rel)}
	hasManifest, hasNested := false, false
	if err == nil {
		for _, e := range entries {
			switch e.Name() {
			case "package.json":
				hasManifest = e.Type().IsRegular()
			case "binding.gyp":
				p.HasBindingGyp = e.Type().IsRegular()
			case "npm-shrinkwrap.json":
				p.HasShrinkwrap = e.Type().IsRegular()
			case "node_modules":
				hasNested = e.IsDir()
			}
		}
		if hasManifest {
			mp := filepath.Join(dir, "package.json")
			var data []byte
			data, err = ReadFile(mp, MaxManifestSize)
			if err == nil {
				p.Manifest, err = ParsePackageJSON(mp, data)
			}
		} else {
			err = fmt.Errorf("read %s: %w", filepath.Join(dir, "package.json"), fs.ErrNotExist)
		}
	} else {
		err = fmt.Errorf("list %s: %w", dir, err)
	}
	p.Err = err
	if err != nil {
		p.Manifest = nil
	}
	d.mu.Lock()
	d.inv.Installed = append(d.inv.Installed, p)
	d.mu.Unlock()
	if hasNested && followNested {
		if nest >= maxNestedDepth {
			d.addErr(fmt.Errorf("discover installed packages: %s nests node_modules more than %d deep; not searched", dir, maxNestedDepth))
			return
		}
		d.nodeModules(filepath.Join(dir, "node_modules"), rel+"/node_modules", nest+1)
	}
}
