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
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// landlockABI is the kernel's Landlock ABI; a variable so that a test can
// play a kernel without Landlock.
var landlockABI = confine.LandlockABI

// defaultKillGrace is the time between SIGTERM and SIGKILL when stopping.
const defaultKillGrace = 2 * time.Second

// Run runs argv in a jail built from p and returns how it ended. A jail that
// cannot be built returns a *JailError and the command is never started;
// the command is never run unsandboxed. Cancelling ctx stops the jail like
// a timeout does (SIGTERM, then SIGKILL): Result.StopReason says so.
func Run(ctx context.Context, p Policy, argv []string) (Result, error) {
	start := time.Now()
	res := Result{Network: "none"}
	if os.Geteuid() == 0 && landlockABI() == 0 {
		return res, &JailError{Step: "landlock", Err: errors.New(
			"the kernel offers no Landlock; shadow refuses to run as root without it (run it as a normal user)")}
	}
	root, err := os.MkdirTemp("", "shadow-root-")
	if err != nil {
		return res, &JailError{Step: "root mount point", Err: err}
	}
	defer os.Remove(root)
	runtimeDir := p.RuntimeDir
	if runtimeDir == "" {
		d, err := os.MkdirTemp("", "shadow-run-")
		if err != nil {
			return res, &JailError{Step: "runtime dir", Err: err}
		}
		defer os.RemoveAll(d)
		runtimeDir = d
	} else if runtimeDir, err = makeDir(runtimeDir); err != nil {
		return res, &JailError{Step: "runtime dir", Err: err}
	}
	s, err := prepare(p, argv, root)
	if err != nil {
		return res, err
	}
	s.RuntimeDir = runtimeDir
	// Walked while PID 1 starts: startJail waits for it to send the spec.
	masks := startSystemMasks(s.SystemDirs, newMaskStore(p.MaskCache))

	helper := ""
	s.NewNet = true
	if p.AllowNetwork {
		if helper = findNetHelper(); helper == "" {
			s.NewNet = false
			res.Network = "host"
			fmt.Fprintln(warnings(p), "shadow: WARNING: neither pasta nor slirp4netns is installed; "+
				"the jail SHARES THE HOST NETWORK (host services on 127.0.0.1 are reachable). "+
				"Install passt or slirp4netns.")
		}
	}

	sec, err := setUpSecrets(p, s, runtimeDir, warnings(p))
	if err != nil {
		return res, &JailError{Step: "secrets", Err: err}
	}
	if s.Proxy {
		np, err := startNetProxy(runtimeDir, p.AllowDomains, p.NetLog, sec)
		if err != nil {
			return res, &JailError{Step: "allow-list proxy", Err: err}
		}
		defer np.close()
		res.Network = "proxy"
	}
	j, err := startJail(s, p, masks)
	if err != nil {
		return res, err
	}
	// A stale mask cache is walked again while the jail runs; Run returns
	// once that is done and the jail is gone.
	defer masks.startRescan()()
	defer j.cleanup()
	defer openWorkDirs(s.Mounts)

	// Wait for the jail to be built.
	m, err := j.next()
	if err != nil {
		return res, &JailError{Step: "build", Err: err}
	}
	if !m.Ready {
		return res, reported("build", m)
	}
	// PID 1 holds the checkpoints' lock now: a command that finds this
	// shadow gone learns from the lock file whom it waits for.
	noteWriter(p.Checkpoints, j.cmd.Process.Pid)
	// PID 1 sent the run's layer before it said it is ready.
	if p.RunLayer != nil {
		if layer := j.receiveLayer(); layer != nil {
			p.RunLayer(layer)
			layer.Close()
		}
	}
	if helper != "" {
		h, err := startNetHelper(ctx, helper, j.cmd.Process.Pid, runtimeDir)
		if err != nil {
			return res, &JailError{Step: "network", Err: err}
		}
		j.helper = h
		res.Network = helper
	}
	if len(p.Publish) > 0 {
		pub, err := publish(p.Publish, filepath.Join(runtimeDir, publishSocket))
		if err != nil {
			return res, &JailError{Step: "publish", Err: err}
		}
		j.pub = pub
	}
	// Once: the terminal is the caller's again before Ended, which may change it.
	restore := sync.OnceFunc(makeRaw(p))
	defer restore()
	// ended records the command's end, once nothing of it runs any more, and reaps PID 1.
	ended := func() (Result, error) {
		restore()
		res.Duration = time.Since(start)
		if p.Ended != nil {
			p.Ended(res)
		}
		j.wait()
		return res, nil
	}
	if err := j.send(request{Go: true}); err != nil {
		return res, &JailError{Step: "start", Err: err}
	}
	m, err = j.next()
	if err != nil {
		return res, &JailError{Step: "start", Err: err}
	}
	if m.Started == nil {
		return res, reported("start", m)
	}
	res.LandlockABI = m.Started.Landlock
	if m.Started.ExecFailed != nil { // the command could not be executed
		res.ExitCode = *m.Started.ExecFailed
		return ended()
	}

	// Supervise: the exit message, a timeout, ctx.
	exitc := make(chan runEnd, 1)
	merging := make(chan struct{})
	go func() {
		for {
			m, err := j.next()
			if err != nil {
				close(exitc)
				return
			}
			if m.Merging {
				close(merging)
			}
			if m.Checkpointed != nil && p.Checkpointed != nil {
				p.Checkpointed(*m.Checkpointed)
			}
			if m.CheckpointError != "" {
				fmt.Fprintln(warnings(p), "shadow: checkpoint:", m.CheckpointError)
			}
			if m.CheckpointNote != "" {
				fmt.Fprintln(warnings(p), "shadow: checkpoints:", m.CheckpointNote)
			}
			if m.CheckpointAnswered != "" && p.CheckpointAnswered != nil {
				p.CheckpointAnswered(m.CheckpointAnswered)
			}
			if m.End != nil {
				exitc <- *m.End
				return
			}
		}
	}()
	if p.CheckpointRequests != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case t := <-p.CheckpointRequests:
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
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH)
	defer signal.Stop(sigs)
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
		res.StopReason = reason
		j.terminate(grace)
	}
	var final runEnd
	gotExit := false
