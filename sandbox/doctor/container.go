package doctor

import (
	"os"
	"path/filepath"
	"strings"
)

// Container is the container doctor runs in, if any: a container's runtime
// decides, with its seccomp profile, its AppArmor profile and the parts of
// /proc it masks, whether the jail can be built inside.
type Container struct {
	Kind     string `json:"kind"`     // "docker", "podman", "kubernetes", "lxc", or "container" when the engine is unknown
	Evidence string `json:"evidence"` // what showed it, e.g. "/run/.containerenv"
}

// detectContainer looks for the marks container engines leave, under root
// (/ on a real host; a test passes a directory of its own), and in the
// environment that getenv reads.
func detectContainer(root string, getenv func(string) string) *Container {
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(root, p)); return err == nil }
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(root, p))
		return strings.TrimSpace(string(b))
	}
	cgroup := read("proc/1/cgroup")
	// Kubernetes first: its pods run under docker, containerd or cri-o, and the remedy is the
	// pod's securityContext, not the engine's flags.
	switch {
	case getenv("KUBERNETES_SERVICE_HOST") != "":
		return &Container{"kubernetes", "KUBERNETES_SERVICE_HOST is set"}
	case strings.Contains(cgroup, "kubepods"):
		return &Container{"kubernetes", "/proc/1/cgroup names kubepods"}
	case exists("run/.containerenv"):
		return &Container{"podman", "/run/.containerenv"}
	case exists(".dockerenv"):
		return &Container{"docker", "/.dockerenv"}
	}
	for _, src := range []struct{ value, evidence string }{
		{getenv("container"), "container=" + getenv("container")},
		{read("run/systemd/container"), "/run/systemd/container"},
	} {
		if src.value != "" {
			return &Container{engineName(src.value), src.evidence}
		}
	}
	for _, m := range []struct{ mark, kind string }{{"libpod", "podman"}, {"docker", "docker"}, {"lxc", "lxc"}, {"containerd", "container"}} {
		if strings.Contains(cgroup, m.mark) {
			return &Container{m.kind, "/proc/1/cgroup names " + m.mark}
		}
	}
	return nil
}

// engineName maps what $container or /run/systemd/container says to a Kind.
func engineName(v string) string {
	switch v = strings.ToLower(v); {
	case strings.HasPrefix(v, "podman"):
		return "podman"
	case strings.HasPrefix(v, "docker"):
		return "docker"
	case strings.HasPrefix(v, "lxc"):
		return "lxc"
	}
	return "container"
}

// problem is what a container's runtime denies the jail.
type problem int

const (
	problemSeccomp problem = iota // a seccomp profile refuses unshare/clone(CLONE_NEWUSER), mount or sethostname
	problemProc                   // /proc is partly masked or read-only: no new /proc in a user namespace
)

// fix is the option of the container's engine that lifts problem p, with
// why; the engine's run line (or the pod's securityContext) takes it.
type fix struct {
	option string // "--security-opt seccomp=unconfined", or a securityContext line
	why    string
}

// containerFixes are the options that lift p in a container of kind k: what
// the engine's run line, or the pod spec, must say.
func containerFixes(k string, p problem) []fix {
	switch k {
	case "docker":
		if p == problemProc {
			return []fix{{"--security-opt systempaths=unconfined", "Docker masks /proc/kcore, /proc/keys, … and mounts /proc/sys read-only; the kernel lets a user namespace mount a new /proc only where the container's is not partly covered"}}
		}
		return []fix{
			{"--security-opt seccomp=unconfined", "Docker's default seccomp profile refuses clone and unshare of new namespaces, and mount, to a container without CAP_SYS_ADMIN (or a profile of your own that allows them; --cap-add SYS_ADMIN is not needed, and gives the container far more)"},
			{"--security-opt apparmor=unconfined", "on a host with AppArmor, the docker-default profile denies mount"},
		}
	case "podman":
		if p == problemProc {
			return []fix{{"--security-opt 'unmask=/proc/*'", "podman masks /proc/kcore, /proc/keys, … and mounts /proc/sys read-only; the kernel lets a user namespace mount a new /proc only where the container's is not partly covered (unmask=ALL does it too)"}}
		}
		return []fix{{"--security-opt seccomp=unconfined", "podman's default seccomp profile refuses sethostname (and, as a rootless container's, unshare) to a container without CAP_SYS_ADMIN; --privileged works too, and gives the container every capability"}}
	case "kubernetes":
		if p == problemProc {
			return []fix{{"securityContext.procMount: Unmasked", "the runtime masks parts of /proc; Unmasked needs the pod's hostUsers: false (a user namespace for the pod)"}}
		}
		return []fix{
			{"securityContext.seccompProfile.type: Unconfined", "the runtime's default seccomp profile refuses unshare, mount and sethostname without CAP_SYS_ADMIN"},
			{"securityContext.appArmorProfile.type: Unconfined", "on nodes with AppArmor, the runtime's default profile denies mount"},
		}
	}
	if p == problemProc {
		return []fix{{"an unmasked /proc", "the container's /proc is partly masked or read-only, and the kernel lets a user namespace mount a new /proc only where it is not"}}
	}
	return []fix{{"an unconfined seccomp profile", "the container's seccomp profile refuses unshare, mount or sethostname"}}
}

// containerRemedy is the remedy text for problems in container c: each
// option that lifts one on a line, with why.
func containerRemedy(c *Container, problems ...problem) string {
	var b strings.Builder
	b.WriteString("# in a " + c.Kind + " container (" + c.Evidence + "): start it with")
	for _, p := range problems {
		for _, f := range containerFixes(c.Kind, p) {
			b.WriteString("\n" + f.option + "    # " + f.why)
		}
	}
	return b.String()
}

// containerRunLine is the whole set of options for the problems found, as
// the engine's run line (or the securityContext lines of a pod).
func containerRunLine(c *Container, problems []problem) string {
	seen := map[string]bool{}
	var opts []string
	for _, p := range []problem{problemSeccomp, problemProc} {
		found := false
		for _, q := range problems {
			found = found || q == p
		}
		if !found {
			continue
		}
		for _, f := range containerFixes(c.Kind, p) {
			if !seen[f.option] {
				seen[f.option] = true
				opts = append(opts, f.option)
			}
		}
	}
	if len(opts) == 0 {
		return ""
	}
	switch c.Kind {
	case "docker", "podman":
		return c.Kind + " run " + strings.Join(opts, " ") + " …"
	}
	return strings.Join(opts, ", ")
}
