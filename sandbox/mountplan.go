package sandbox

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountStep is one step of building the jail's root, as PID 1 runs it:
// mountPlan lists them all, in order, from the jail's spec alone, and
// runStep does one. Paths are jail paths; PID 1 prefixes the root's.
type mountStep struct {
	// Stage is the step of SPEC §3 it belongs to, which a failure names
	// (JailError.Step).
	Stage string
	Op    stepOp
	Dst   string // where it mounts, binds, links or writes
	Src   string // what: a host path, a link's target, an overlay's lower
	// Upper and Work are an overlay's writable layer.
	Upper, Work string
	Mode        uint32 // a tmpfs's mode
	Size        int64  // a tmpfs's size limit (0: the kernel's default)
	ReadOnly    bool   // a bind is read-only
	OnDisk      bool   // the run's layer goes on disk (opRunLayer)
	// What the mount is for, in errors ("--ro /x"); Paths what a mask or
	// the scrubbed files' step covers.
	What  string
	Paths []string
}

// stepOp is what a mountStep does.
type stepOp string

const (
	opPrivate     stepOp = "make-private"     // stop mount propagation with the host
	opTmpfs       stepOp = "tmpfs"            // a size-limited tmpfs on Dst
	opEmptyLower  stepOp = "empty-lower"      // the empty lower layer of read-only overlays (mountEmptyLower)
	opDropLower   stepOp = "drop-empty-lower" // detach it: the overlays keep it
	opShowTree    stepOp = "show"             // show host tree Dst read-only, connect(2) refused (showTree)
	opBindFile    stepOp = "bind-file"        // bind host file Src on Dst, read-only
	opMask        stepOp = "mask"             // hide Paths (hideUnreadable)
	opBindDevice  stepOp = "bind-device"      // bind host device Src on Dst
	opDevpts      stepOp = "devpts"           // a devpts instance of the jail's own
	opSymlink     stepOp = "symlink"          // Dst -> Src
	opProc        stepOp = "proc"             // a /proc of the jail's PID namespace
	opUserLimits  stepOp = "user-limits"      // the user namespace's per-user limits
	opRemountRO   stepOp = "remount-ro"       // bind Dst read-only over itself, if it exists
	opGitConfig   stepOp = "gitconfig"        // write and bind ~/.gitconfig
	opRunLayer    stepOp = "run-layer"        // the project's overlay: the run's layer over the staging layer
	opOverlay     stepOp = "overlay"          // overlay of Src (lower), Upper and Work on Dst
	opShown       stepOp = "shown"            // read-only overlay of Src on Dst (mountShownOn)
	opBind        stepOp = "bind"             // bind host path Src on Dst
	opScrubbed    stepOp = "scrubbed"         // bind the scrubbed files Paths over themselves
	opPivot       stepOp = "pivot_root"       // make the root the root, detach the host's
	opRemountRoot stepOp = "remount-root-ro"  // the root tmpfs read-only
	opChdir       stepOp = "chdir"            // the start directory, or the project
)

