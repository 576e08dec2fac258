package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Sessions of one project in the real jail (SPEC §15): two runs going at once, each provably
// while the other runs, applied in both orders; a kill -9 of one run beside the other; and what
// every command says when several are open and none is named.

// bgRun is a shadow command going on in the background, its output in files (PID 1 may hold
// them after shadow is gone).
type bgRun struct {
	t        *testing.T
	cmd      *exec.Cmd
	out, err string
	exited   chan struct{}
	code     int
}

// start starts shadow with args in dir; the test's end kills it and its jail if they are left.
func (sh *shadowAs) start(dir string, args ...string) *bgRun {
	sh.t.Helper()
	tmp := sh.t.TempDir()
	r := &bgRun{t: sh.t, cmd: sh.command(dir, args...), out: filepath.Join(tmp, "stdout"), err: filepath.Join(tmp, "stderr"), exited: make(chan struct{})}
	stdout, err := os.Create(r.out)
	if err != nil {
		sh.t.Fatal(err)
	}
	stderr, err := os.Create(r.err)
	if err != nil {
		sh.t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
	err = r.cmd.Start()
	stdout.Close()
	stderr.Close()
	if err != nil {
		sh.t.Fatal(err)
	}
	go func() {
		err := r.cmd.Wait()
		r.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		close(r.exited)
	}()
	sh.t.Cleanup(func() {
		init := jailInit(r.cmd.Process.Pid)
		select {
		case <-r.exited:
		default:
			syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.exited
		}
		if init != 0 {
			syscall.Kill(init, syscall.SIGKILL)
			waitUntil(sh.t, "the jail's PID 1 to end", func() bool { return !exists(fmt.Sprintf("/proc/%d", init)) })
		}
	})
	return r
}

// wait waits for the command's end and returns its exit status.
func (r *bgRun) wait() int {
	r.t.Helper()
	select {
	case <-r.exited:
	case <-time.After(3 * time.Minute):
		r.t.Fatalf("%v never ended:\n%s", r.cmd.Args, r.output())
	}
	return r.code
}

// ended reports whether the command has ended.
func (r *bgRun) ended() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

func (r *bgRun) output() string {
	out, _ := os.ReadFile(r.out)
	errs, _ := os.ReadFile(r.err)
	return "stdout:\n" + string(out) + "stderr:\n" + string(errs)
}

// waitUntil polls cond until it holds, for a generous while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
	}
}

// must runs shadow and fails the test unless it exits 0; it returns stdout and stderr together.
func (sh *shadowAs) must(dir string, args ...string) string {
	sh.t.Helper()
	out, errs, code := sh.run(dir, args...)
	if code != 0 {
		sh.t.Fatalf("shadow %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out + errs
}

// gitProject makes a git project of files, owned by the account.
func (sh *shadowAs) gitProject(name string, files map[string]string) string {
	sh.t.Helper()
	p := filepath.Join(sh.dir, name)
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(p, path)), 0o755); err != nil {
			sh.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, path), []byte(body), 0o644); err != nil {
			sh.t.Fatal(err)
		}
	}
	git(sh.t, p, "init", "-q")
	git(sh.t, p, "add", "-A")
	git(sh.t, p, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
	sh.chown(p)
	return p
}

// markers makes a host directory the jails share (--rw), for runs to say where they are.
func (sh *shadowAs) markers() string {
	sh.t.Helper()
	m := filepath.Join(sh.dir, "markers")
	sh.mkdir(m)
	return m
}

// awaitMarker is shell that waits (two minutes at most, then fails the script) for marker m.
func awaitMarker(m string) string {
	return fmt.Sprintf(`i=0; while [ ! -e %[1]s ]; do i=$((i+1)); if [ $i -gt 2400 ]; then echo "never saw %[1]s" >&2; exit 3; fi; sleep 0.05; done; `, m)
}

