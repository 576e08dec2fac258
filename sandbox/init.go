package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
	"github.com/shadow-sandbox/shadow/sandbox/termfilter"
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
	if err := p.control.Decode(&p.s); err != nil {
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
	// One filter: its program confines the command, and PID 1 loads it.
	filter, err := confine.NewFilter()
	if err != nil {
		p.fail("seccomp (init)", err)
	}
	bpf, err := filter.Program()
	if err != nil {
		p.fail("command filter", err)
	}
	cmd, err := startCommand(&p.s, p.stdio, bpf)
	if err != nil {
		p.fail("start command", err)
	}
	// The filter forbids creating namespaces, so it comes after the nested
	// user namespace of the command exists.
	if err := filter.Load(); err != nil {
		unix.Kill(-1, unix.SIGKILL)
		p.fail("seccomp (init)", err)
	}
	filter.Release()
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

// commandStdio is what the command gets as descriptors 0, 1 and 2, and how
// PID 1 relays them.
type commandStdio struct {
	files  [3]*os.File     // the command's ends
	master *os.File        // the pty's master, when the command has a terminal
	relays []func()        // started once the command runs
	done   []chan struct{} // closed when an output relay has drained
}

// newCommandStdio gives the command a pty of the jail's own devpts when any
// of PID 1's standard streams is a terminal. Otherwise the command gets
// PID 1's pipes and sockets as they are, and a relayed pipe in place of
// anything else (a host file, the host's /dev/null): a host file can be
// neither reopened through /dev/stdout under Landlock (its path is outside
// the jail) nor should it be in the jail's hands.
func newCommandStdio() (*commandStdio, error) {
	c := &commandStdio{}
	if isTerminal(0) || isTerminal(1) || isTerminal(2) {
		m, sl, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("allocate pty: %w", err)
		}
		c.master = m
		c.files = [3]*os.File{sl, sl, sl}
		resizePTY(m)
		c.relays = append(c.relays, func() { c.done = append(c.done, relayPTY(m)) })
		return c, nil
	}
	host := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	for fd, f := range host {
		if isPipeOrSocket(fd) {
			c.files[fd] = f
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("pipe for fd %d: %w", fd, err)
		}
		if fd == 0 {
			c.files[0] = r
			c.relays = append(c.relays, func() {
				go func() {
					_, _ = io.Copy(w, f)
					w.Close()
				}()
			})
			continue
		}
		c.files[fd] = w
		done := make(chan struct{})
		c.done = append(c.done, done)
		c.relays = append(c.relays, func() {
			go func() {
				defer close(done)
				_, _ = io.Copy(f, r)
			}()
		})
	}
	return c, nil
}

// relay closes PID 1's copies of the command's ends and starts relaying.
func (c *commandStdio) relay() {
	host := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	for fd, f := range c.files {
		if f != host[fd] && (fd == 0 || f != c.files[fd-1]) {
			f.Close()
		}
	}
	for _, r := range c.relays {
		r()
	}
}

// drain waits (a little) for the command's last output to be relayed (the
// pty's relay ends by undoing the terminal modes the command left set).
func (c *commandStdio) drain() {
	timeout := time.After(time.Second)
	for _, d := range c.done {
		select {
		case <-d:
		case <-timeout:
		}
	}
}

// isPipeOrSocket reports whether fd is a pipe or a socket.
func isPipeOrSocket(fd int) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	t := st.Mode & unix.S_IFMT
	return t == unix.S_IFIFO || t == unix.S_IFSOCK
}

// startedCommand is the command once the exec stage is done with it.
type startedCommand struct {
	pid        int  // in the jail's PID namespace
	abi        int  // Landlock ABI it is confined with
	execFailed *int // exit status when it could not be executed at all
}

