package doctor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureRoot writes files (path relative to the root → content) under a new directory.
func fixtureRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestDetectContainer gives detectContainer a root and an environment with each mark an engine
// leaves, alone, and a host with none.
func TestDetectContainer(t *testing.T) {
	for _, c := range []struct {
		name     string
		files    map[string]string
		env      map[string]string
		kind     string
		evidence string
	}{
		{"host", map[string]string{"proc/1/cgroup": "0::/init.scope\n"}, nil, "", ""},
		{"docker", map[string]string{".dockerenv": ""}, nil, "docker", "/.dockerenv"},
		{"podman", map[string]string{"run/.containerenv": "engine=\"podman-4.3.1\"\n"}, nil, "podman", "/run/.containerenv"},
		{"kubernetes env", map[string]string{".dockerenv": ""}, map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "kubernetes", "KUBERNETES_SERVICE_HOST is set"},
		{"kubernetes cgroup", map[string]string{"proc/1/cgroup": "0::/kubepods/besteffort/pod1/abc\n"}, nil, "kubernetes", "/proc/1/cgroup names kubepods"},
		{"container env", nil, map[string]string{"container": "podman"}, "podman", "container=podman"},
		{"container env docker", nil, map[string]string{"container": "docker"}, "docker", "container=docker"},
		{"systemd container", map[string]string{"run/systemd/container": "lxc\n"}, nil, "lxc", "/run/systemd/container"},
		{"systemd-nspawn", map[string]string{"run/systemd/container": "systemd-nspawn\n"}, nil, "container", "/run/systemd/container"},
		{"libpod cgroup", map[string]string{"proc/1/cgroup": "0::/libpod_parent/libpod-abc\n"}, nil, "podman", "/proc/1/cgroup names libpod"},
		{"docker cgroup", map[string]string{"proc/1/cgroup": "12:pids:/docker/abc\n"}, nil, "docker", "/proc/1/cgroup names docker"},
		{"lxc cgroup", map[string]string{"proc/1/cgroup": "0::/lxc.payload.c1\n"}, nil, "lxc", "/proc/1/cgroup names lxc"},
		{"containerd cgroup", map[string]string{"proc/1/cgroup": "0::/system.slice/containerd.service/x\n"}, nil, "container", "/proc/1/cgroup names containerd"},
	} {
		got := detectContainer(fixtureRoot(t, c.files), envOf(c.env))
		switch {
		case c.kind == "" && got != nil:
			t.Errorf("%s: found a container %+v", c.name, *got)
		case c.kind != "" && got == nil:
			t.Errorf("%s: found no container, want %s", c.name, c.kind)
		case got != nil && (got.Kind != c.kind || got.Evidence != c.evidence):
			t.Errorf("%s: %+v, want %s by %s", c.name, *got, c.kind, c.evidence)
		}
	}
}