// sessionID is the ID of the project's session named name, from `shadow sessions --json`.
func (sh *shadowAs) sessionID(proj, name string) string {
	sh.t.Helper()
	out := sh.must(proj, "sessions", "--json")
	var list []struct {
		ID, Project, Name, State string
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndexByte(out, ']')+1]), &list); err != nil {
		sh.t.Fatalf("sessions --json: %v\n%s", err, out)
	}
	for _, s := range list {
		if s.Name == name && s.Project == proj {
			return s.ID
		}
	}
	sh.t.Fatalf("no session named %s in:\n%s", name, out)
	return ""
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i) + "\n")
	}
	return b.String()
}

func asRootAndUnprivileged(t *testing.T, f func(t *testing.T, unprivileged bool)) {
	for _, unprivileged := range []bool{false, true} {
		name := "root"
		if unprivileged {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) { f(t, unprivileged) })
	}
}

// Two sessions of one git project run at once, each waiting in its jail until the other has
// started and has made its edits, so neither can end before the other runs: each sees the
// project and its own edits only. Each edits other lines (or, in the second case, the same
// line) of one file and adds a file of its own; session a deletes a file. Applied a then b, and
// on a fresh project b then a: with other lines the project holds both edits and the second
// apply says it merged; with the same line the second apply leaves that file out, nothing of
// the first is overwritten, and the second session's diff and review show the conflict.
func TestTwoSessionsAtOnceApplyInBothOrders(t *testing.T) {
	asRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		for _, sameLine := range []bool{false, true} {
			for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
				name := fmt.Sprintf("other lines/%s then %s", order[0], order[1])
				if sameLine {
					name = fmt.Sprintf("same line/%s then %s", order[0], order[1])
				}
				t.Run(name, func(t *testing.T) { twoSessionsAtOnce(t, unprivileged, sameLine, order) })
			}
		}
	})
}

