//go:build !shadowinit

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// TunDevice is the device pasta and slirp4netns open, once inside the jail's user and network
// namespaces, to give the jail --allow-network. In the jail's user namespace the invoker has no
// more right to a device owned by root than outside it, so the device's mode decides: 0666 on
// most distributions, and nothing works at 0600.
const TunDevice = "/dev/net/tun"

// TunError says why the invoking user cannot use the tun device, and how to fix it.
type TunError struct {
	Path  string
	Cause string // what is wrong, e.g. "is mode 0600 (owner root), so uid 1000 may not open it"
	Fix   string // one command that fixes it now
	Keep  string // one command that keeps the fix across reboots, or ""
	Err   error
}

// Error is one line: the device, the cause, and the command that fixes it.
func (e *TunError) Error() string {
	return fmt.Sprintf("%s %s, and --allow-network needs it: %s", e.Path, e.Cause, e.Fix)
}

// Unwrap returns the error of the open or ioctl that failed.
func (e *TunError) Unwrap() error { return e.Err }

// CheckTun opens the tun device at path for reading and writing, as pasta and slirp4netns do,
// and returns a *TunError when this process may not. It needs no namespace: opening is decided by
// the device's mode alone (creating an interface on it is tried by OpenTap, in a namespace).
func CheckTun(path string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return TunProblem(path, err)
	}
	unix.Close(fd)
	return nil
}

// OpenTap opens the tun device at path and creates a tap interface on it, as pasta does in the
// jail's network namespace; the caller must have CAP_NET_ADMIN over the current network namespace
// (shadow doctor runs it in a new user and network namespace). The interface goes when it returns.
func OpenTap(path string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return TunProblem(path, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("shadowtap0")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return &TunError{Path: path, Err: err,
			Cause: "opens, but creating a tap interface on it fails (TUNSETIFF: " + err.Error() + ")",
			Fix:   "check that no security module (SELinux, AppArmor, a container's seccomp profile) denies TUNSETIFF in a user namespace"}
	}
	return nil
}

// TunProblem explains err, from opening the tun device at path, as a *TunError with the fix.
func TunProblem(path string, err error) *TunError {
	te := &TunError{Path: path, Err: err}
	switch {
	case errors.Is(err, unix.ENOENT):
		te.Cause = "does not exist"
		te.Fix = "sudo modprobe tun (in a container, give it the device: docker run --device /dev/net/tun)"
	case errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO):
		te.Cause = "has no driver (the tun module is not loaded)"
		te.Fix = "sudo modprobe tun"
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		te.Cause = "may not be opened by uid " + strconv.Itoa(os.Getuid())
		if fi, serr := os.Stat(path); serr == nil {
			owner := "uid " + strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid))
			if u, uerr := user.LookupId(strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid))); uerr == nil {
				owner = u.Username
			}
			te.Cause = fmt.Sprintf("is mode %04o (owner %s), so uid %d may not open it", fi.Mode().Perm(), owner, os.Getuid())
		}
		te.Fix = "sudo chmod 0666 " + path
		te.Keep = `echo 'KERNEL=="tun", MODE="0666"' | sudo tee /etc/udev/rules.d/60-tun.rules`
	default:
		te.Cause = "cannot be opened (" + err.Error() + ")"
		te.Fix = "check that the kernel has CONFIG_TUN and that " + path + " is its device (character 10,200)"
	}
	return te
}
