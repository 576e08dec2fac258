//go:build !shadowinit

// Package sandbox builds the jail shadow runs a command in: user, mount, PID,
// network, IPC and UTS namespaces, a minimal read-only system, the project
// behind an overlay whose upper layer stages every write, Landlock, seccomp
// and no capabilities. Run is the host side; ReexecMain is the jail side
// (PID 1 of the jail and the stage that execs the command).
package sandbox

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// Policy says what the jail of one run looks like. Paths are host paths.
type Policy struct {
	// Project is the project directory; the command sees it read-write at
	// the same path, through an overlay whose writes land in Upper.
	Project string
	// Dir is the directory the command starts in, a host path: used when it
	// is in Project (the jail shows the project at the same path), so that a
	// run started in a subdirectory of the project starts there too. Empty,
	// or outside Project: Project.
	Dir string
	// Upper is the session's staging layer, on disk: a lower layer of the
	// project's overlay, under the run's own layer (a tmpfs, see
	// MaxUpperBytes), which PID 1 merges into it when the run ends. It must
	// be outside Project and owned by the invoker. The merge does not make
	// it durable: the caller syncs Upper's filesystem once (the session
	// does when it records the run's end).
	Upper string
	// CacheDir holds the writable layers of the package-cache overlays
	// (never reviewed, never written back). Empty means no cache overlays.
	CacheDir string
	// MaskCache is a directory where what others may not read under the
	// large system trees (/usr) is kept between runs, so that a run need not
	// walk them (mask.go). Empty: kept for the life of the process.
	MaskCache string
	// RuntimeDir is a host directory bound at /run/shadow in the jail, for
	// the sockets that cross the network namespace. Empty: a temporary one.
	RuntimeDir string
	// Home is the invoker's home directory; the jail has an empty, private
	// tmpfs there. Empty: $HOME.
	Home string
	// Env is the command's whole environment. Nil: BuildEnv(os.Environ(), nil).
	Env []string
	// ReadOnly and ReadWrite are extra host paths bound at the same path.
	// ReadOnly paths may be read and executed; ReadWrite paths are written
	// directly, not staged.
	ReadOnly, ReadWrite []string
	// GitWritable stages writes to the project's .git like the rest instead
	// of making it read-only.
	GitWritable bool
	// NoCache hides the host's package caches.
	NoCache bool
	// AllowNetwork gives the jail internet access through pasta or
	// slirp4netns; without either, the host network namespace is shared and
	// a warning is printed.
	AllowNetwork bool
	// NetHelpers are the user-mode network stacks AllowNetwork may use, in
	// the order tried. Nil: pasta, then slirp4netns.
	NetHelpers []string
	// Publish lists ports: the host's 127.0.0.1:PORT is forwarded to the
	// jail's 127.0.0.1:PORT.
	Publish []int
	// AllowDomains, when set, runs the allow-list HTTP(S) proxy of SPEC §8
	// on the host and points the command's proxy variables at it; the jail
	// keeps its own network namespace. Ignored with AllowNetwork.
	AllowDomains []proxy.Rule
	// Secrets are credentials the command gets a placeholder of, which the
	// allow-list proxy replaces with the real value in requests to their
	// hosts only (secrets.go). An empty Placeholder is made for the run.
	Secrets []proxy.Secret
	// NetLog is the file the proxy appends one JSON line per request to.
	// Empty: no log.
	NetLog string
	// StateBinds are an agent's own state directories, bound read-write
	// below $HOME (not staged, not reviewed).
	StateBinds []StateBind
	// AgentCaches are caches an agent fills for itself, read through from
	// the host's copy, written to the agent's per-project state.
	AgentCaches []AgentCache
	// Timeout stops the jail (SIGTERM, then SIGKILL after KillGrace) when it
	// runs longer. Zero means no limit.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL. Zero: 2 seconds.
	KillGrace time.Duration
	// Checkpoints is the session's checkpoint directory: PID 1 writes a
	// checkpoint there (see Checkpoint) at the end of the run, when the
	// run's layer was written and then quiet for QuietCheckpoint, and when
	// IO.CheckpointRequests asks. NextCheckpoint is the number of the next
	// (c<N>). Empty: no checkpoints.
	Checkpoints    string
	NextCheckpoint int
	// Command is the command as the user gave it, for the checkpoints'
	// record, when the argv run differs (a preset added arguments).
	Command []string
	// CheckpointBudget is the disk the session's checkpoints may use: past
	// it, quiet checkpoints stop for the run, and a warning says so. Zero:
	// DefaultCheckpointBudget times the run's layer size; negative: none.
	CheckpointBudget int64
	// QuietCheckpoint is how long the run's layer must stay unchanged after
	// a write for a quiet checkpoint. Zero: 3 seconds; negative: none.
	QuietCheckpoint time.Duration
	// MaxUpperBytes is the size of the run's layer: a tmpfs in memory that
	// takes the run's writes, over the session's staging layer (Upper) on
	// disk, merged into it when the run ends. The kernel enforces it: a
	// write past it fails with ENOSPC and Result.LayerFull says so. Zero:
	// the kernel's default for a tmpfs, half of the memory.
	MaxUpperBytes int64
	// TmpSize and HomeSize are the size limits of the jail's /tmp and $HOME
	// tmpfs, in bytes. Zero: 1 GiB and 512 MiB.
	TmpSize, HomeSize int64

	// layerOnDisk makes the run's layer a directory on disk, as on a
	// kernel whose tmpfs keeps no user.* attributes: for tests of that way.
	layerOnDisk bool
}

