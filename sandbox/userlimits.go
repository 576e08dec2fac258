package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Per-user kernel limits. The kernel counts inotify instances and watches,
// fanotify groups and marks, and namespaces per user and per user
// namespace (/proc/sys/user/max_*, "ucounts"): an object the command makes
// counts against its own namespace's limit, then its owner's in each
// namespace above, up to the host user's. Left alone, the jail's limits
// are unlimited and the command could take the whole of its host user's
// share: the host user's editor watchers and `tail -f` would fail while it
// holds them. So PID 1 sets the limits of the jail's user namespace, the
// one above the command's, which the command cannot change: it has no
// capability there, and /proc/sys is read-only in the jail. (The command's
// own namespace shows its own, unlimited, values: the jail's bind it
// anyway.)

// userLimitsDir is where the kernel shows the user namespace's limits.
const userLimitsDir = "/proc/sys/user"

// userLimits is what the jail may have of each limit, given the host's
// (the limit of the namespace shadow runs in). Counts of objects tools use
// get half the host's: node's and editors' watchers and `go` live well
// within 64 inotify instances and half of a modern kernel's watches
// (scaled to memory; about 100,000 on a 2 GB machine), and the other half
// stays the host user's. Namespaces: the command may create none (seccomp
// refuses it); the limit leaves room for the ones shadow makes after it is
// set, the command's user namespace and those pasta or slirp4netns make
// for their own sandbox once they join the jail's. A kernel with a limit this table lacks gets half the
// host's for it, and TestEscapeUserLimits fails until it is given a value.
var userLimits = map[string]func(host int64) int64{
	"max_inotify_instances": half,
	"max_inotify_watches":   half,
	"max_fanotify_groups":   half,
	"max_fanotify_marks":    half,
	"max_user_namespaces":   few,
	"max_pid_namespaces":    few,
	"max_uts_namespaces":    few,
	"max_ipc_namespaces":    few,
	"max_net_namespaces":    few,
	"max_mnt_namespaces":    few,
	"max_cgroup_namespaces": few,
	"max_time_namespaces":   few,
}

func half(host int64) int64 { return host / 2 }
func few(host int64) int64  { return min(host, 16) }

// jailUserLimits reads the host's limits in dir (userLimitsDir) and returns
// the jail's, by file name.
func jailUserLimits(dir string) (map[string]int64, error) {
	names, err := filepath.Glob(filepath.Join(dir, "max_*"))
	if err != nil || len(names) == 0 {
		return nil, nil // no user namespaces in this kernel: nothing to set
	}
	out := map[string]int64{}
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		host, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		rule, ok := userLimits[filepath.Base(p)]
		if !ok {
			rule = half
		}
		out[filepath.Base(p)] = rule(host)
	}
	return out, nil
}

// setUserLimits writes limits into dir, the jail's /proc/sys/user, as PID 1
// (root of the jail's user namespace) before /proc/sys is made read-only.
func setUserLimits(dir string, limits map[string]int64) error {
	for name, v := range limits {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strconv.FormatInt(v, 10)+"\n"), 0); err != nil {
			return fmt.Errorf("set the jail's %s to %d: %w", name, v, err)
		}
	}
	return nil
}
