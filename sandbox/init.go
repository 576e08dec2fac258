package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// Hidden first arguments of the re-executed stages.
const (
	initArg = "__shadow-init" // PID 1 of the jail
	execArg = "__shadow-exec" // confines itself and execs the command (execstage.c, before Go starts)
)

// Inherited descriptors of both stages: control messages in, status out.
const (
	controlFD = 3
	statusFD  = 4
	layerFD   = 5 // PID 1 only: a socket to send the host the run's layer on
)

// IsReexec reports whether this process is the jail's PID 1 stage (the exec
// stage never reaches Go code).
// cmd/shadow's main (and TestMain of tests that build jails) must call it
// first and, if true, call ReexecMain.
func IsReexec() bool {
	return len(os.Args) > 1 && os.Args[1] == initArg
}

// ReexecMain runs the jail stage named by os.Args[1]. It never returns.
func ReexecMain() {
	if os.Args[1] == initArg {
		initMain()
	}
	os.Exit(125)
}

// initMain is PID 1 of the jail: it builds the root, waits for the host to
// finish the network, starts the command, then relays, reaps and reports.
func initMain() {
	// Landlock domains are per thread: psx restricts every thread, but each
	// gets a domain of its own, and Landlock lets a process signal only
	// processes of its own domain or of domains nested in it. The command's
	// domain nests in the domain of the thread that forks it, so that same
	// thread must send every later signal: this goroutine, locked to it.
	runtime.LockOSThread()
	// Nothing but stdio and our two pipes may survive into the command.
	closeExtraFDs(layerFD + 1)
	unix.CloseOnExec(controlFD)
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(layerFD)
	p := &pid1{
		control: json.NewDecoder(os.NewFile(controlFD, "control")),
		status:  json.NewEncoder(os.NewFile(statusFD, "status")),
		writer:  -1,
	}
	if err := readSpec(p.control, &p.s); err != nil {
		p.fail("read jail spec", err)
	}
	// SIGCHLD must be caught before any child exists.
	p.sigs = make(chan os.Signal, 32)
	signal.Notify(p.sigs, unix.SIGCHLD, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH)
	p.build()
	if err := p.status.Encode(event{Ready: true}); err != nil {
		os.Exit(125)
	}
	var goReq request
	if err := p.control.Decode(&goReq); err != nil || !goReq.Go {
		os.Exit(125) // the host went away
	}
	cmd := p.startConfined()
	p.stdio.relay()
	if cmd.execFailed != nil {
		// The command could not be executed (not found, not executable);
		// the exec stage said why on the command's stderr.
		p.stdio.drain()
		_ = p.status.Encode(event{Started: &commandStarted{ExecFailed: cmd.execFailed}})
		os.Exit(*cmd.execFailed)
	}
	_ = p.status.Encode(event{Started: &commandStarted{Landlock: cmd.abi}})
	if p.publish != nil {
		go servePublish(p.publish, p.s.Publish)
	}
	cps := newCheckpointer(p.layer, p.s.Checkpoints, p.control, p.status)
	code, sig := supervise(cmd.pid, p.sigs, p.stdio.master, cps)
	p.stdio.drain()
	p.end(code, sig, cps)
}

// readSpec reads the jail spec from d. PID 1 may be another file than
// shadow (shadow-init): a field it does not know says the two come from
// different builds, and PID 1 does not build a jail it half understands.
func readSpec(d *json.Decoder, s *jailSpec) error {
	d.DisallowUnknownFields()
	err := d.Decode(s)
	if err != nil && strings.HasPrefix(err.Error(), "json: unknown field") {
		return fmt.Errorf("%w: the jail's PID 1 is an older build than shadow (install shadow and %s from one build)", err, InitProgram)
	}
	return err
}

// pid1 is PID 1's state, from the spec to the run's end.
type pid1 struct {
	s       jailSpec
	control *json.Decoder // the host's requests
	status  *json.Encoder // PID 1's events
	sigs    chan os.Signal
	layer   *runLayer    // the run's layer; nil without one
	writer  int          // the checkpoints' lock, held until PID 1 ends (-1: none)
	publish net.Listener // where the host relays published ports; nil for none
	stdio   *commandStdio
}