func twoSessionsAtOnce(t *testing.T, unprivileged, sameLine bool, order [2]string) {
	sh := newShadowAs(t, unprivileged)
	base := lines(10, func(i int) string { return "line " + strconv.Itoa(i) })
	proj := sh.gitProject("project", map[string]string{"f.txt": base, "gone.txt": "to be deleted\n"})
	m := sh.markers()
	edit := map[string]string{"a": "s/^line 2$/A TWO/", "b": "s/^line 8$/B EIGHT/"}
	if sameLine {
		edit = map[string]string{"a": "s/^line 5$/A FIVE/", "b": "s/^line 5$/B FIVE/"}
	}
	script := func(me, other string) string {
		s := fmt.Sprintf("touch %s/%s-up; ", m, me) + awaitMarker(m+"/"+other+"-up") +
			fmt.Sprintf("sed -i '%s' f.txt && echo %s > %s.txt", edit[me], me, me)
		if me == "a" {
			s += " && rm gone.txt"
		}
		// The other session's edits are made by now, and stay out of this jail's view.
		s += fmt.Sprintf(" && touch %s/%s-done; ", m, me) + awaitMarker(m+"/"+other+"-done") +
			fmt.Sprintf(`if [ -e %[1]s.txt ]; then echo "%[1]s.txt is seen by %[2]s" >&2; exit 4; fi; `, other, me) +
			fmt.Sprintf(`if grep -q '^%[1]s ' f.txt; then echo "%[1]s's edit is seen by %[2]s" >&2; exit 4; fi; `, strings.ToUpper(other), me) +
			awaitMarker(m+"/end") + "echo " + me + " END"
		return s
	}
	runs := map[string]*bgRun{}
	for _, me := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[me]
		runs[me] = sh.start(proj, "run", "--session", me, "--rw", m, "--", "sh", "-c", script(me, other))
	}
	edited := func() bool { return exists(m+"/a-done") && exists(m+"/b-done") }
	waitUntil(t, "both runs to make their edits", func() bool { return edited() || runs["a"].ended() || runs["b"].ended() })
	if !edited() {
		t.Fatalf("a run ended before both made their edits\nrun a: exit %d\n%s\nrun b: exit %d\n%s", runs["a"].wait(), runs["a"].output(), runs["b"].wait(), runs["b"].output())
	}
	// Both are running now, and shadow sessions says so; a second run of either session is
	// refused at once rather than waiting.
	var list []struct {
		Name    string
		Running bool
	}
	if out := sh.must(proj, "sessions", "--json"); json.Unmarshal([]byte(out[:strings.LastIndexByte(out, ']')+1]), &list) != nil ||
		len(list) != 2 || !list[0].Running || !list[1].Running {
		t.Errorf("shadow sessions --json while both run:\n%s", out)
	}
	for _, me := range []string{"a", "b"} {
		began := time.Now()
		out, errs, code := sh.run(proj, "run", "--session", me, "--", "true")
		if code == 0 || !strings.Contains(errs, "busy") {
			t.Errorf("a second run --session %s while it runs: exit %d\n%s%s", me, code, out, errs)
		}
		// Not after waiting out a lock that is held for a moment only (RecoveryWait, 30s).
		if took := time.Since(began); took > 20*time.Second {
			t.Errorf("a second run --session %s while it runs was refused after %v", me, took)
		}
	}
	if err := os.WriteFile(m+"/end", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, me := range []string{"a", "b"} {
		if code := runs[me].wait(); code != 0 {
			t.Fatalf("run --session %s: exit %d\n%s", me, code, runs[me].output())
		}
		if out := readFile(t, runs[me].out); !strings.Contains(out, me+" END") {
			t.Fatalf("run --session %s did not reach its end:\n%s", me, runs[me].output())
		}
	}

	want := map[string]string{"a": "A TWO", "b": "B EIGHT"}
	if sameLine {
		want = map[string]string{"a": "A FIVE", "b": "B FIVE"}
	}
	first, second := order[0], order[1]
	out1 := sh.must(proj, "apply", "--session", first, "--all", "--yes")
	if strings.Contains(out1, "merged") {
		t.Errorf("the first apply merged: nothing had changed under it\n%s", out1)
	}
	if sameLine {
		// The second session's file is now a conflict, and its diff and review say so.
		doc := sh.must(proj, "diff", "--session", second, "--json")
		var d struct {
			Files []struct {
				Path     string
				Conflict bool
				Merge    string
			}
		}
		if err := json.Unmarshal([]byte(doc[:strings.LastIndexByte(doc, '}')+1]), &d); err != nil {
			t.Fatalf("diff --json: %v\n%s", err, doc)
		}
		conflicts := 0
		for _, f := range d.Files {
			if f.Path == "f.txt" && f.Conflict && f.Merge == "conflict" {
				conflicts++
			}
		}
		if conflicts != 1 {
			t.Errorf("diff --session %s --json does not show f.txt as a conflict:\n%s", second, doc)
		}
		if !unprivileged {
			env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
			for _, e := range sh.env {
				if strings.HasPrefix(e, "XDG_") {
					env = append(env, e)
				}
			}
			scr := newTmux(t, proj, env, sh.bin, "review", "--session", second)
			// The file list marks f.txt C; on it (the second file), the review shows the conflict.
			if s := scr.waitFor("file 1/"); !regexp.MustCompile(`M f\.txt +C `).MatchString(s) {
				t.Errorf("review --session %s does not mark f.txt as a conflict:\n%s", second, s)
			}
			scr.keys("}", "file 2/")
			if s := scr.waitFor("CONFLICT"); !strings.Contains(s, "f.txt") || !strings.Contains(s, "+"+want[second]) {
				t.Errorf("review --session %s on the conflict:\n%s", second, s)
			}
			scr.keys("q", "")
		}
	}
	out2 := sh.must(proj, "apply", "--session", second, "--all", "--yes")

	got := readFile(t, filepath.Join(proj, "f.txt"))
	var wantF string
	if sameLine {
		wantF = strings.Replace(base, "line 5\n", want[first]+"\n", 1)
		if !regexp.MustCompile(`skip +f\.txt: conflict`).MatchString(out2) {
			t.Errorf("the second apply does not say it left f.txt out:\n%s", out2)
		}
	} else {
		wantF = strings.NewReplacer("line 2\n", "A TWO\n", "line 8\n", "B EIGHT\n").Replace(base)
		if !regexp.MustCompile(`f\.txt \(merged with your changes`).MatchString(out2) {
			t.Errorf("the second apply does not say it merged f.txt:\n%s", out2)
		}
	}
	if got != wantF {
		t.Errorf("f.txt after applying %s then %s:\n%s\nwant:\n%s\nfirst apply:\n%s\nsecond apply:\n%s", first, second, got, wantF, out1, out2)
	}
	for _, me := range []string{"a", "b"} {
		if got := readFile(t, filepath.Join(proj, me+".txt")); got != me+"\n" {
			t.Errorf("%s.txt after both applies: %q", me, got)
		}
	}
	if exists(filepath.Join(proj, "gone.txt")) {
		t.Errorf("gone.txt, deleted by session a, is still in the project")
	}
	if sameLine {
		// The conflict stays staged in the second session, for the review.
		if out := sh.must(proj, "diff", "--session", second, "--name-only"); strings.TrimSpace(out) != "f.txt" {
			t.Errorf("after the second apply, session %s still stages:\n%s", second, out)
		}
	}
}

