package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/diffview"
	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/english"
	"github.com/shadow-sandbox/shadow/internal/jsonout"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

func newCompareCmd() *cobra.Command {
	var project string
	var stat, nameOnly, asJSON bool
	var take, hunks string
	cmd := &cobra.Command{
		Use:   "compare [--stat|--name-only|--json] [--project DIR] A B [PATH...] | compare --take A|B A B PATH...",
		Short: "Show two sessions' changes side by side, file by file",
		Long: `compare shows what two sessions of one project staged, path by path, to keep the better of
two agents' work on the same task. A and B are each a session ID or the name of an open session
of the project. For every path either session changed (only those under the PATHs given), it says
which session changed it; where both did, whether they staged the same thing, and if not the diff
from A's version to B's (headed a/PATH (A) and b/PATH (B)); where one did, that session's diff
against the base, as 'shadow diff' prints it. Binary, special and too large files get one line,
never their bytes. On a terminal the text is coloured and control characters are shown escaped.

--stat prints one line a path (A only, B only, both, same, or both, differ +added -deleted from A
to B), --name-only the paths, --json the comparison with both sessions' changes. It reads only:
nothing is applied, and it works while a run is going (a run's writes are compared once it ends).
A and B must be two sessions of the same project.

--take B (or A) keeps that session's version of each PATH: the other session stages it, as a step
of its own (a checkpoint named "take, from B" that 'shadow log' lists and 'shadow revert' undoes),
so that the better file of each agent ends up in one session to review and apply. A deletion is
taken only as root. With --hunks 1,3 and one PATH that both sessions changed as text, only those
hunks of the diff from the receiving session's version to the other's come over (numbered in the
order 'shadow compare RECEIVER OTHER PATH' prints them); the rest of the receiving version stays.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError{msg: "compare needs two sessions: shadow compare A B [PATH...]"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if countTrue(stat, nameOnly, asJSON) > 1 {
				return usageError{msg: "--stat, --name-only and --json exclude each other"}
			}
			stderr := cmd.ErrOrStderr()
			a, b, err := comparedSessions(project, args[0], args[1], stderr)
			if err != nil {
				return err
			}
			paths, err := projectPaths(a.Project(), args[2:])
			if err != nil {
				return err
			}
			if take != "" {
				return takeCompared(cmd, a, b, take, hunks, args[0], args[1], paths)
			}
			for _, s := range []*session.Session{a, b} {
				warnIncomplete(stderr, s)
				if s.Meta.Active != nil && s.RunActive() {
					sayErr(stderr, "shadow: warning:", fmt.Sprintf("session %s has a run going: what it writes is compared once the run ends", s.Label()))
				}
			}
			csA, err := a.Changes()
			if err != nil {
				return err
			}
			csB, err := b.Changes()
			if err != nil {
				return err
			}
			entries := pairChanges(csA.Select(paths), csB.Select(paths), paths)
			out := cmd.OutOrStdout()
			if nameOnly {
				// Quoted like `shadow diff --name-only`: one line a path, never raw bytes.
				for _, e := range entries {
					fmt.Fprintln(out, diff.QuotePath(e.Path))
				}
				return nil
			}
			if err := loadCompared(a, b, entries, !stat && !asJSON); err != nil {
				return err
			}
			switch {
			case stat:
				return writeCompareStat(out, entries)
			case asJSON:
				return jsonout.NewEncoder(out).Encode(compareDocOf(a, b, entries))
			}
			return writeCompare(out, a, b, entries, isTerminal(out))
		},
	}
	cmd.Flags().StringVar(&take, "take", "", "keep session A's or B's version of each PATH: the other session stages it as a step of its own")
	cmd.Flags().StringVar(&hunks, "hunks", "", "with --take and one PATH both sessions changed: take only these hunks (1,3), numbered as compare prints the diff from the receiving session's version to the other's")
	cmd.Flags().StringVar(&project, "project", "", "project directory (default: the git top level, else the working directory)")
	cmd.Flags().BoolVar(&stat, "stat", false, "show one line a path instead of the diffs")
	cmd.Flags().BoolVar(&nameOnly, "name-only", false, "show only the paths either session changed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}

// comparedSessions finds the sessions argA and argB name (an ID, or the name of an open session
// of the project), read-only, after finishing or rolling back an apply a crash interrupted in
// their project. They must be two sessions, of one project: of flagProject's when it is given.
func comparedSessions(flagProject, argA, argB string, stderr io.Writer) (*session.Session, *session.Session, error) {
	st, err := openStore()
	if err != nil {
		return nil, nil, err
	}
	project, err := session.ResolveProject(flagProject)
	if err != nil {
		return nil, nil, err
	}
	a, err := st.Find(project, argA)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	b, err := st.Find(project, argB)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	switch {
	case a.ID() == b.ID() && argA == argB:
		return nil, nil, usageError{msg: fmt.Sprintf("A and B are both session %s: name two sessions to compare", a.Label())}
	case a.ID() == b.ID():
		return nil, nil, usageError{msg: fmt.Sprintf("%s and %s are both session %s: name two sessions to compare", quote.Path(argA), quote.Path(argB), a.Label())}
	case a.Project() != b.Project():
		return nil, nil, usageError{msg: fmt.Sprintf("sessions %s and %s are of different projects (%s and %s): compare two sessions of one project",
			a.ID(), b.ID(), quote.Path(a.Project()), quote.Path(b.Project()))}
	case flagProject != "" && a.Project() != project:
		return nil, nil, usageError{msg: fmt.Sprintf("sessions %s and %s are of project %s, not %s", a.ID(), b.ID(), quote.Path(a.Project()), quote.Path(project))}
	}
	if err := recoverProject(st, a.Project(), stderr); err != nil {
		return nil, nil, err
	}
	// Read again: a recovery may have finished an apply of either.
	var out [2]*session.Session
	for i, id := range []string{a.ID(), b.ID()} {
		s, err := st.Get(id)
		if err != nil {
			return nil, nil, err
		}
		if err := s.AwaitCheckpoints(stderr); err != nil {
			return nil, nil, err
		}
		s.SetProtected(protectedFromConfig(s.Project()))
		out[i] = s
	}
	return out[0], out[1], nil
}

// compared is one path of a comparison: what each session staged there (nil when it did not
// change it).
type compared struct {
	Path string
	A, B *staged
}

// staged is what one session stages at a path: the change that touches it, and, once loaded,
// what the path holds.
type staged struct {
	c *changeset.Change
	// away: the path is the source of the change's rename, so it holds nothing.
	away bool
	// patch is the session's diff of c against the base (nil for a special file, or until
	// loaded); content is what the path holds (a symlink's target), nil when away.
	patch   *diff.FilePatch
	content []byte
}

func (v *staged) kind() changeset.FileKind {
	if v.away {
		return changeset.KindNone
	}
	return v.c.New.Kind
}

// perm is the mode bits the version's file has (0 for anything else).
func (v *staged) perm() uint32 {
	if v.kind() != changeset.KindFile {
		return 0
	}
	return v.c.New.Mode
}

// tooLarge: a file whose content was not read (too large, sparse or unreadable).
func (v *staged) tooLarge() bool {
	return v.kind() == changeset.KindFile && (v.patch == nil || v.patch.TooLarge)
}

// pairChanges lines up two sessions' changes path by path, sorted: a rename counts at both its
// paths (it empties the one it comes from). With paths, only the paths under them are kept.
func pairChanges(a, b []*changeset.Change, paths []string) []*compared {
	byPath := map[string]*compared{}
	add := func(p string, c *changeset.Change, away, inB bool) {
		if len(paths) > 0 && !underAny(p, paths) {
			return
		}
		e := byPath[p]
		if e == nil {
			e = &compared{Path: p}
			byPath[p] = e
		}
		slot := &e.A
		if inB {
			slot = &e.B
		}
		// A path that a rename leaves and a new file takes holds the new file.
		if *slot == nil || !away {
			*slot = &staged{c: c, away: away}
		}
	}
	for i, changes := range [][]*changeset.Change{a, b} {
		for _, c := range changes {
			add(c.Path, c, false, i == 1)
			if c.From != "" {
				add(c.From, c, true, i == 1)
			}
		}
	}
	out := make([]*compared, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// underAny reports whether p is one of paths or below one, as `shadow diff PATH` selects.
func underAny(p string, paths []string) bool {
	return changeset.Selected(&changeset.Change{Path: p}, paths)
}

// loadCompared reads what the compared paths hold: for the paths both sessions changed, and with
// all, for every path (its session's diff against the base is shown).
func loadCompared(a, b *session.Session, entries []*compared, all bool) error {
	for i, s := range []*session.Session{a, b} {
		var want []*changeset.Change
		seen := map[*changeset.Change]bool{}
		for _, e := range entries {
			v := e.A
			if i == 1 {
				v = e.B
			}
			if v == nil || seen[v.c] || !(all || e.A != nil && e.B != nil) {
				continue
			}
			seen[v.c] = true
			want = append(want, v.c)
		}
		patches, err := s.Patches(want)
		if err != nil {
			return err
		}
		byPath := map[string]*diff.FilePatch{}
		for k := range patches {
			byPath[patches[k].NewPath] = &patches[k]
		}
		for _, e := range entries {
			v := e.A
			if i == 1 {
				v = e.B
			}
			if v == nil {
				continue
			}
			v.patch = byPath[v.c.Path]
			if v.patch != nil && !v.away && !v.patch.TooLarge {
				v.content = v.patch.New
			}
		}
	}
	return nil
}

// pairVerdict is how the two versions of a path compare.
type pairVerdict struct {
	same bool
	// text: both sides are text (or nothing) and fd is the line diff from A's to B's.
	text bool
	fd   diff.FileDiff
	// why says, for a pair that differs, what the line diff does not show ("" when it shows
	// everything): a deletion, a mode, a binary or too large file, a symlink.
	why string
}

// judge compares the two versions of a path both sessions changed: the same kind, content (by
// changeset.ContentKey, or by bytes where a hash is unknown) and mode agree.
func judge(e *compared) pairVerdict {
	a, b := e.A, e.B
	ka, kb := a.kind(), b.kind()
	if ka == kb && a.perm() == b.perm() {
		switch ka {
		case changeset.KindNone, changeset.KindSpecial:
			return pairVerdict{same: true}
		case changeset.KindSymlink:
			if a.c.New.Target == b.c.New.Target {
				return pairVerdict{same: true}
			}
		case changeset.KindFile:
			keyA, keyB := changeset.ContentKey(a.c.New), changeset.ContentKey(b.c.New)
			if keyA != "" && keyB != "" && keyA == keyB ||
				(keyA == "" || keyB == "") && !a.tooLarge() && !b.tooLarge() && bytes.Equal(a.content, b.content) {
				return pairVerdict{same: true}
			}
		}
	}
	var why []string
	lineable := true
	for _, s := range []struct {
		name string
		v    *staged
	}{{"A", a}, {"B", b}} {
		switch s.v.kind() {
		case changeset.KindNone:
			if s.v.away {
				why = append(why, s.name+" renames it to "+quote.Path(s.v.c.Path))
			} else {
				why = append(why, s.name+" deletes it")
			}
		case changeset.KindSymlink:
			why = append(why, s.name+" makes it a symlink to "+quote.Path(s.v.c.New.Target))
			lineable = false
		case changeset.KindSpecial:
			why = append(why, s.name+" makes it a special file")
			lineable = false
		case changeset.KindFile:
			if s.v.tooLarge() {
				why = append(why, fmt.Sprintf("%s's is a file of %d bytes, too large or sparse to show", s.name, s.v.c.New.Size))
				lineable = false
			} else if diff.IsBinary(s.v.content) {
				why = append(why, fmt.Sprintf("%s's is a binary file of %d bytes", s.name, len(s.v.content)))
				lineable = false
			}
		}
	}
	if ka == changeset.KindFile && kb == changeset.KindFile && a.perm() != b.perm() {
		why = append(why, fmt.Sprintf("mode %04o in A, %04o in B", a.perm(), b.perm()))
	}
	v := pairVerdict{why: strings.Join(why, "; ")}
	if lineable && (ka == changeset.KindFile || kb == changeset.KindFile) {
		v.text = true
		v.fd = diff.Compute(e.Path, a.content, b.content, diff.Options{})
	}
	return v
}

// where says which sessions changed the path: "A only", "B only" or "both".
func (e *compared) where() string {
	switch {
	case e.B == nil:
		return "A only"
	case e.A == nil:
		return "B only"
	}
	return "both"
}

// writeCompareStat prints one line a path: which session changed it and, where both did,
// whether they agree, with the lines added and deleted from A's version to B's.
func writeCompareStat(out io.Writer, entries []*compared) error {
	names := make([]string, len(entries))
	width := 0
	for i, e := range entries {
		names[i] = quote.Path(e.Path)
		width = max(width, len(names[i]))
	}
	width = min(width, 60)
	var b strings.Builder
	for i, e := range entries {
		what := e.where()
		if e.A != nil && e.B != nil {
			v := judge(e)
			switch {
			case v.same:
				what = "both, same"
			case v.text:
				what = fmt.Sprintf("both, differ +%d -%d", v.fd.Added, v.fd.Deleted)
			default:
				what = "both, differ"
			}
			if !v.same && v.why != "" {
				what += " (" + v.why + ")"
			}
		}
		fmt.Fprintf(&b, "%-*s  %s\n", width, names[i], what)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// shortLabel names a session in a diff header: its name, else its ID.
func shortLabel(s *session.Session) string {
	if s.Name() != "" {
		return s.Name()
	}
	return s.ID()
}

// writeCompare prints the comparison: a line naming A and B, then for every path a "# PATH:"
// line saying who changed it, followed by the diff from A's version to B's where both changed it
// and differ, or by the one session's diff against the base. Coloured on a terminal.
func writeCompare(out io.Writer, a, b *session.Session, entries []*compared, tty bool) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# A is session %s, B is session %s\n", quote.Text(a.Label()), quote.Text(b.Label()))
	shown := map[*changeset.Change]bool{}
	for _, e := range entries {
		head := "# " + quote.Path(e.Path) + ": " + e.where()
		if e.A == nil || e.B == nil {
			v := e.A
			if v == nil {
				v = e.B
			}
			switch {
			case v.away:
				head += " (renamed to " + quote.Path(v.c.Path) + ")"
			case v.c.From != "":
				head += " (renamed from " + quote.Path(v.c.From) + ")"
			case v.kind() == changeset.KindSpecial:
				head += " (a special file, never applied)"
			}
			buf.WriteString(head + "\n")
			if v.patch != nil && !shown[v.c] {
				shown[v.c] = true
				if err := diff.WritePatch(&buf, []diff.FilePatch{*v.patch}, diff.PatchOptions{}); err != nil {
					return err
				}
			}
			continue
		}
		v := judge(e)
		if v.same {
			buf.WriteString(head + ", same\n")
			continue
		}
		head += ", differ"
		if v.why != "" {
			head += " (" + v.why + ")"
		}
		buf.WriteString(head + "\n")
		if v.text && len(v.fd.Hunks) > 0 {
			fmt.Fprintf(&buf, "--- %s (%s)\n+++ %s (%s)\n", diff.QuotePath("a/"+e.Path), quote.Text(shortLabel(a)),
				diff.QuotePath("b/"+e.Path), quote.Text(shortLabel(b)))
			for _, h := range v.fd.Hunks {
				buf.WriteString(h.Text())
			}
		}
	}
	if !tty {
		_, err := out.Write(buf.Bytes())
		return err
	}
	return diffview.ColorPatch(out, buf.Bytes(), diffview.DefaultStyles(darkBackground(os.Getenv("COLORFGBG"))))
}

// compareDoc is the `shadow compare --json` document, version 1:
//
//	{
//	  "version": 1, "project": "/abs/path",
//	  "a": {"session": "<id>", "name": "claude"}, "b": {...},
//	  "files": [{
//	    "path": "a/b.go",
//	    "changed": "a|b|both",
//	    "same": true|false (when both changed it),
//	    "added": 3, "deleted": 1 (lines, from A's version to B's, when both changed a text file),
//	    "why": what the line diff does not show (a deletion, a mode, a binary file, a symlink),
//	    "hunks": [{"header": "@@ -1,3 +1,4 @@", "lines": [" context\n", "-A's\n", "+B's\n"]}],
//	    "a": A's change of the path, as `shadow diff --json` has it (absent when A left it alone),
//	    "b": B's change
//	  }]
//	}
type compareDoc struct {
	Version int            `json:"version"`
	Project string         `json:"project"`
	A       compareSession `json:"a"`
	B       compareSession `json:"b"`
	Files   []compareFile  `json:"files"`
}

type compareSession struct {
	ID   string `json:"session"`
	Name string `json:"name,omitempty"`
}

type compareFile struct {
	Path    string            `json:"path"`
	Changed string            `json:"changed"`
	Same    *bool             `json:"same,omitempty"`
	Added   int               `json:"added,omitempty"`
	Deleted int               `json:"deleted,omitempty"`
	Why     string            `json:"why,omitempty"`
	Hunks   []compareHunk     `json:"hunks,omitempty"`
	A       *changeset.Change `json:"a,omitempty"`
	B       *changeset.Change `json:"b,omitempty"`
}

type compareHunk struct {
	Header string   `json:"header"`
	Lines  []string `json:"lines"`
}

func compareDocOf(a, b *session.Session, entries []*compared) *compareDoc {
	doc := &compareDoc{Version: 1, Project: a.Project(),
		A: compareSession{ID: a.ID(), Name: a.Name()}, B: compareSession{ID: b.ID(), Name: b.Name()}, Files: []compareFile{}}
	for _, e := range entries {
		f := compareFile{Path: e.Path, Changed: "both"}
		if e.A != nil {
			f.A = e.A.c
		} else {
			f.Changed = "b"
		}
		if e.B != nil {
			f.B = e.B.c
		} else {
			f.Changed = "a"
		}
		if e.A != nil && e.B != nil {
			v := judge(e)
			f.Same = &v.same
			if !v.same {
				f.Why = v.why
				if v.text {
					f.Added, f.Deleted = v.fd.Added, v.fd.Deleted
					for _, h := range v.fd.Hunks {
						ch := compareHunk{Header: h.Header()}
						for _, l := range h.Lines {
							ch.Lines = append(ch.Lines, string(l.Op)+l.Text)
						}
						f.Hunks = append(f.Hunks, ch)
					}
				}
			}
		}
		doc.Files = append(doc.Files, f)
	}
	return doc
}

// takeCompared stages in the other session of a and b the version of each of paths that the
// session --take names (by the argument that named it, its name or its ID) staged.
func takeCompared(cmd *cobra.Command, a, b *session.Session, take, hunks, argA, argB string, paths []string) error {
	from, into := a, b
	switch take {
	case argA, a.ID(), a.Name():
	case argB, b.ID(), b.Name():
		from, into = b, a
	default:
		return usageError{msg: fmt.Sprintf("--take names one of the two sessions compared (%s or %s), not %q", argA, argB, take)}
	}
	if take == "" || len(paths) == 0 {
		return usageError{msg: "--take needs the paths to take: shadow compare --take B A B PATH..."}
	}
	st, err := openStore()
	if err != nil {
		return err
	}
	lk, err := st.LockProject(into.Project(), session.LockOptions{Command: "compare --take"})
	if err != nil {
		return err
	}
	defer lk.Release()
	if lk.Recovered != "" {
		sayErr(cmd.ErrOrStderr(), "shadow:", lk.Recovered)
	}
	w, err := lk.Get(into.ID())
	if err != nil {
		return err
	}
	if err := lk.HandOver(w); err != nil {
		return err
	}
	w.SetProtected(protectedFromConfig(w.Project()))
	var taken []string
	if hunks != "" {
		if len(paths) != 1 {
			return usageError{msg: "--hunks takes hunks of one PATH"}
		}
		var pick []int
		for _, f := range strings.Split(hunks, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return usageError{msg: fmt.Sprintf("--hunks: %q is not a hunk number (1, 2, ...)", f)}
			}
			pick = append(pick, n)
		}
		if _, err := w.TakeHunks(from, paths[0], pick); err != nil {
			return err
		}
		taken = paths
	} else if taken, err = w.Take(from, paths); err != nil {
		return err
	}
	cps, err := w.Checkpoints()
	if err != nil {
		return err
	}
	step := ""
	if len(cps) > 0 {
		step = " as step " + cps[len(cps)-1].ID
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s took %s from %s%s; review with `shadow review --session %s`\n", w.Label(), english.Count(len(taken), "path"), from.Label(), step, sessionArg(w))
	return nil
}

// sessionArg is how a command names s in --session: its name, else its ID.
func sessionArg(s *session.Session) string {
	if s.Name() != "" {
		return s.Name()
	}
	return s.ID()
}