// TestContainerRemedies: for every engine and each thing a runtime denies the jail, the check
// that fails names the container and the exact option that lifts it, and the closing run line
// gathers them; a sysctl remedy says it is the host's.
func TestContainerRemedies(t *testing.T) {
	hostname := errors.New(hostnameFailed + "sethostname in a new UTS namespace: operation not permitted")
	proc := errors.New(procFailed + "mount a new /proc in a PID namespace: operation not permitted")
	both := errors.New(hostname.Error() + "; " + proc.Error())
	want := map[string]map[problem][]string{
		"docker":     {problemSeccomp: {"--security-opt seccomp=unconfined", "--security-opt apparmor=unconfined"}, problemProc: {"--security-opt systempaths=unconfined"}},
		"podman":     {problemSeccomp: {"--security-opt seccomp=unconfined"}, problemProc: {"--security-opt 'unmask=/proc/*'"}},
		"kubernetes": {problemSeccomp: {"securityContext.seccompProfile.type: Unconfined", "securityContext.appArmorProfile.type: Unconfined"}, problemProc: {"securityContext.procMount: Unmasked"}},
		"lxc":        {problemSeccomp: {"an unconfined seccomp profile"}, problemProc: {"an unmasked /proc"}},
	}
	for kind, byProblem := range want {
		c := &Container{Kind: kind, Evidence: "fixture"}
		for _, tc := range []struct {
			err      error
			problems []problem
		}{{hostname, []problem{problemSeccomp}}, {proc, []problem{problemProc}}, {both, []problem{problemSeccomp, problemProc}}} {
			ch, found := jailNSCheck(tc.err, c)
			if ch.Status != StatusMissing || !ch.Required {
				t.Errorf("%s, %v: %s required=%v, want a missing required check", kind, tc.err, ch.Status, ch.Required)
			}
			if !strings.Contains(ch.Remedy, "in a "+kind+" container (fixture)") {
				t.Errorf("%s: the remedy does not say it is in a %s container:\n%s", kind, kind, ch.Remedy)
			}
			var opts []string
			for _, p := range tc.problems {
				opts = append(opts, byProblem[p]...)
			}
			for _, o := range opts {
				if !strings.Contains(ch.Remedy, o) {
					t.Errorf("%s, %v: the remedy lacks %s:\n%s", kind, tc.err, o, ch.Remedy)
				}
			}
			line := containerRunLine(c, found)
			for _, o := range opts {
				if !strings.Contains(line, o) {
					t.Errorf("%s, %v: the run line %q lacks %s", kind, tc.err, line, o)
				}
			}
			if (kind == "docker" || kind == "podman") && !strings.HasPrefix(line, kind+" run ") {
				t.Errorf("%s: run line %q", kind, line)
			}
		}
		for _, o := range byProblem[problemProc] {
			if ch, _ := jailNSCheck(hostname, c); strings.Contains(ch.Remedy, o) {
				t.Errorf("%s: a denied hostname is remedied with the /proc option %s", kind, o)
			}
		}
	}
	// --cap-add SYS_ADMIN is never the fix: the jail needs no capability of the container.
	for _, kind := range []string{"docker", "podman", "kubernetes"} {
		if line := containerRunLine(&Container{Kind: kind}, []problem{problemSeccomp, problemProc}); strings.Contains(line, "--cap-add") {
			t.Errorf("%s: %s", kind, line)
		}
	}
	if ch, _ := jailNSCheck(nil, &Container{Kind: "podman"}); ch.Status != StatusOK {
		t.Errorf("a probe that worked: %+v", ch)
	}
	if got := inContainer(&Container{Kind: "docker"}, sysctlRemedy("kernel.unprivileged_userns_clone", "1")); !strings.HasPrefix(got, "# on the host that runs this docker container, not in it (its /proc/sys is read-only)") {
		t.Errorf("a sysctl remedy in a container does not say it is the host's:\n%s", got)
	}
}

// TestRunWithContainerRoot: RunWith over a fixture root with podman's mark says so in the
// report's first line and its JSON; on this host the jail's steps work, so no run line is given.
func TestRunWithContainerRoot(t *testing.T) {
	root := fixtureRoot(t, map[string]string{"run/.containerenv": ""})
	r := RunWith(context.Background(), Options{AppArmorTemplate: template(t), ProbeDir: t.TempDir(), Root: root, Getenv: envOf(nil)})
	var text bytes.Buffer
	r.Text(&text, false)
	first, _, _ := strings.Cut(text.String(), "\n")
	if !strings.HasSuffix(first, ", in a podman container (/run/.containerenv)") {
		t.Errorf("first line %q does not say it is in a podman container", first)
	}
	if r.OK() && r.ContainerFix != "" {
		t.Errorf("every check passes, yet the run line is %q", r.ContainerFix)
	}
	hostRoot := fixtureRoot(t, nil)
	if h := RunWith(context.Background(), Options{ProbeDir: t.TempDir(), Root: hostRoot, Getenv: envOf(nil)}); h.Container != nil {
		t.Errorf("a root with no mark is a %+v", *h.Container)
	}
}