// startCommand starts the exec stage in a nested user namespace that maps
// the invoking uid and gid (as the host sees them) to PID 1's root, so that
// `id -u` in the jail is the host uid, and waits until it has confined
// itself and exec'd the command (or failed to). The stage is C code run
// before the Go runtime (execstage.c); PID 1 does for it what needs Go:
// finding the executable, building the Landlock ruleset; bpf is the seccomp
// program it loads.
func startCommand(s *jailSpec, stdio *commandStdio, bpf []byte) (startedCommand, error) {
	var none startedCommand
	path, err := lookPath(s.Exec.Argv[0], lookupEnv(s.Exec.Env, "PATH"))
	if err != nil {
		fmt.Fprintf(stdio.files[2], "shadow: %v\n", err)
		code := 127
		return startedCommand{execFailed: &code}, nil
	}
	rulesetFD, abi, err := confine.Ruleset(s.Exec.Rules)
	if err != nil {
		return none, &JailError{Step: "landlock", Err: err}
	}
	if abi == 0 && s.HostUID == 0 {
		return none, &JailError{Step: "landlock", Err: errors.New("the kernel has no Landlock; shadow refuses to run a command as root without it")}
	}
	extra := []*os.File{nil, nil, nil}
	if rulesetFD >= 0 {
		ruleset := os.NewFile(uintptr(rulesetFD), "landlock ruleset")
		defer ruleset.Close()
		extra[2] = ruleset
	}
	spec, err := encodeExecSpec(path, s.Exec.Argv, s.Exec.Env, abi, bpf)
	if err != nil {
		return none, &JailError{Step: "command spec", Err: err}
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return none, fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return none, fmt.Errorf("pipe: %w", err)
	}
	extra[0], extra[1] = specR, errW
	if extra[2] == nil {
		extra = extra[:2]
	}
	cmd := &exec.Cmd{
		Path:       jailInitBinary,
		Args:       []string{"shadow", execArg},
		Env:        stageEnv,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: s.HostUID, HostID: 0, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: s.HostGID, HostID: 0, Size: 1}},
			// The exec stage needs CAP_SETPCAP to empty the bounding set and
			// lock the securebits; a non-root uid loses every capability at
			// exec otherwise. It drops it again before exec'ing the command.
			AmbientCaps: []uintptr{unix.CAP_SETPCAP},
			Setsid:      true,
			Pdeathsig:   unix.SIGKILL,
		},
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.files[0], stdio.files[1], stdio.files[2]
	if stdio.master != nil {
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	}
	if err := cmd.Start(); err != nil {
		return none, fmt.Errorf("exec %s: %w", jailInitBinary, err)
	}
	specR.Close()
	errW.Close()
	// The spec may be larger than a pipe holds: the stage reads it while it
	// is written.
	_, werr := specW.Write(spec)
	specW.Close()
	pid := cmd.Process.Pid
	// The exec stage reports the Landlock ABI, then either exec succeeds
	// (the pipe closes on exec) or it reports why it failed.
	dec := json.NewDecoder(errR)
	confined := false
	for {
		var m stageReport
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m.Confined {
			abi, confined = m.Landlock, true
		}
		if m.Error != "" {
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
			if m.Exit != nil {
				return startedCommand{execFailed: m.Exit}, nil
			}
			return none, &JailError{Step: m.Step, Err: errors.New(m.Error)}
		}
	}
	errR.Close()
	if !confined {
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		if werr != nil {
			return none, &JailError{Step: "exec stage", Err: fmt.Errorf("send command spec: %w", werr)}
		}
		return none, &JailError{Step: "exec stage", Err: fmt.Errorf("ended before confining the command (%v)", ws)}
	}
	return startedCommand{pid: pid, abi: abi}, nil
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

// checkpointer takes the run's checkpoints in PID 1: when the host asks,
// when the layer was written and then stayed quiet, and at the end. A nil
// checkpointer (no layer, or checkpoints off) takes none.
type checkpointer struct {
	layer    *runLayer
	status   *json.Encoder
	requests chan string
	tick     <-chan time.Time
	quiet    time.Duration
	sig      [2]uint64 // the layer's use at the last poll
	dirty    time.Time // when a write was first seen since the last checkpoint
	last     time.Time // when the layer last changed
	failed   error     // a checkpoint that could not be written
	budget   *historyBudget
	prompt   string // the last prompt submitted: the one the next checkpoint answers
}

