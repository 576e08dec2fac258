package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Run is one command run in the jail over the session.
type Run struct {
	Argv     []string  `json:"argv"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	ExitCode int       `json:"exit_code"`
	// PID and PIDStart identify the shadow process running it (start time guards against reuse).
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pid_start,omitempty"`
	// Captured and Unknown count the pre-images taken and the paths whose base became unknown.
	Captured int `json:"captured,omitempty"`
	Unknown  int `json:"unknown,omitempty"`
}

// processStart is the start time of pid in clock ticks since boot (field 22 of /proc/PID/stat),
// or 0 when the process does not exist.
func processStart(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// RunActive reports whether a run is recorded as in progress and its process is still alive; the
// record left by a crashed shadow is stale and does not count.
func (s *Session) RunActive() bool {
	a := s.Meta.Active
	if a == nil || a.PID <= 0 {
		return false
	}
	if err := unix.Kill(a.PID, 0); err != nil && err != unix.EPERM {
		return false
	}
	return processStart(a.PID) == a.PIDStart
}

// BeginRun records that argv starts running over the session now, from this process. It refuses
// while another run is active and records an interrupted earlier run as ended with exit code -1.
func (s *Session) BeginRun(argv []string) error {
	if err := s.writable("begin run"); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	if s.Meta.State != StateOpen {
		return fmt.Errorf("session %s is %s; start a new one", s.Meta.ID, s.Meta.State)
	}
	if s.RunActive() {
		return fmt.Errorf("session %s: a run is already active (pid %d)", s.Meta.ID, s.Meta.Active.PID)
	}
	if err := s.closeStaleRun(); err != nil {
		return err
	}
	pid := os.Getpid()
	s.Meta.Active = &Run{Argv: append([]string(nil), argv...), Start: time.Now().UTC(), PID: pid, PIDStart: processStart(pid)}
	return s.saveRunRecord()
}

// closeStaleRun moves a run left active by a crashed process into the finished runs, after taking
// the pre-images it would have taken.
func (s *Session) closeStaleRun() error {
	if s.Meta.Active == nil || s.RunActive() {
		return nil
	}
	r := *s.Meta.Active
	r.End = time.Now().UTC()
	r.ExitCode = -1
	captured, unknown, err := s.capturePreimages()
	if err != nil {
		return err
	}
	r.Captured, r.Unknown = captured, unknown
	s.Meta.Runs = append(s.Meta.Runs, r)
	s.Meta.Active = nil
	return s.saveRunRecord()
}

// EndRun records the active run's end and exit code, and copies into base/ the pre-image of every
// path the upper layer changes whose base was not captured yet (if the host file still matches the
// manifest; otherwise its base becomes unknown, a conflict).
func (s *Session) EndRun(exitCode int) error {
	if err := s.writable("end run"); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	if s.Meta.Active == nil {
		return fmt.Errorf("end run: session %s has no active run", s.Meta.ID)
	}
	captured, unknown, err := s.capturePreimages()
	if err != nil {
		return err
	}
	r := *s.Meta.Active
	r.End = time.Now().UTC()
	r.ExitCode = exitCode
	r.Captured, r.Unknown = captured, unknown
	s.Meta.Runs = append(s.Meta.Runs, r)
	s.Meta.Active = nil
	return s.saveRunRecord()
}

// saveRunRecord writes session.json for a run's start or end: atomically and with its content
// fsynced, but without the fsync of the directory. Should a crash lose the rename, the previous
// session.json stays, whole: a start not recorded, or an end that the next run records as an
// interrupted one (its pre-images are already durable in base/, and taking them again changes
// nothing).
func (s *Session) saveRunRecord() error {
	data, err := json.MarshalIndent(s.Meta, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session %s: %w", s.Meta.ID, err)
	}
	return writeFileReplace(filepath.Join(s.dir, "session.json"), append(data, '\n'), 0o600, false)
}

// capturePreimages takes the pre-images of every path the upper layer touches, appending them to
// one pack file made durable with one fsync before the index that refers to it is saved.
func (s *Session) capturePreimages() (captured, unknown int, err error) {
	if empty, err := emptyDir(s.UpperDir()); err != nil || empty {
		return 0, 0, err // nothing staged, nothing to capture
	}
	unlock, err := s.store.stateLock(s.Meta.Project, true)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	host, b, err := s.openView()
	if err != nil {
		return 0, 0, err
	}
	defer host.Close()
	defer b.close()
	raw, err := scanUpper(s.UpperDir(), host)
	if err != nil {
		return 0, 0, err
	}
	dirty := false
	for _, r := range raw {
		e, changed, err := b.capture(host, r.path)
		if err != nil {
			if b.pack != nil {
				b.pack.abandon()
			}
			return 0, 0, fmt.Errorf("take pre-image of %s: %w", visible(r.path), err)
		}
		if !changed {
			continue
		}
		b.index.Paths[r.path] = e
		dirty = true
		if e.Kind == baseUnknown {
			unknown++
		} else {
			captured++
		}
	}
	if b.pack != nil {
		if err := b.pack.finish(); err != nil {
			return 0, 0, fmt.Errorf("take pre-images: %w", err)
		}
	}
	if !dirty {
		return 0, 0, nil
	}
	return captured, unknown, b.save()
}

// emptyDir reports whether dir has no entries.
func emptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", dir, err)
	}
	return len(names) == 0, nil
}

// syncfsAt flushes the whole filesystem holding dir, batching the fsync of many files.
func syncfsAt(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	defer f.Close()
	if !durable {
		return nil
	}
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
