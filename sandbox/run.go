//go:build !shadowinit

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// RelayedSignals are the signals a caller relays to a run (IO.Signals) so
// that a run in the user's terminal gets them as a command outside a jail
// would: SIGINT and SIGQUIT reach the command, SIGTERM and SIGHUP stop
// everything in the jail (its last checkpoint first), SIGWINCH resizes the
// command's terminal.
func RelayedSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH}
}

// Run runs argv in a jail built from p, wired to w, and returns how it
// ended. A jail that cannot be built returns a *JailError and the command is
// never started; the command is never run unsandboxed. Cancelling ctx stops
// the jail like a timeout does (SIGTERM, then SIGKILL; the run's last
// checkpoint is taken first): Result.StopReason says so. Run catches no
// signal: what the caller sends on w.Signals is relayed to the jail.
func Run(ctx context.Context, p Policy, argv []string, w IO) (Result, error) {
	return runOn(ctx, p, argv, w, confine.LandlockABI)
}

// runOn is Run on a kernel whose Landlock ABI landlockABI tells
// (confine.LandlockABI; a test plays a kernel without).
func runOn(ctx context.Context, p Policy, argv []string, w IO, landlockABI func() int) (Result, error) {
	r := &jailRun{p: p, w: w, start: time.Now(), res: Result{Network: "none"}}
	defer r.undo()
	if err := r.setUp(argv, landlockABI); err != nil {
		return r.res, err
	}
	if err := r.awaitBuilt(ctx); err != nil {
		return r.res, err
	}
	started, err := r.startCommand()
	if err != nil || !started {
		return r.res, err
	}
	return r.supervise(ctx)
}

// jailRun is one Run on the host side, from the jail's setup to its end.
type jailRun struct {
	p       Policy
	w       IO
	start   time.Time
	res     Result
	s       *jailSpec
	j       *jail
	helper  string // the network helper to start, "" for none
	restore func() // gives the user's terminal back (once)
	undos   []func()
}

// later registers f to run when Run returns, before what was registered
// before it.
func (r *jailRun) later(f func()) { r.undos = append(r.undos, f) }

// undo runs what later registered, last first.
func (r *jailRun) undo() {
	for i := len(r.undos) - 1; i >= 0; i-- {
		r.undos[i]()
	}
}

// setUp refuses root without Landlock, plans the jail, starts the network
// side that needs no jail yet (the proxy) and PID 1, and sends it the spec.
func (r *jailRun) setUp(argv []string, landlockABI func() int) error {
	p := r.p
	if os.Geteuid() == 0 && landlockABI() == 0 {
		return &JailError{Step: "landlock", Err: errors.New(
			"the kernel offers no Landlock; shadow refuses to run as root without it (run it as a normal user)")}
	}
	root, err := os.MkdirTemp("", "shadow-root-")
	if err != nil {
		return &JailError{Step: "root mount point", Err: err}
	}
	r.later(func() { os.Remove(root) })
	runtimeDir := p.RuntimeDir
	if runtimeDir == "" {
		d, err := os.MkdirTemp("", "shadow-run-")
		if err != nil {
			return &JailError{Step: "runtime dir", Err: err}
		}
		r.later(func() { os.RemoveAll(d) })
		runtimeDir = d
	} else if runtimeDir, err = makeDir(runtimeDir); err != nil {
		return &JailError{Step: "runtime dir", Err: err}
	}
	s, err := prepare(p, argv, root)
	if err != nil {
		return err
	}
	s.RuntimeDir = runtimeDir
	r.s = s
	// Walked while PID 1 starts, if not since the process's start (StartMaskCheck): startJail
	// waits for it to send the spec.
	masks := maskCheckFor(s.SystemDirs, p.MaskCache)

	s.NewNet = true
	if p.AllowNetwork {
		if r.helper = findNetHelper(p.NetHelpers); r.helper == "" {
			s.NewNet = false
			r.res.Network = "host"
			fmt.Fprintln(r.w.warnings(), "shadow: WARNING: neither pasta nor slirp4netns is installed; "+
				"the jail SHARES THE HOST NETWORK (host services on 127.0.0.1 are reachable). "+
				"Install passt or slirp4netns.")
		}
	}
	sec, err := setUpSecrets(p, s, runtimeDir, r.w.warnings())
	if err != nil {
		return &JailError{Step: "secrets", Err: err}
	}
	if s.Proxy {
		np, err := startNetProxy(runtimeDir, p.AllowDomains, p.NetLog, sec, r.w)
		if err != nil {
			return &JailError{Step: "allow-list proxy", Err: err}
		}
		r.later(np.close)
		r.res.Network = "proxy"
	}
	j, err := startJail(s, r.w, masks)
	if err != nil {
		return err
	}
	r.j = j
	// A stale mask cache is walked again while the jail runs; Run returns
	// once that is done and the jail is gone.
	r.later(masks.startRescan())
	r.later(j.cleanup)
	r.later(func() { openWorkDirs(s.Mounts) })
	return nil
}

