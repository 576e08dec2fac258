package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The command runs as the same host uid as the jail's PID 1. The kernel
// lets such a process change PID 1's resource limits (a CPU limit of one
// second kills PID 1 under an output flood): the seccomp filter refuses
// prlimit64 on any pid but 0. The scheduling calls that could starve PID 1
// (nice 19, SCHED_IDLE, the idle I/O class, pinning) the kernel itself
// refuses, as PID 1 holds capabilities the command lacks; the test makes
// sure that stays so.

func init() {
	probes["prlimit"] = prlimitProbe
	probes["sched"] = schedProbe
}

// prlimitProbe reads PID 1's RLIMIT_CPU (allowed), tries to set it to one
// second, reads it again, then sets its own (pid 0: what setrlimit does).
func prlimitProbe() []string {
	var before, after unix.Rlimit
	get := errName(unix.Prlimit(1, unix.RLIMIT_CPU, nil, &before))
	set := errName(unix.Prlimit(1, unix.RLIMIT_CPU, &unix.Rlimit{Cur: 1, Max: before.Max}, nil))
	_ = unix.Prlimit(1, unix.RLIMIT_CPU, nil, &after)
	pid1 := "pid1-unchanged"
	if after != before {
		pid1 = fmt.Sprintf("pid1-cpu=%d", after.Cur)
	}
	self := unix.Rlimit{Cur: 3600, Max: before.Max}
	if self.Max < self.Cur {
		self.Cur = self.Max
	}
	setSelf := errName(unix.Prlimit(0, unix.RLIMIT_CPU, &self, nil))
	var now unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_CPU, &now)
	selfSet := "self-unchanged"
	if now == self {
		selfSet = "self-set"
	}
	return []string{"get-pid1=" + get, "set-pid1=" + set, pid1, "set-self=" + setSelf, selfSet}
}

// ioprioIdle is IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0).
const ioprioIdle = 3 << 13

// schedProbe tries to starve PID 1 each way the scheduler offers, then
// reports whether PID 1's nice value, policy, CPUs and I/O class changed.
func schedProbe() []string {
	state := func() string {
		nice, _ := unix.Getpriority(unix.PRIO_PROCESS, 1)
		policy, _, _ := unix.Syscall(unix.SYS_SCHED_GETSCHEDULER, 1, 0, 0)
		var cpus unix.CPUSet
		_ = unix.SchedGetaffinity(1, &cpus)
		prio, _, _ := unix.Syscall(unix.SYS_IOPRIO_GET, 1 /* IOPRIO_WHO_PROCESS */, 1, 0)
		return fmt.Sprintf("nice=%d policy=%d cpus=%d ioprio=%#x", nice, policy, cpus.Count(), prio)
	}
	before := state()
	_, _, e := unix.Syscall(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 1, 19)
	out := []string{"setpriority=" + errName(errnoOrNil(e))}
	_, _, e = unix.Syscall(unix.SYS_SETPRIORITY, unix.PRIO_USER, 0, 19)
	out = append(out, "setpriority-user="+errName(errnoOrNil(e)))
	param := struct{ prio int32 }{0}
	_, _, e = unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, 1, 5 /* SCHED_IDLE */, uintptr(unsafe.Pointer(&param)))
	out = append(out, "sched_setscheduler="+errName(errnoOrNil(e)))
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 5}
	out = append(out, "sched_setattr="+errName(unix.SchedSetAttr(1, &attr, 0)))
	var one unix.CPUSet
	one.Set(0)
	out = append(out, "sched_setaffinity="+errName(unix.SchedSetaffinity(1, &one)))
	_, _, e = unix.Syscall(unix.SYS_IOPRIO_SET, 1 /* IOPRIO_WHO_PROCESS */, 1, ioprioIdle)
	out = append(out, "ioprio_set="+errName(errnoOrNil(e)))
	_, _, e = unix.Syscall(unix.SYS_IOPRIO_SET, 3 /* IOPRIO_WHO_USER */, uintptr(os.Getuid()), ioprioIdle)
	out = append(out, "ioprio_set-user="+errName(errnoOrNil(e)))
	if after := state(); after != before {
		return append(out, "pid1 "+before+" became "+after)
	}
	return append(out, "pid1-unchanged")
}

// TestEscapePrlimitPID1: the command cannot set the jail's PID 1's limits,
// may still read them, and may still set its own.
func TestEscapePrlimitPID1(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	got := j.try(t, j.policy(), "prlimit")
	want := []string{"get-pid1=ok", "set-pid1=EPERM", "pid1-unchanged", "set-self=ok", "self-set"}
	if !slices.Equal(got, want) {
		t.Fatalf("prlimit in the jail: %v, want %v", got, want)
	}
}

// TestEscapeSchedulePID1: the command cannot lower PID 1's CPU or I/O
// priority, nor pin it, while nice, renice, taskset, chrt, ionice and
// ulimit on its own processes keep working.
func TestEscapeSchedulePID1(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	got := j.try(t, j.policy(), "sched")
	want := []string{"setpriority=EPERM", "setpriority-user=EPERM", "sched_setscheduler=EPERM",
		"sched_setattr=EPERM", "sched_setaffinity=EPERM", "ioprio_set=EPERM", "ioprio_set-user=EPERM", "pid1-unchanged"}
	if !slices.Equal(got, want) {
		t.Fatalf("scheduling PID 1 from the jail: %v, want %v", got, want)
	}
	// Control: the same tools on the command's own processes.
	script := strings.Join([]string{
		"nice -n 5 true", "taskset -c 0 true", "renice -n 3 -p $$ >/dev/null", "sleep 5 & renice -n 4 -p $! >/dev/null; kill $!",
		"chrt -i 0 true", "ionice -c 3 true", "prlimit --cpu=100 true", "ulimit -t 100", "echo done",
	}, " && ")
	res, out, errOut := j.run(t, j.policy(), "/bin/sh", "-c", script)
	if res.ExitCode != 0 || out != "done\n" {
		t.Fatalf("scheduling tools on the command's own processes: exit %d, stdout %q, stderr %q", res.ExitCode, out, errOut)
	}
}