// fail reports the step that failed to the host and ends PID 1.
func (p *pid1) fail(step string, err error) {
	var je *JailError
	if errors.As(err, &je) {
		step, err = je.Step, je.Err
	}
	_ = p.status.Encode(event{Failed: &stepFailure{Step: step, Error: err.Error()}})
	os.Exit(125)
}

// build builds the jail's root (buildRoot), takes the checkpoints' lock,
// hands the host the run's layer, and readies what the command's start
// needs: the hostname, the loopback, the proxy's port, the publish socket,
// the command's stdio.
func (p *pid1) build() {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		p.fail("RLIMIT_CORE", err)
	}
	var err error
	p.layer, err = buildRoot(&p.s)
	if err != nil {
		p.fail("", err)
	}
	if p.layer != nil && p.layer.checkpoints >= 0 {
		if p.writer, err = lockWriter(p.layer.checkpoints); err != nil {
			p.fail("", err)
		}
	}
	if p.layer != nil {
		// The host watches the run's layer while the run goes (the session's precapture).
		_ = unix.Sendmsg(layerFD, []byte{'L'}, unix.UnixRights(p.layer.upper), nil, 0)
	}
	unix.Close(layerFD)
	if err := unix.Sethostname([]byte("shadow")); err != nil {
		p.fail("hostname", err)
	}
	if p.s.NewNet {
		if err := bringUpLoopback(); err != nil {
			p.fail("loopback", err)
		}
	}
	if p.s.Proxy {
		ln, port, err := listenProxyPort()
		if err != nil {
			p.fail("proxy port", err)
		}
		p.s.Exec.Env = proxyEnv(p.s.Exec.Env, port)
		// Before the command exists: the first listeners the host gets are
		// PID 1's.
		relays := listenLoopbackRelays(p.s.LoopbackRelays)
		if err := handOffProxyListener(ln, relays, jailRuntimeDir+"/"+proxySocket); err != nil {
			p.fail("proxy hand-off", err)
		}
	}
	if len(p.s.Publish) > 0 {
		ln, err := net.Listen("unix", jailRuntimeDir+"/"+publishSocket)
		if err != nil {
			p.fail("publish socket", err)
		}
		p.publish = ln
	}
	if p.stdio, err = newCommandStdio(); err != nil {
		p.fail("command stdio", err)
	}
}

// startConfined confines PID 1 (non-dumpable, its Landlock domain, the
// seccomp filter) around the start of the command, which the exec stage
// confines further.
func (p *pid1) startConfined() startedCommand {
	if err := confine.SetNonDumpable(); err != nil {
		p.fail("non-dumpable", err)
	}
	// PID 1 confines itself before starting the command, so that the
	// command's Landlock domain nests in PID 1's and PID 1 may still signal
	// it (Landlock scopes signals to the domain and its children).
	if p.layer != nil {
		p.layer.argv, p.layer.command = p.s.Exec.Argv, p.s.Checkpoints.Command
		read, write := p.layer.rules()
		p.s.InitRules.ReadOnly = append(p.s.InitRules.ReadOnly, read...)
		p.s.InitRules.ReadWrite = append(p.s.InitRules.ReadWrite, write...)
	}
	if _, err := confine.RestrictFiles(p.s.InitRules); err != nil {
		p.fail("landlock (init)", err)
	}
	// One filter, compiled by the host: its program confines the command,
	// and PID 1 loads it. The filter forbids creating namespaces, so PID 1
	// loads it once the nested user namespace of the command exists, and
	// before the command's stage goes on (startCommand).
	var selfErr error
	loaded := false
	confineSelf := func() error {
		loaded, selfErr = true, confine.LoadProgram(p.s.Seccomp)
		return selfErr
	}
	cmd, err := startCommand(&p.s, p.stdio, p.s.Seccomp, confineSelf)
	if !loaded {
		// The command never started (not found): PID 1 is confined all the same.
		_ = confineSelf()
	}
	if selfErr != nil {
		unix.Kill(-1, unix.SIGKILL)
		p.fail("seccomp (init)", selfErr)
	}
	if err != nil {
		p.fail("start command", err)
	}
	return cmd
}