// A kill -9 of session a's run, of its shadow or of its jail's PID 1, at a random moment while
// its command writes or ends, leaves session b's run going: b ends normally, its staging and
// both its checkpoints are whole (and apply whole). Session a, after the next command, is
// consistent: its one step is staged whole, or absent and reported incomplete, never in part.
// No command on a (its recovery, its diff, its discard) changes a byte of b's session.
func TestKillOneSessionBesideAnother(t *testing.T) {
	asRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		for _, victim := range []string{"shadow", "PID 1"} {
			// While the command writes (after a random hundred of its files), while its
			// checkpoint is written, and at a random moment of its end.
			k := 100 * (1 + rand.IntN(14))
			delay := time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))
			moments := []killMoment{
				{fmt.Sprintf("after file %d", k), fmt.Sprintf("P%d\n", k), "", 0},
				{"c1 being written", "", "c1.tmp", 0},
				{fmt.Sprintf("%v after the last line", delay.Round(time.Millisecond)), "LAST\n", "", delay},
			}
			for _, at := range moments {
				t.Run(victim+"/"+at.name, func(t *testing.T) { killOneSessionBesideAnother(t, unprivileged, victim, at) })
			}
		}
	})
}

// killMoment is when session a's run is killed: once its output holds line (and delay more), or
// once its checkpoint directory holds file.
type killMoment struct {
	name, line, file string
	delay            time.Duration
}

