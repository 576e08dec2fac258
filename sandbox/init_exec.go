package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// PID 1 starting the command: through the exec stage (execstage.c), which confines itself and
// execs it.

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
func startCommand(s *jailSpec, stdio *commandStdio, bpf []byte, confineSelf func() error) (startedCommand, error) {
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
	// The command's user namespace exists now, and the stage waits for its
	// spec before it does anything: PID 1 confines itself here, so that no
	// moment of the command finds PID 1 unfiltered.
	if err := confineSelf(); err != nil {
		specW.Close()
		errR.Close()
		unix.Kill(cmd.Process.Pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(cmd.Process.Pid, &ws, 0, nil)
		return none, err
	}
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