// IO is what one run is wired to, beside its Policy: the command's streams,
// the signals and checkpoint requests to relay to the jail, and the hooks
// that hear of the run. The zero IO is the process's own streams, with
// nothing relayed and no hook.
type IO struct {
	// Stdin, Stdout and Stderr are the command's standard streams. Nil: the
	// process's own. When any of them is a terminal, the command gets a pty.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Warnings receives shadow's own warnings (shared network). Nil: Stderr.
	Warnings io.Writer
	// Signals are relayed to the jail as they come (see RelayedSignals for
	// what each does there). Run catches no signal itself: a caller that
	// wants the user's relayed catches them into this channel.
	Signals <-chan os.Signal
	// CheckpointRequests asks for a checkpoint while the command runs; each
	// value is what took it (CheckpointPrompt, CheckpointManual).
	CheckpointRequests <-chan string
	// Checkpointed, when set, is told of every checkpoint PID 1 wrote, the
	// end of the run's included, before Ended.
	Checkpointed func(Checkpoint)
	// CheckpointAnswered, when set, is told when PID 1 is done with each
	// request of CheckpointRequests (its reason), in order: after Checkpointed
	// of the checkpoint it wrote, or when there was nothing to write.
	CheckpointAnswered func(trigger string)
	// RunLayer, when set, is given the run's layer (open, read-only use)
	// once the jail is built and before the command starts: where what the
	// run writes appears while it goes. Run closes it when RunLayer returns.
	RunLayer func(dir *os.File)
	// AskNetwork, when set, is asked about a request for a host off the
	// allow-list, which the proxy otherwise refuses (SPEC §14): it lets it
	// through once, for the run, or refuses it; the proxy refuses it when no
	// answer comes within 30 seconds.
	AskNetwork proxy.Asker
	// Ended, when set, is called once the command (or its failed exec) and
	// everything it started are gone, with the Result Run is about to
	// return, while the kernel still tears the jail down (unmounting an
	// overlay that staged thousands of files takes tens of milliseconds):
	// the caller's work on the run's end overlaps that. The terminal is the
	// caller's again by then, and Signals are no longer read. Run returns
	// after Ended does. It is not called when PID 1 could not report the end
	// (it was killed) or the jail failed: Run's return is all there is then.
	Ended func(Result)
	// Resolver resolves the names the allow-list proxy connects to, and
	// Roots are the roots it trusts for the real servers of the secrets'
	// hosts. Nil: the host's resolver and trust store.
	Resolver proxy.Resolver
	Roots    *x509.CertPool
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the command's exit status, or 128+Signal when a signal
	// killed it.
	ExitCode int
	// Signal is the signal that killed the command, 0 if it exited.
	Signal syscall.Signal
	// TimedOut is set when Policy.Timeout stopped the run.
	TimedOut bool
	// StopReason says why shadow stopped the run before the command ended
	// on its own (timeout, staging layer too large, cancelled); empty otherwise.
	StopReason string
	// LandlockABI is the Landlock ABI the command was confined with.
	LandlockABI int
	// Network is how the jail was connected: "none" (only lo), "proxy" (only
	// lo and the allow-list proxy), "pasta", "slirp4netns" or "host" (shared
	// host network namespace).
	Network string
	// Duration is the wall time of the run.
	Duration time.Duration
	// LayerBytes is how much of the run's layer the run used; LayerFull
	// says it reached Policy.MaxUpperBytes, so that writes past it failed.
	LayerBytes int64
	LayerFull  bool
	// StagingError says that merging the run's layer into the staging
	// layer failed (the disk is full, say): what the run wrote is not all
	// staged.
	StagingError string
}