loop:
	for {
		select {
		case m, ok := <-exitc:
			if ok {
				final, gotExit = m, true
			}
			break loop
		case <-timeout:
			res.TimedOut = true
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
	// The signals are the caller's again, Ended included.
	signal.Stop(sigs)
	if gotExit {
		// PID 1 reports the end once it has killed and reaped everything
		// else, and then exits: nothing in the jail writes any more.
		res.ExitCode = final.Exit
		res.Signal = final.Signal
		res.LayerBytes, res.LayerFull, res.StagingError = final.LayerBytes, final.LayerFull, final.StagingError
		return ended()
	}
	restore()
	ws := j.wait()
	res.Duration = time.Since(start)
	if ws.Signaled() {
		// PID 1 was killed (grace period over): so was everything in it.
		res.Signal = ws.Signal()
		res.ExitCode = 128 + int(ws.Signal())
	} else if !stopping {
		return res, &JailError{Step: "jail init", Err: fmt.Errorf("PID 1 of the jail ended without a status (%v)", ws)}
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	return res, nil
}

// jail is the host's handle on a running jail.
type jail struct {
	cmd     *exec.Cmd
	control *json.Encoder
	ctrlW   *os.File
	status  *json.Decoder
	statR   *os.File
	// layerSock receives the run's layer from PID 1 (see Policy.RunLayer).
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
func startJail(s *jailSpec, p Policy, masks *maskScan) (*jail, error) {
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
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"shadow", initArg},
		Env:        stageEnv,
		Stdin:      p.Stdin,
		Stdout:     p.Stdout,
		Stderr:     p.Stderr,
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

// makeRaw puts the user's terminal in raw mode while the jail relays it, and
// returns the function restoring it.
func makeRaw(p Policy) func() {
	f, ok := p.Stdin.(*os.File)
	if p.Stdin == nil {
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
func warnings(p Policy) io.Writer {
	if p.Warnings != nil {
		return p.Warnings
	}
	return orStderr(p.Stderr)
}

func orStderr(w io.Writer) io.Writer {
	if w == nil {
		return os.Stderr
	}
	return w
}
