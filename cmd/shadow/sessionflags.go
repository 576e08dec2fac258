package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/session"
)

// sessionFlags select the session a command works on: the project's only open one, or --session
// with an ID or the name of an open session.
type sessionFlags struct {
	project string
	id      string
	wait    bool
}

func (f *sessionFlags) register(cmd *cobra.Command, writer bool) {
	cmd.Flags().StringVar(&f.project, "project", "", "project directory (default: the git top level, else the working directory)")
	cmd.Flags().StringVar(&f.id, "session", "", "session ID, or the name of an open session (default: the project's only open session)")
	if writer {
		cmd.Flags().BoolVar(&f.wait, "wait", false, "wait for another shadow writing to the project instead of failing")
	}
}

// selectedProject is the project of the session --session names by ID, else --project's (or the
// working directory's).
func (f *sessionFlags) selectedProject(st *session.Store) (string, error) {
	if f.id != "" && st.HasID(f.id) {
		s, err := st.Get(f.id)
		if err != nil {
			return "", err
		}
		return s.Project(), nil
	}
	return session.ResolveProject(f.project)
}

func openStore() (*session.Store, error) {
	root, err := session.DefaultRoot()
	if err != nil {
		return nil, err
	}
	return session.Open(root)
}

// readSession opens the selected session for reading: no writer lock, so it works while a run is
// going. An apply a crash interrupted is finished or rolled back first.
func (f *sessionFlags) readSession() (*session.Store, *session.Session, error) {
	st, project, err := f.recoverSelected(os.Stderr)
	if err != nil {
		return nil, nil, err
	}
	var s *session.Session
	if f.id != "" {
		s, err = st.Find(project, f.id)
	} else if s, err = st.Current(project); err != nil {
		err = noSessionHint(err, project)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := s.AwaitCheckpoints(os.Stderr); err != nil {
		return nil, nil, err
	}
	s.SetProtected(protectedFromConfig(s.Project()))
	return st, s, nil
}

// recoverSelected finishes or rolls back an apply that a crash or a kill interrupted in the
// project of the selected session, saying so on w, and returns the store and the project.
func (f *sessionFlags) recoverSelected(w io.Writer) (*session.Store, string, error) {
	st, err := openStore()
	if err != nil {
		return nil, "", err
	}
	project, err := f.selectedProject(st)
	if err != nil {
		return nil, "", err
	}
	return st, project, recoverProject(st, project, w)
}

// recoverProject finishes or rolls back an apply of project that a crash or a kill interrupted,
// and says what it did on w.
func recoverProject(st *session.Store, project string, w io.Writer) error {
	msg, err := st.Recover(project)
	if msg != "" {
		sayErr(w, "shadow:", msg)
	}
	return err
}

// recoverExisting is recoverProject for the commands that do not otherwise touch the state
// directory (verify, doctor): nothing is created when there is none. With project "", every
// project with an interrupted apply is recovered.
func recoverExisting(project string, w io.Writer) error {
	root, err := session.DefaultRoot()
	if err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(root, "sessions")); err != nil {
		return nil
	}
	st, err := session.Open(root)
	if err != nil {
		return err
	}
	if project != "" {
		return recoverProject(st, project, w)
	}
	msg, err := st.RecoverAll()
	if msg != "" {
		sayErr(w, "shadow:", msg)
	}
	return err
}

// writeSession takes the project's writer lock and opens the selected session writable. The
// caller releases the lock.
func (f *sessionFlags) writeSession(command string, stderr io.Writer) (*session.ProjectLock, *session.Session, error) {
	st, err := openStore()
	if err != nil {
		return nil, nil, err
	}
	project, err := f.selectedProject(st)
	if err != nil {
		return nil, nil, err
	}
	lk, err := st.LockProject(project, session.LockOptions{Wait: f.wait, Command: command})
	if err != nil {
		return nil, nil, err
	}
	if lk.Recovered != "" {
		sayErr(stderr, "shadow:", lk.Recovered)
	}
	var s *session.Session
	if f.id != "" && st.HasID(f.id) {
		s, err = lk.Get(f.id)
	} else if f.id != "" {
		s, err = lk.CurrentNamed(f.id)
	} else if s, err = lk.Current(); err != nil {
		err = noSessionHint(err, project)
	}
	if err == nil {
		err = s.AwaitCheckpoints(stderr)
	}
	if err != nil {
		lk.Release()
		return nil, nil, err
	}
	s.SetProtected(protectedFromConfig(s.Project()))
	return lk, s, nil
}

// warnIncomplete says, before a session's changes are shown or applied, that some of what a run
// wrote could not be staged.
func warnIncomplete(w io.Writer, s *session.Session) {
	if why := s.Incomplete(); why != "" {
		sayErr(w, "shadow: warning:", fmt.Sprintf("session %s is incomplete, %s; staged files may be missing or cut short", s.ID(), why))
	}
	warnDamaged(w, s)
}

// warnDamaged says, on one line, which of the session's checkpoints are damaged and that what
// they hold is left out of the staged changes, the rest being good.
func warnDamaged(w io.Writer, s *session.Session) {
	steps, err := s.DamagedSteps()
	if err != nil {
		sayErr(w, "shadow: warning:", err)
		return
	}
	if len(steps) == 0 {
		return
	}
	parts := make([]string, len(steps))
	for i, d := range steps {
		parts[i] = d.ID + ": " + d.Describe()
	}
	sayErr(w, "shadow: warning:", fmt.Sprintf("session %s is incomplete, damaged checkpoints (%s); files not as taken are left out, the rest is as staged", s.ID(), strings.Join(parts, "; ")))
}

func noSessionHint(err error, project string) error {
	if errors.Is(err, session.ErrNoSession) {
		return fmt.Errorf("project %s has no open session; start one with `shadow run -- CMD`", project)
	}
	return err
}

// confirm asks a yes/no question on the terminal. Without a terminal it refuses, so a script
// must pass --yes.
func confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	f, ok := in.(*os.File)
	if !ok || !isTerminal(f) {
		return false, usageError{msg: "not a terminal: pass --yes to confirm"}
	}
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// projectPaths turns PATH arguments into project-relative paths: absolute paths and paths
// relative to a working directory inside the project are converted; other relative paths are
// taken as relative to the project already.
func projectPaths(project string, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, err
		}
		if rel, err := filepath.Rel(project, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			out = append(out, rel)
			continue
		}
		if filepath.IsAbs(a) {
			return nil, usageError{msg: fmt.Sprintf("%s is outside the project %s", a, project)}
		}
		out = append(out, filepath.Clean(a))
	}
	return out, nil
}