func killOneSessionBesideAnother(t *testing.T, unprivileged bool, victim string, at killMoment) {
	const aFiles, bFiles = 1500, 400
	sh := newShadowAs(t, unprivileged)
	proj := sh.gitProject("project", map[string]string{"README": "base\n"})
	m := sh.markers()
	sh.must(proj, "run", "--session", "b", "--", "sh", "-c", "echo one > b-first.txt")

	// a says how far it is every 100 files.
	a := sh.start(proj, "run", "--session", "a", "--rw", m, "--", "sh", "-c",
		fmt.Sprintf("touch %[1]s/a-up; ", m)+awaitMarker(m+"/b-up")+
			fmt.Sprintf("mkdir ad; i=0; while [ $i -lt %d ]; do echo $i > ad/f$i; i=$((i+1)); if [ $((i %% 100)) = 0 ]; then echo P$i; fi; done; echo LAST", aFiles))
	b := sh.start(proj, "run", "--session", "b", "--rw", m, "--", "sh", "-c",
		fmt.Sprintf("touch %[1]s/b-up; ", m)+awaitMarker(m+"/a-up")+
			fmt.Sprintf("mkdir bd; i=0; while [ $i -lt %d ]; do echo $i > bd/f$i; i=$((i+1)); done; ", bFiles)+
			awaitMarker(m+"/go-b")+"echo tail > b-last.txt; echo B END")
	var init int
	waitUntil(t, "a's jail to start", func() bool {
		if init == 0 {
			init = jailInit(a.cmd.Process.Pid)
		}
		return init != 0 || a.ended()
	})
	// The moment is looked for closely, so that the kill follows it at once; it may pass
	// between two looks (hit says whether it was seen).
	hit := false
	for deadline := time.Now().Add(2 * time.Minute); !hit && !a.ended() && time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if at.line != "" {
			out, _ := os.ReadFile(a.out)
			hit = strings.Contains(string(out), at.line)
		} else {
			cps, _ := filepath.Glob(filepath.Join(sh.dir, "state", "shadow", "sessions", "*", "checkpoints", at.file))
			hit = len(cps) > 0
		}
	}
	// A random moment after the line, not a wait for anything.
	time.Sleep(at.delay)
	pid := a.cmd.Process.Pid
	if victim == "PID 1" {
		pid = init
	}
	syscall.Kill(pid, syscall.SIGKILL)
	a.wait()
	waitUntil(t, "a's jail to end", func() bool { return !exists(fmt.Sprintf("/proc/%d", init)) })
	aOut := a.output()
	// b goes on after a is gone.
	if err := os.WriteFile(m+"/go-b", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(); code != 0 || !strings.Contains(readFile(t, b.out), "B END") {
		t.Fatalf("session b's run beside the killed one: exit %d\n%s\nrun a:\n%s", code, b.output(), aOut)
	}

	stat := sh.must(proj, "diff", "--session", "b", "--stat")
	if !strings.Contains(stat, fmt.Sprintf(" %d files changed", bFiles+2)) {
		t.Errorf("session b's diff --stat after a's kill:\n%s", lastLine(stat))
	}
	// b's first run staged one file (c1); its second the rest, in one step or, on a busy
	// machine, a quiet checkpoint and the run's end: the steps after c1 hold them all.
	log := sh.must(proj, "log", "--session", "b")
	steps := regexp.MustCompile(`(?m)^c(\d+) .*\b(\d+) files?\s+\+\d+ -\d+\s*$`)
	first, rest := -1, 0
	for _, m := range steps.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "1" {
			first = n
		} else {
			rest += n
		}
	}
	if first != 1 || rest != bFiles+1 {
		t.Errorf("session b's log after a's kill (c1 %d files, the steps after it %d, want 1 and %d):\n%s", first, rest, bFiles+1, log)
	}
	bDir := filepath.Join(sh.dir, "state", "shadow", "sessions", sh.sessionID(proj, "b"))
	before := treeSnapshot(t, bDir)

	// The next commands on a: its diff at once (which recovers what the kill left), its log.
	aStat, aErr, code := sh.run(proj, "diff", "--session", "a", "--stat")
	if code != 0 {
		t.Fatalf("diff --session a --stat after the kill: exit %d\n%s%s", code, aStat, aErr)
	}
	aLog := sh.must(proj, "log", "--session", "a")
	staged := 0
	if n := filesChanged.FindStringSubmatch(aStat); n != nil {
		staged, _ = strconv.Atoi(n[1])
	}
	step := regexp.MustCompile(`(?m)^c1 .*\b(\d+) files?\b`).FindStringSubmatch(aLog)
	report := fmt.Sprintf("killed %s at %s (reached: %v)\nrun a:\n%s\ndiff --session a --stat:\n%s%s\nlog --session a:\n%s", victim, at.name, hit, aOut, aErr, lastLine(aStat), aLog)
	switch {
	case step != nil && step[1] == strconv.Itoa(staged) && staged > 0:
		// A whole step: what the command had written when its jail ended.
	case step == nil && staged == 0 && (strings.Contains(aErr, "incomplete") || strings.Contains(aOut, "incomplete")):
	default:
		t.Fatalf("session a after the kill is not one whole step or none:\n%s", report)
	}
	t.Logf("\n%s", report)

	sh.must(proj, "discard", "--session", "a", "--yes")
	if after := treeSnapshot(t, bDir); !equalSnapshots(t, before, after) {
		t.Errorf("the commands on session a changed session b's directory")
	}
	// b applies whole.
	sh.must(proj, "apply", "--session", "b", "--all", "--yes")
	for i := range bFiles {
		if got := readFile(t, filepath.Join(proj, "bd", "f"+strconv.Itoa(i))); got != strconv.Itoa(i)+"\n" {
			t.Fatalf("bd/f%d after applying b: %q", i, got)
		}
	}
	if exists(filepath.Join(proj, "ad")) {
		t.Errorf("session a's files reached the project")
	}
}