// end takes the run's last checkpoint and merges its layer into the
// staging layer, then reports the end to the host and exits with code.
func (p *pid1) end(code int, sig syscall.Signal, cps *checkpointer) {
	end := runEnd{Exit: code, Signal: sig}
	if p.layer != nil {
		// Nothing writes to the layer any more. The host must not kill PID 1
		// while it takes the last checkpoint and merges.
		_ = p.status.Encode(event{Merging: true})
		signal.Ignore(unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT)
		end.LayerBytes, end.LayerFull = p.layer.usage()
		cpErr := errors.Join(cps.take(CheckpointRunEnd), cps.failed)
		if cpErr == nil {
			// Everything the run wrote is in its checkpoints: a merge cut
			// short here is done again by the next command.
			markWritten(p.writer)
		}
		if err := p.layer.finish(p.s.Checkpoints.Next, cpErr); err != nil {
			end.StagingError = err.Error()
		} else if cpErr != nil {
			markWritten(p.writer)
		}
	}
	_ = p.status.Encode(event{End: &end})
	os.Exit(code)
}

// supervise reaps every child (PID 1 inherits orphans), forwards signals,
// and when the command ends kills what is left of the jail. It returns the
// exit status to report. SIGTERM and SIGHUP (the host stopping the jail, or
// dying: they are PID 1's parent-death signal) go to every process, and
// SIGKILL follows after the grace period, so that PID 1 always gets to
// merge the run's layer. Signals are sent from this thread only (see
// initMain).
func supervise(cmdPid int, sigs chan os.Signal, master *os.File, cps *checkpointer) (int, syscall.Signal) {
	var escalate <-chan time.Time
	for {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-escalate:
			unix.Kill(-1, unix.SIGKILL)
			escalate = nil
			continue
		case req := <-cps.requests:
			trigger, prompt := SplitRequest(req)
			_ = cps.take(trigger)
			if prompt != "" {
				// What is written from now on answers this prompt.
				cps.prompt = prompt
			}
			cps.answer(trigger)
			continue
		case <-cps.tick:
			cps.poll()
			continue
		}
		switch sig {
		case unix.SIGCHLD:
			if ws, done := reap(cmdPid); done {
				// Whatever the command left behind goes with it.
				unix.Kill(-1, unix.SIGKILL)
				for {
					var w unix.WaitStatus
					if _, err := unix.Wait4(-1, &w, 0, nil); err != nil {
						break
					}
				}
				if ws.Signaled() {
					return 128 + int(ws.Signal()), ws.Signal()
				}
				return ws.ExitStatus(), 0
			}
		case unix.SIGWINCH:
			if master != nil {
				resizePTY(master)
			}
		case unix.SIGTERM, unix.SIGHUP:
			unix.Kill(-1, sig.(syscall.Signal))
			if escalate == nil {
				escalate = time.After(defaultKillGrace)
			}
		default:
			unix.Kill(-cmdPid, sig.(syscall.Signal))
		}
	}
}

// reap collects every exited child; done is set when the command is one.
func reap(cmdPid int) (unix.WaitStatus, bool) {
	var cmdStatus unix.WaitStatus
	done := false
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return cmdStatus, done
		}
		if pid == cmdPid {
			cmdStatus, done = ws, true
		}
	}
}

// closeExtraFDs marks every descriptor from first up close-on-exec, so that
// no host file or directory descriptor reaches the command (the runc
// CVE-2024-21626 class of escape).
func closeExtraFDs(first int) {
	if err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: walk /proc/self/fd.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
}

// bringUpLoopback sets lo up in the jail's network namespace, so that
// servers the command starts on 127.0.0.1 work.
func bringUpLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// stageEnv is the whole environment of the jail's own stages: one P is
// plenty for them, and fewer runtime threads make the all-thread
// operations (Landlock, capabilities) cheaper.
var stageEnv = []string{"GOMAXPROCS=1"}