// The exit statuses of SPEC §1 that a run has when its command's is not
// the one to report.
const (
	ExitTimeout = 124 // Policy.Timeout stopped it
	ExitNoJail  = 125 // the jail could not run it
)

// ExitStatus is the exit status of a run, as `shadow run` exits with it and
// a session records it: ExitNoJail when Run failed, ExitTimeout when it
// timed out, else the command's.
func ExitStatus(res Result, err error) int {
	switch {
	case err != nil:
		return ExitNoJail
	case res.TimedOut:
		return ExitTimeout
	}
	return res.ExitCode
}

// IsJailError reports whether err says that the jail could not be built.
func IsJailError(err error) bool {
	var je *JailError
	return errors.As(err, &je)
}

// keptEnv are the variables BuildEnv keeps without being asked; the locale
// variables too (localeEnv), when their value is a locale name.
var keptEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
	"TZ", "EDITOR", "VISUAL"}

// localeEnv are LANG and the locale categories of POSIX and glibc
// (locale(7)): the LC_* variables a C library reads. Other LC_* names are
// not locale settings (LC_TERMINAL, or whatever a host tool chose to call
// its own) and are dropped like any other variable.
var localeEnv = []string{"LANG", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY",
	"LC_NUMERIC", "LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME",
	"LC_PAPER", "LC_TELEPHONE"}

// localeName matches what a locale variable holds: C, POSIX, or
// language[_territory][.codeset][@modifier]. A value with '/' would make the
// C library load locale files from that path, so it is no locale name.
var localeName = regexp.MustCompile(`^(C|POSIX|[a-zA-Z]{2,8}(_[a-zA-Z0-9]{2,3})?)(\.[a-zA-Z0-9_-]{1,20})?(@[a-zA-Z0-9_-]{1,20})?$`)

// BuildEnv returns the jail's environment: the variables of host (in
// os.Environ form) that are always kept (PATH HOME USER LOGNAME SHELL TERM
// COLORTERM TZ EDITOR VISUAL, and LANG and the LC_* locale categories of
// localeEnv when set to a locale name or empty), plus those named in pass.
// Order follows host; a name appears once.
func BuildEnv(host []string, pass []string) []string {
	want := make(map[string]bool, len(keptEnv)+len(pass))
	for _, n := range keptEnv {
		want[n] = true
	}
	for _, n := range pass {
		want[n] = true
	}
	seen := make(map[string]bool)
	var env []string
	for _, kv := range host {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || seen[name] {
			continue
		}
		if want[name] || slices.Contains(localeEnv, name) && (value == "" || localeName.MatchString(value)) {
			seen[name] = true
			env = append(env, kv)
		}
	}
	return env
}

// LayerNotes are the lines a run's summary says about its layer: that it
// filled up, so that writes past it failed, and that what it held could not
// all be staged. None for a run whose writes were all staged.
func LayerNotes(res Result) []string {
	var notes []string
	if res.LayerFull {
		notes = append(notes, fmt.Sprintf("the run's staging layer is full (%s used): writes past it failed with "+
			"'No space left on device', so files the command wrote then may be cut short; "+
			"raise --max-upper-bytes to stage more", humanBytes(res.LayerBytes)))
	}
	if res.StagingError != "" {
		notes = append(notes, "not everything the run wrote is staged: "+res.StagingError+
			"; free space in shadow's state directory, then review what is staged")
	}
	return notes
}