// awaitBuilt waits for PID 1 to have built the jail, hands the run's layer
// to w.RunLayer, and connects the jail's network (helper, published ports).
func (r *jailRun) awaitBuilt(ctx context.Context) error {
	j, p := r.j, r.p
	m, err := j.next()
	if err != nil {
		return &JailError{Step: "build", Err: err}
	}
	if !m.Ready {
		return reported("build", m)
	}
	// PID 1 holds the checkpoints' lock now: a command that finds this
	// shadow gone learns from the lock file whom it waits for.
	noteWriter(p.Checkpoints, j.cmd.Process.Pid)
	// PID 1 sent the run's layer before it said it is ready.
	if r.w.RunLayer != nil {
		if layer := j.receiveLayer(); layer != nil {
			r.w.RunLayer(layer)
			layer.Close()
		}
	}
	if r.helper != "" {
		h, err := startNetHelper(ctx, r.helper, j.cmd.Process.Pid, r.s.RuntimeDir)
		if err != nil {
			return &JailError{Step: "network", Err: err}
		}
		j.helper = h
		r.res.Network = r.helper
	}
	if len(p.Publish) > 0 {
		pub, err := publish(p.Publish, filepath.Join(r.s.RuntimeDir, publishSocket))
		if err != nil {
			return &JailError{Step: "publish", Err: err}
		}
		j.pub = pub
	}
	return nil
}

// startCommand puts the user's terminal in raw mode and tells PID 1 to
// start the command. started is false when the command could not be
// executed: the run has ended then, and r.res says how.
func (r *jailRun) startCommand() (started bool, err error) {
	// Once: the terminal is the caller's again before Ended, which may change it.
	r.restore = sync.OnceFunc(makeRaw(r.w.Stdin))
	r.later(r.restore)
	if err := r.j.send(request{Go: true}); err != nil {
		return false, &JailError{Step: "start", Err: err}
	}
	m, err := r.j.next()
	if err != nil {
		return false, &JailError{Step: "start", Err: err}
	}
	if m.Started == nil {
		return false, reported("start", m)
	}
	r.res.LandlockABI = m.Started.Landlock
	if m.Started.ExecFailed != nil { // the command could not be executed
		r.res.ExitCode = *m.Started.ExecFailed
		_, err := r.ended()
		return false, err
	}
	return true, nil
}

// ended records the command's end, once nothing of it runs any more, tells
// w.Ended, and reaps PID 1.
func (r *jailRun) ended() (Result, error) {
	r.restore()
	r.res.Duration = time.Since(r.start)
	if r.w.Ended != nil {
		r.w.Ended(r.res)
	}
	r.j.wait()
	return r.res, nil
}