// mountPlan is every step of building the jail of s, in order (SPEC §3):
// the root tmpfs, the system trees, the masks, /dev, /proc, /tmp, $HOME,
// the project and the extra mounts, the files shown scrubbed, the runtime
// directory and shadow's binary, then pivot_root, the read-only root and
// the start directory.
func mountPlan(s *jailSpec) []mountStep {
	var plan []mountStep
	add := func(stage string, st ...mountStep) {
		for _, x := range st {
			x.Stage = stage
			plan = append(plan, x)
		}
	}
	add("private mount propagation", mountStep{Op: opPrivate, Dst: "/"})
	add("root tmpfs", mountStep{Op: opTmpfs, Dst: "/", Mode: 0o755, Size: rootTmpfsSize})
	add("system trees", mountStep{Op: opEmptyLower, Dst: shownLower})
	for _, d := range s.SystemDirs {
		add("system trees", mountStep{Op: opShowTree, Dst: d, Src: d})
	}
	if s.ResolvConf != "" {
		add("system trees", mountStep{Op: opBindFile, Dst: s.ResolvConf, Src: s.ResolvConf, ReadOnly: true})
	}
	add("system trees", mountStep{Op: opDropLower, Dst: shownLower})
	if len(s.Masked) > 0 {
		add("hide what others may not read", mountStep{Op: opMask, Paths: s.Masked})
	}
	add("/dev", mountStep{Op: opTmpfs, Dst: "/dev", Mode: 0o755, Size: devTmpfsSize})
	for _, name := range devices {
		add("/dev", mountStep{Op: opBindDevice, Dst: "/dev/" + name, Src: "/dev/" + name})
	}
	add("/dev", mountStep{Op: opDevpts, Dst: "/dev/pts"},
		mountStep{Op: opTmpfs, Dst: "/dev/shm", Mode: 0o1777, Size: shmTmpfsSize})
	for _, l := range devLinks {
		add("/dev", mountStep{Op: opSymlink, Dst: "/dev/" + l[0], Src: l[1]})
	}
	add("/proc", mountStep{Op: opProc, Dst: "/proc"}, mountStep{Op: opUserLimits, Dst: userLimitsDir})
	for _, name := range procReadOnly {
		add("/proc", mountStep{Op: opRemountRO, Dst: "/proc/" + name})
	}
	add("/tmp", mountStep{Op: opTmpfs, Dst: "/tmp", Mode: 0o1777, Size: s.TmpSize})
	if s.Home != "" && s.Home != "/" {
		add("$HOME", mountStep{Op: opTmpfs, Dst: s.Home, Mode: 0o755, Size: s.HomeSize})
		if s.GitConfig != "" {
			add("git identity", mountStep{Op: opGitConfig, Dst: s.Home + "/.gitconfig"})
		}
	}
	const extra = "project and extra mounts"
	add(extra, mountStep{Op: opEmptyLower, Dst: shownLower})
	for _, m := range s.Mounts {
		st := mountStep{Dst: m.Dst, Src: m.Src, Upper: m.Upper, Work: m.Work, ReadOnly: m.ReadOnly, OnDisk: m.OnDisk}
		switch m.Kind {
		case mountRun:
			st.Op, st.Size = opRunLayer, s.LayerSize
		case mountOverlay:
			st.Op = opOverlay
		case mountShown:
			st.Op = opShown
		default:
			st.Op = opBind
		}
		st.What = m.What
		add(extra, st)
	}
	add(extra, mountStep{Op: opDropLower, Dst: shownLower})
	if len(s.Scrubbed) > 0 {
		var paths []string
		for _, c := range s.Scrubbed {
			paths = append(paths, c.Path)
		}
		add("files shown scrubbed", mountStep{Op: opScrubbed, Paths: paths})
	}
	add("runtime dir", mountStep{Op: opBind, Dst: jailRuntimeDir, Src: s.RuntimeDir})
	add("shadow binary", mountStep{Op: opBind, Dst: jailInitBinary, Src: s.Binary, ReadOnly: true})
	add("pivot_root", mountStep{Op: opPivot, Dst: "/"})
	add("read-only root", mountStep{Op: opRemountRoot, Dst: "/"})
	add("chdir to the start directory", mountStep{Op: opChdir, Dst: s.Dir})
	return plan
}

