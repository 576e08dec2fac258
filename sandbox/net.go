//go:build !shadowinit

package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Published ports cross the network namespace boundary over a unix socket in
// the runtime directory: path-based unix sockets are reachable from any
// network namespace, while the host (unprivileged) cannot enter the jail's.
// Each connection starts with the port as two big-endian bytes.

// publisher is the host side of the published ports.
type publisher struct {
	listeners []net.Listener
	wg        sync.WaitGroup
}

// publish listens on the host's 127.0.0.1:PORT for each port and relays
// every connection to the jail through sock.
func publish(ports []int, sock string) (*publisher, error) {
	p := &publisher{}
	for _, port := range ports {
		if port <= 0 || port > 65535 {
			p.close()
			return nil, fmt.Errorf("port %d out of range", port)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			p.close()
			return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
		}
		p.listeners = append(p.listeners, ln)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go relayToJail(c, sock, port)
			}
		}()
	}
	return p, nil
}

func relayToJail(c net.Conn, sock string, port int) {
	defer c.Close()
	var u net.Conn
	var err error
	// The jail may still be starting: its socket appears once PID 1 listens.
	for i := 0; i < 50; i++ {
		u, err = DialUnix(sock)
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return
	}
	defer u.Close()
	var hdr [2]byte
	binary.BigEndian.PutUint16(hdr[:], uint16(port))
	if _, err := u.Write(hdr[:]); err != nil {
		return
	}
	relay(c, u)
}

// DialUnix connects to the unix socket at path; a path too long for
// sockaddr_un is reached through /proc/self/fd/N/NAME, N its directory.
func DialUnix(path string) (net.Conn, error) {
	if len(path) <= maxSunPath {
		return net.Dial("unix", path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return net.Dial("unix", "/proc/self/fd/"+strconv.Itoa(int(dir.Fd()))+"/"+filepath.Base(path))
}

func (p *publisher) close() {
	if p == nil {
		return
	}
	for _, ln := range p.listeners {
		ln.Close()
	}
	p.wg.Wait()
}

// netHelper is the user-mode network stack giving the jail internet access.
type netHelper struct {
	cmd *exec.Cmd
	pid int
}

// defaultNetHelpers are the user-mode network stacks shadow can use,
// preferred first (Policy.NetHelpers).
var defaultNetHelpers = []string{"pasta", "slirp4netns"}

// findNetHelper returns the first of helpers (nil: defaultNetHelpers) that
// is installed, or "" if none is.
func findNetHelper(helpers []string) string {
	if helpers == nil {
		helpers = defaultNetHelpers
	}
	for _, n := range helpers {
		if _, err := exec.LookPath(n); err == nil {
			return n
		}
	}
	return ""
}

// startNetHelper connects the network namespace of jail PID pid to the
// internet with helper, without exposing the host's loopback or its
// services, and returns once the namespace is configured.
func startNetHelper(ctx context.Context, helper string, pid int, runtimeDir string) (*netHelper, error) {
	ns := fmt.Sprintf("/proc/%d/ns/", pid)
	switch helper {
	case "pasta":
		pidFile := filepath.Join(runtimeDir, "pasta.pid")
		// No port forwarding either way (-t/-u/-T/-U none), no mapping of
		// the gateway address to the host (--no-map-gw): the jail reaches
		// the internet, never the host's 127.0.0.1. pasta configures the
		// namespace, then forks into the background and writes its pid.
		args := []string{"--config-net", "--quiet", "--no-map-gw",
			"-t", "none", "-u", "none", "-T", "none", "-U", "none",
			"--userns", ns + "user", "--netns", ns + "net", "--pid", pidFile}
		if os.Geteuid() == 0 {
			// pasta drops root to nobody by default, who cannot enter a
			// user namespace owned by root.
			args = append(args, "--runas", "0:0")
		}
		cmd := exec.CommandContext(ctx, "pasta", args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, helperFailed("pasta", err, out)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return nil, fmt.Errorf("pasta: read pid file: %w", err)
		}
		hp, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("pasta: pid file: %w", err)
		}
		return &netHelper{pid: hp}, nil
	case "slirp4netns":
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		cmd := exec.Command("slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback",
			"--ready-fd=3", "--userns-path="+ns+"user", strconv.Itoa(pid), "tap0")
		cmd.ExtraFiles = []*os.File{w}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			w.Close()
			return nil, fmt.Errorf("slirp4netns: %w", err)
		}
		w.Close()
		buf := make([]byte, 1)
		if _, err := r.Read(buf); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, helperFailed("slirp4netns", fmt.Errorf("not ready: %w", err), out.Bytes())
		}
		return &netHelper{cmd: cmd}, nil
	}
	return nil, errors.New("no network helper")
}

// helperFailed is the one-line error of a network helper that could not connect the jail: the
// tun device's problem and its fix when that is the cause (the helper itself only prints what
// its open failed with), else the helper's own output joined on one line.
func helperFailed(helper string, err error, out []byte) error {
	if terr := CheckTun(TunDevice); terr != nil {
		return terr
	}
	msg := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; ")), " ")
	if msg == "" {
		return fmt.Errorf("%s: %w", helper, err)
	}
	return fmt.Errorf("%s: %w: %s", helper, err, msg)
}

// stop ends the helper: the host side never leaves it running.
func (h *netHelper) stop() {
	if h == nil {
		return
	}
	if h.cmd != nil {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
		return
	}
	if h.pid > 0 {
		if p, err := os.FindProcess(h.pid); err == nil {
			_ = p.Kill()
		}
	}
}