// treeSnapshot is every entry under dir: its type, mode, and its content's hash or link's target.
func treeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		v := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:])
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		}
		snap[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func equalSnapshots(t *testing.T, before, after map[string]string) bool {
	t.Helper()
	var diffs []string
	for p, v := range before {
		if after[p] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %q -> %q", p, v, after[p]))
		}
	}
	for p, v := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: new %q", p, v))
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Log(d)
	}
	return len(diffs) == 0
}

// With two sessions of the project open and none named, every command that takes --session
// (taken from the command tree, so that a new one is held to it too) refuses in one line naming
// both, exit 2, and neither opens a third session nor runs in one of the two.
func TestSeveralOpenNoneNamed(t *testing.T) {
	args := map[string][]string{
		"run": {"--", "true"}, "shell": nil, "diff": nil, "apply": {"--all", "--yes"}, "log": nil,
		"revert": {"--to", "c1"}, "discard": {"--yes"}, "export": {"--branch", "x"}, "net": nil,
		// These need a terminal: they run in tmux.
		"review": nil, "tui": {"--", "true"},
	}
	terminal := map[string]bool{"review": true, "tui": true}
	var cmds []string
	for _, c := range newRootCmd().Commands() {
		if c.Flags().Lookup("session") == nil {
			continue
		}
		if _, ok := args[c.Name()]; !ok {
			t.Errorf("shadow %s takes --session: add it to this test", c.Name())
		}
		cmds = append(cmds, c.Name())
	}
	asRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		sh := newShadowAs(t, unprivileged)
		proj := sh.gitProject("project", map[string]string{"f.txt": "base\n"})
		for _, me := range []string{"a", "b"} {
			sh.must(proj, "run", "--session", me, "--", "sh", "-c", "echo "+me+" > "+me+".txt")
		}
		ids := map[string]string{"a": sh.sessionID(proj, "a"), "b": sh.sessionID(proj, "b")}
		names := regexp.MustCompile(fmt.Sprintf(`^shadow: project .* has 2 open sessions \(a \(%s\), b \(%s\)\); choose one with --session NAME\n$`, ids["a"], ids["b"]))
		for _, name := range cmds {
			argv := append([]string{name}, args[name]...)
			if terminal[name] {
				if unprivileged {
					continue
				}
				env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color"}
				for _, e := range sh.env {
					if strings.HasPrefix(e, "XDG_") {
						env = append(env, e)
					}
				}
				scr := newTmux(t, proj, env, append([]string{"sh", "-c", `"$0" "$@"; echo "exit $?"`, sh.bin}, argv...)...)
				// The pane is 100 columns wide: the line is joined where it wraps.
				s := strings.ReplaceAll(scr.waitFor("exit "), "\n", "")
				if !strings.Contains(s, "has 2 open sessions (a ("+ids["a"]+"), b ("+ids["b"]+")); choose one with --session NAME") || !strings.Contains(s, "exit 2") {
					t.Errorf("shadow %v with two open sessions, on a terminal:\n%s", argv, s)
				}
				exec.Command("tmux", "-L", scr.socket, "kill-server").Run()
				continue
			}
			out, errs, code := sh.run(proj, argv...)
			if code != 2 || !names.MatchString(errs) || out != "" {
				t.Errorf("shadow %v with two open sessions: exit %d\nstdout: %s\nstderr: %s", argv, code, out, errs)
			}
		}
		// Nothing ran, opened or changed.
		out := sh.must(proj, "sessions", "--json")
		var list []struct {
			Name        string
			Runs        int
			State       string
			FilesStaged int `json:"files_staged"`
		}
		if err := json.Unmarshal([]byte(out[:strings.LastIndexByte(out, ']')+1]), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 {
			t.Fatalf("sessions after the refused commands:\n%s", out)
		}
		for _, s := range list {
			if s.Runs != 1 || s.State != "open" || s.FilesStaged != 1 {
				t.Errorf("session %s after the refused commands: %d runs, %s, %d staged", s.Name, s.Runs, s.State, s.FilesStaged)
			}
		}
		if exists(filepath.Join(proj, "a.txt")) || exists(filepath.Join(proj, "b.txt")) {
			t.Errorf("a refused apply wrote to the project")
		}
	})
}