// supervise relays PID 1's events to w's hooks, w's checkpoint requests and
// signals to PID 1, and stops the jail on a timeout or ctx, until the
// command's end.
func (r *jailRun) supervise(ctx context.Context) (Result, error) {
	j, p := r.j, r.p
	exitc := make(chan runEnd, 1)
	merging := make(chan struct{})
	go r.relayEvents(exitc, merging)
	if r.w.CheckpointRequests != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case t := <-r.w.CheckpointRequests:
					_ = j.send(request{Checkpoint: t})
				case <-done:
					return
				}
			}
		}()
	}
	var timeout <-chan time.Time
	if p.Timeout > 0 {
		t := time.NewTimer(p.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	grace := p.KillGrace
	if grace <= 0 {
		grace = defaultKillGrace
	}
	stopping := false
	stop := func(reason string) {
		if stopping {
			return
		}
		stopping = true
		r.res.StopReason = reason
		j.terminate(grace)
	}
	sigs := r.w.Signals
	for {
		select {
		case m, ok := <-exitc:
			if !ok {
				return r.lost(stopping)
			}
			// PID 1 reports the end once it has killed and reaped
			// everything else, and then exits: nothing in the jail writes
			// any more.
			r.res.ExitCode, r.res.Signal = m.Exit, m.Signal
			r.res.LayerBytes, r.res.LayerFull, r.res.StagingError = m.LayerBytes, m.LayerFull, m.StagingError
			return r.ended()
		case <-timeout:
			r.res.TimedOut = true
			stop(fmt.Sprintf("timed out after %s", p.Timeout))
		case <-merging:
			// PID 1 stopped everything and merges the run's layer: killing
			// it now would lose what the run wrote.
			j.stopKiller()
			merging = nil
		case <-ctx.Done():
			stop("cancelled")
			ctx = context.Background()
		case sig := <-sigs:
			_ = j.cmd.Process.Signal(sig)
		}
	}
}

// relayEvents reads PID 1's events until its end (sent on exitc) or its
// pipe closes (exitc closed), telling w's hooks and warnings.
func (r *jailRun) relayEvents(exitc chan<- runEnd, merging chan<- struct{}) {
	w := r.w
	for {
		m, err := r.j.next()
		if err != nil {
			close(exitc)
			return
		}
		if m.Merging {
			close(merging)
		}
		if m.Checkpointed != nil && w.Checkpointed != nil {
			w.Checkpointed(*m.Checkpointed)
		}
		if m.CheckpointError != "" {
			fmt.Fprintln(w.warnings(), "shadow: checkpoint:", m.CheckpointError)
		}
		if m.CheckpointNote != "" {
			fmt.Fprintln(w.warnings(), "shadow: checkpoints:", m.CheckpointNote)
		}
		if m.CheckpointAnswered != "" && w.CheckpointAnswered != nil {
			w.CheckpointAnswered(m.CheckpointAnswered)
		}
		if m.End != nil {
			exitc <- *m.End
			return
		}
	}
}

// lost is how the run ended when PID 1 went without reporting the end:
// killed after the grace period (everything in it was killed with it), or
// it failed.
func (r *jailRun) lost(stopping bool) (Result, error) {
	r.restore()
	ws := r.j.wait()
	r.res.Duration = time.Since(r.start)
	switch {
	case ws.Signaled():
		r.res.Signal = ws.Signal()
		r.res.ExitCode = 128 + int(ws.Signal())
	case !stopping:
		return r.res, &JailError{Step: "jail init", Err: fmt.Errorf("PID 1 of the jail ended without a status (%v)", ws)}
	default:
		r.res.ExitCode = ws.ExitStatus()
	}
	return r.res, nil
}

// jail is the host's handle on a running jail.
type jail struct {
	cmd     *exec.Cmd
	control *json.Encoder
	ctrlW   *os.File
	status  *json.Decoder
	statR   *os.File
	// layerSock receives the run's layer from PID 1 (see IO.RunLayer).
	layerSock *os.File
	helper    *netHelper
	pub       *publisher
	ws        unix.WaitStatus
	waited    bool
	killer    *time.Timer
}

// startJail re-executes this binary as PID 1 of new user, mount, PID,
// network (unless shared), IPC and UTS namespaces, mapping root inside to
// the invoking uid and gid, and sends it the spec over an inherited pipe.
func startJail(s *jailSpec, w IO, masks *maskScan) (*jail, error) {
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return nil, &JailError{Step: "pipe", Err: err}
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		ctrlR.Close()
		ctrlW.Close()
		return nil, &JailError{Step: "pipe", Err: err}
	}
	layerR, layerW, err := socketPair()
	if err != nil {
		ctrlR.Close()
		ctrlW.Close()
		statR.Close()
		statW.Close()
		return nil, &JailError{Step: "socket pair", Err: err}
	}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if s.NewNet {
		flags |= unix.CLONE_NEWNET
	}
	pid1 := s.Binary
	if s.InitSelf {
		// The very binary running, even if its path was replaced since.
		pid1 = "/proc/self/exe"
	}
	cmd := &exec.Cmd{
		Path:       pid1,
		Args:       []string{"shadow", initArg},
		Env:        stageEnv,
		Stdin:      w.Stdin,
		Stdout:     w.Stdout,
		Stderr:     w.Stderr,
		ExtraFiles: []*os.File{ctrlR, statW, layerW},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
			// PID 1 stops the command and merges the run's layer before it
			// ends, even when shadow itself was killed.
			Pdeathsig: unix.SIGTERM,
		},
	}
	if cmd.Stdin == nil {
		cmd.Stdin = os.Stdin
	}
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// No descriptor of this process but stdio and the two pipes may reach
	// the jail, even one opened without O_CLOEXEC (runc CVE-2024-21626).
	closeExtraFDs(3)
	if err := cmd.Start(); err != nil {
		ctrlR.Close()
		ctrlW.Close()
		statR.Close()
		statW.Close()
		layerR.Close()
		layerW.Close()
		return nil, &JailError{Step: "namespaces", Err: fmt.Errorf("start %s: %w", cmd.Path, err)}
	}
	ctrlR.Close()
	statW.Close()
	layerW.Close()
	j := &jail{
		cmd: cmd, control: json.NewEncoder(ctrlW), ctrlW: ctrlW,
		status: json.NewDecoder(statR), statR: statR, layerSock: layerR,
	}
	// Compiled while PID 1 starts.
	if s.Seccomp, err = confine.Program(); err != nil {
		j.cleanup()
		return nil, &JailError{Step: "seccomp", Err: err}
	}
	s.Masked = masks.wait()
	if err := j.send(*s); err != nil {
		j.cleanup()
		return nil, &JailError{Step: "send jail spec", Err: err}
	}
	return j, nil
}