func newCheckpointer(layer *runLayer, cp checkpointSpec, control *json.Decoder, status *json.Encoder) *checkpointer {
	if layer == nil {
		return &checkpointer{}
	}
	c := &checkpointer{layer: layer, status: status, requests: make(chan string, 4), quiet: time.Duration(cp.Quiet)}
	if c.quiet == 0 {
		c.quiet = 3 * time.Second
	}
	if cp.Dir == "" {
		c.quiet = -1 // no checkpoints; a layer on disk is still polled for its size
	}
	if c.quiet > 0 || (layer.onDisk && layer.limit > 0) {
		c.tick = time.NewTicker(time.Second).C
	}
	if c.quiet > 0 {
		c.budget = newHistoryBudget(layer, cp.Budget)
	}
	// Measured from before the command started: a write at once, then
	// quiet, still takes a quiet checkpoint.
	c.sig = layer.fresh
	go func() {
		// The host's requests; the control pipe closes when the host goes.
		for {
			var m request
			if err := control.Decode(&m); err != nil {
				return
			}
			if m.Checkpoint != "" {
				c.requests <- m.Checkpoint
			}
		}
	}()
	return c
}

// take writes a checkpoint and tells the host what it wrote. A failure is
// reported, and remembered: the run's end then merges the run's layer
// itself rather than its checkpoints.
func (c *checkpointer) take(trigger string) error {
	if c.layer == nil {
		return nil
	}
	cp, err := c.layer.checkpoint(trigger, c.prompt)
	c.dirty = time.Time{}
	if err != nil {
		c.failed = err
		_ = c.status.Encode(event{CheckpointError: err.Error()})
		return err
	}
	if cp != nil {
		if c.budget != nil {
			c.budget.wrote(c.layer, cp)
		}
		_ = c.status.Encode(event{Checkpointed: cp})
	}
	return nil
}

// poll takes a quiet checkpoint once the layer changed and then stayed
// unchanged for the quiet period, and stops a run whose layer on disk
// passed its size (a tmpfs layer needs no poll: the kernel refuses).
func (c *checkpointer) poll() {
	if c.layer.tooLarge() {
		unix.Kill(-1, unix.SIGKILL)
	}
	now := time.Now()
	if c.layer.changed(&c.sig) {
		c.last = now
		if c.dirty.IsZero() {
			c.dirty = now
		}
		return
	}
	if c.quiet > 0 && !c.dirty.IsZero() && now.Sub(c.last) >= c.quiet {
		if ok, note := c.budget.allowQuiet(c.layer); !ok {
			c.dirty = time.Time{}
			if note != "" {
				_ = c.status.Encode(event{CheckpointNote: note})
			}
			return
		}
		c.take(CheckpointQuiet)
	}
}

// answer tells the host that the checkpoint it asked for is done: written
// (its message went first) or not needed. The app holds the key that asked
// for it until then, so that the checkpoint holds nothing the key caused.
func (c *checkpointer) answer(trigger string) {
	if c.status != nil {
		_ = c.status.Encode(event{CheckpointAnswered: trigger})
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

// relayPTY copies the user's input to the pty and the pty's output, through
// the terminal filter, to the user, then undoes the modes the command left
// set on the user's terminal. The returned channel closes when that is done.
func relayPTY(master *os.File) chan struct{} {
	go func() { _, _ = io.Copy(master, os.Stdin) }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := termfilter.New(os.Stdout)
		f.AnswerTo(master) // DA1, which the filter drops and programs wait on
		_, _ = io.Copy(f, master)
		_ = f.Flush()
		// Only what the command left set: a reset it did not need has
		// effects of its own (ESC[?1049l off the alternate screen puts the
		// cursor back where an earlier program saved it, in tmux and
		// xterm, and what follows is written over the command's output).
		if isTerminal(1) {
			_, _ = os.Stdout.Write(f.Restore())
		}
	}()
	return done
}

// resizePTY gives the pty the size of the user's terminal.
func resizePTY(master *os.File) {
	for _, fd := range []int{0, 1, 2} {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil && ws.Row > 0 {
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, ws)
			return
		}
	}
}

// lookPath finds cmd like a shell would, in the jail's view.
func lookPath(cmd, path string) (string, error) {
	if cmd == "" {
		return "", errors.New("empty command")
	}
	if strings.Contains(cmd, "/") {
		return cmd, nil
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "." // an empty PATH entry is the current directory
		}
		p := dir + "/" + cmd
		if err := unix.Access(p, unix.X_OK); err == nil {
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s: command not found", cmd)
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

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
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