// devLinks are the symlinks of the jail's /dev: name, target.
var devLinks = [][2]string{
	{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
}

// String is the step as one line: what it does, where, with what.
func (st mountStep) String() string {
	var b strings.Builder
	b.WriteString(string(st.Op))
	if st.Dst != "" {
		b.WriteString(" " + st.Dst)
	}
	if st.Src != "" && st.Src != st.Dst {
		fmt.Fprintf(&b, " src=%s", st.Src)
	}
	if st.Upper != "" {
		fmt.Fprintf(&b, " upper=%s work=%s", st.Upper, st.Work)
	}
	if st.Mode != 0 {
		fmt.Fprintf(&b, " mode=%04o", st.Mode)
	}
	if st.Size != 0 {
		fmt.Fprintf(&b, " size=%d", st.Size)
	}
	if st.ReadOnly {
		b.WriteString(" ro")
	}
	if st.OnDisk {
		b.WriteString(" on-disk")
	}
	if st.What != "" {
		b.WriteString(" for=" + strconv.Quote(st.What))
	}
	for _, p := range st.Paths {
		b.WriteString("\n\t" + p)
	}
	return b.String()
}

// rootBuild is PID 1's state while it runs the plan.
type rootBuild struct {
	s     *jailSpec
	layer *runLayer // the run's layer, once mounted
	below []string  // the host's mount points below the system trees
	// belowRead says below was read (at the first system tree).
	belowRead bool
}

// buildRoot builds the jail's root on s.Root and pivots into it, step by
// step of mountPlan; the first failure stops the build and names its step
// and path.
func buildRoot(s *jailSpec) (*runLayer, error) {
	b := &rootBuild{s: s}
	for _, st := range mountPlan(s) {
		if err := b.run(st); err != nil {
			if b.layer != nil {
				b.layer.close()
			}
			return nil, &JailError{Step: st.Stage, Err: err}
		}
	}
	return b.layer, nil
}

// run does one step.
func (b *rootBuild) run(st mountStep) error {
	s := b.s
	root := s.Root
	switch st.Op {
	case opPrivate:
		return makePrivate()
	case opTmpfs:
		return mountTmpfs(root+strings.TrimSuffix(st.Dst, "/"), st.Mode, st.Size)
	case opEmptyLower:
		return mountEmptyLower(root)
	case opDropLower:
		return dropEmptyLower(root)
	case opShowTree:
		if !b.belowRead {
			below, err := hostMountsBelow(s.SystemDirs, root)
			if err != nil {
				return err
			}
			b.below, b.belowRead = below, true
		}
		return showTree(root, st.Src, root+shownLower, b.below)
	case opBindFile:
		return bindRegularFile(root, st.Src)
	case opMask:
		return hideUnreadable(root, st.Paths, s.Home, s.Mounts)
	case opBindDevice:
		return bindDevice(st.Src, root+st.Dst)
	case opDevpts:
		return mountDevpts(root + st.Dst)
	case opSymlink:
		return symlink(st.Src, root+st.Dst)
	case opProc:
		return mountProc(root + st.Dst)
	case opUserLimits:
		return setUserLimits(root+st.Dst, s.UserLimits)
	case opRemountRO:
		return remountOverItself(root + st.Dst)
	case opGitConfig:
		return writeGitConfig(root, s.Home, s.GitConfig)
	case opRunLayer:
		l, err := mountRunLayer(root, root+st.Dst, st.Src, st.Upper, st.Work, st.Size, st.OnDisk, s.Checkpoints)
		if err != nil {
			return named(st, err)
		}
		b.layer = l
		return nil
	case opOverlay:
		return named(st, mountOverlayOn(root+st.Dst, st.Src, st.Upper, st.Work))
	case opShown:
		return named(st, mountShownOn(root+st.Dst, st.Src, root+shownLower))
	case opBind:
		return named(st, bindInto(root, st.Src, st.Dst, st.ReadOnly))
	case opScrubbed:
		return showScrubbed(root, s.Scrubbed)
	case opPivot:
		return pivotInto(root)
	case opRemountRoot:
		return remountRootReadOnly()
	case opChdir:
		return chdirStart(s)
	}
	return fmt.Errorf("unknown step %q on %s", st.Op, st.Dst)
}

// named prefixes err with what the mount is for ("--ro /x"), when the step
// says.
func named(st mountStep, err error) error {
	if err != nil && st.What != "" {
		return fmt.Errorf("%s: %w", st.What, err)
	}
	return err
}

// symlink makes link dst pointing to target.
func symlink(target, dst string) error {
	if err := unix.Symlink(target, dst); err != nil {
		return fmt.Errorf("symlink %s: %w", dst, err)
	}
	return nil
}