func (j *jail) send(v any) error { return j.control.Encode(v) }

func (j *jail) next() (event, error) {
	var m event
	err := j.status.Decode(&m)
	if errors.Is(err, io.EOF) {
		err = errors.New("PID 1 of the jail exited")
	}
	return m, err
}

// reported is the JailError for a failure PID 1 reported in m, under
// step def when it named none.
func reported(def string, m event) *JailError {
	f := stepFailure{Error: "PID 1 of the jail sent an unexpected message"}
	if m.Failed != nil {
		f = *m.Failed
	}
	if f.Step == "" {
		f.Step = def
	}
	return &JailError{Step: f.Step, Err: errors.New(f.Error)}
}

// terminate sends SIGTERM to the jail (PID 1 passes it to every process in
// it) and SIGKILL after grace; killing PID 1 kills the PID namespace.
func (j *jail) terminate(grace time.Duration) {
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	j.killer = time.AfterFunc(grace, func() { _ = j.cmd.Process.Kill() })
}

// socketPair is a connected pair of unix stream sockets, close-on-exec.
func socketPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "layer"), os.NewFile(uintptr(fds[1]), "layer"), nil
}

// receiveLayer takes the descriptor of the run's layer that PID 1 sent,
// if it sent one: nil otherwise (no checkpoints' layer, an older stage).
func (j *jail) receiveLayer() *os.File {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(j.layerSock.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil || oobn == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil
	}
	return os.NewFile(uintptr(fds[0]), "run layer")
}

// stopKiller cancels the SIGKILL that terminate scheduled.
func (j *jail) stopKiller() {
	if j.killer != nil {
		j.killer.Stop()
	}
}

// wait reaps PID 1.
func (j *jail) wait() unix.WaitStatus {
	if !j.waited {
		j.waited = true
		err := j.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			j.ws = unix.WaitStatus(ee.Sys().(syscall.WaitStatus))
		}
		if j.killer != nil {
			j.killer.Stop()
		}
	}
	return j.ws
}

// cleanup kills and reaps PID 1 if still running and stops the helpers.
func (j *jail) cleanup() {
	j.ctrlW.Close()
	if !j.waited {
		_ = j.cmd.Process.Kill()
		j.wait()
	}
	j.statR.Close()
	j.layerSock.Close()
	j.helper.stop()
	j.pub.close()
}

// openWorkDirs gives the invoking user back access to the overlay work
// directories: the kernel leaves work/work (and its incompat marker) mode
// 000, which an unprivileged user could not remove when a session is
// discarded. The next mount recreates them.
func openWorkDirs(mounts []mountSpec) {
	for _, m := range mounts {
		if m.Kind != mountOverlay {
			continue
		}
		openDirs(m.Work)
	}
}

// openDirs makes every directory under dir (and dir) accessible to its
// owner again.
func openDirs(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}

// makeRaw puts the user's terminal (stdin, nil: the process's) in raw mode
// while the jail relays it, and returns the function restoring it.
func makeRaw(stdin io.Reader) func() {
	f, ok := stdin.(*os.File)
	if stdin == nil {
		f, ok = os.Stdin, true
	}
	if !ok {
		return func() {}
	}
	old, err := term.MakeRaw(f.Fd())
	if err != nil {
		return func() {}
	}
	return func() { _ = term.Restore(f.Fd(), old) }
}

// warnings is where shadow's own warnings go.
func (w IO) warnings() io.Writer {
	if w.Warnings != nil {
		return w.Warnings
	}
	return orStderr(w.Stderr)
}

func orStderr(w io.Writer) io.Writer {
	if w == nil {
		return os.Stderr
	}
	return w
}
