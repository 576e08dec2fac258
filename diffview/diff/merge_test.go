package diff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mergeLines is n lines "line 1\n" … "line n\n".
func mergeLines(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %d\n", i+1)
	}
	return out
}

func withLine(lines []string, i int, text string) []byte {
	c := append([]string(nil), lines...)
	c[i] = text
	return []byte(strings.Join(c, ""))
}

// acceptAll decides every hunk of m; conflicts get conflict, the others Accepted.
func acceptAll(m Merged, conflict Verdict) map[string]Decision {
	d := map[string]Decision{}
	for _, h := range m.Diff.Hunks {
		v := Accepted
		if _, ok := m.Conflicts[h.ID]; ok {
			v = conflict
		}
		if v != Undecided {
			d[h.ID] = Decision{Verdict: v}
		}
	}
	return d
}

func TestMerge3Separate(t *testing.T) {
	base := mergeLines(50)
	host := withLine(base, 1, "host's line 2\n")
	agent := withLine(base, 39, "agent's line 40\n")
	m := Merge3("f.txt", []byte(strings.Join(base, "")), host, agent, Options{})
	if !m.Clean() || len(m.Diff.Hunks) != 1 {
		t.Fatalf("clean %v, %d hunks; want one clean hunk", m.Clean(), len(m.Diff.Hunks))
	}
	h := m.Diff.Hunks[0]
	if h.OldStart != 37 || !strings.Contains(h.Text(), "-line 40\n+agent's line 40\n") {
		t.Fatalf("the agent's hunk against the host's file:\n%s", h.Text())
	}
	got, err := Apply(host, m.Diff.Hunks, acceptAll(m, Accepted))
	if err != nil {
		t.Fatal(err)
	}
	want := withLine(SplitLines(host), 39, "agent's line 40\n")
	if string(got) != string(want) {
		t.Fatalf("merge lost a change:\n%s", got)
	}
}

func TestMerge3SameLine(t *testing.T) {
	base := mergeLines(10)
	host := withLine(base, 4, "host's five\n")
	agent := withLine(withLineLines(base, 8, "agent's nine\n"), 4, "agent's five\n")
	m := Merge3("f.txt", []byte(strings.Join(base, "")), host, agent, Options{})
	if m.Clean() || len(m.Conflicts) != 1 || len(m.Diff.Hunks) != 2 {
		t.Fatalf("want one conflict beside one clean hunk, got %d conflicts, %d hunks", len(m.Conflicts), len(m.Diff.Hunks))
	}
	for _, h := range m.Diff.Hunks {
		c, ok := m.Conflicts[h.ID]
		if !ok {
			continue
		}
		if !strings.Contains(h.Text(), "-host's five\n+agent's five\n") || strings.Contains(h.Text(), "nine") {
			t.Fatalf("the conflict hunk must hold exactly host's and agent's lines:\n%s", h.Text())
		}
		if len(c.Base) != 1 || c.Base[0] != "line 5\n" || c.BaseStart != 5 {
			t.Fatalf("conflict base %q at %d", c.Base, c.BaseStart)
		}
	}
	// Undecided, the conflict keeps the host's line; the clean hunk still applies.
	got, err := Apply(host, m.Diff.Hunks, acceptAll(m, Undecided))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "host's five\n") || !strings.Contains(string(got), "agent's nine\n") {
		t.Fatalf("undecided conflict: %q", got)
	}
}

func withLineLines(lines []string, i int, text string) []string {
	return SplitLines(withLine(lines, i, text))
}

// TestMerge3Property merges random edits of a random base. The base is cut into blocks of three
// lines; an edit changes a block's middle line (replace, delete, or insert before it), so edits
// in different blocks always have an unchanged line between them. Edits of one side only must
// merge into both; a block both sides edited must be a conflict hunk that nothing is applied
// from unless it is accepted. Where git is installed, `git merge-file` must agree.
func TestMerge3Property(t *testing.T) {
	gitOK := exec.Command("git", "--version").Run() == nil
	rng := rand.New(rand.NewPCG(18, 2026))
	vocab := []string{"}\n", "\n", "return nil\n", "x\n"}
	trials := 400
	if testing.Short() {
		trials = 100
	}
	for trial := range trials {
		nb := 1 + rng.IntN(12)
		var base []string
		for i := range nb * 3 {
			if rng.IntN(3) == 0 {
				base = append(base, vocab[rng.IntN(len(vocab))])
			} else {
				base = append(base, fmt.Sprintf("b%d.%d\n", trial, i))
			}
		}
		if rng.IntN(4) == 0 {
			base[len(base)-1] = strings.TrimSuffix(base[len(base)-1], "\n") + "-noeol"
		}
		// op per block and side: 0 none, 1 replace, 2 delete, 3 insert before the middle line.
		hostOps, agentOps := make([]int, nb), make([]int, nb)
		overlap := false
		for k := range nb {
			switch rng.IntN(5) {
			case 0, 1:
				hostOps[k] = 1 + rng.IntN(3)
			case 2, 3:
				agentOps[k] = 1 + rng.IntN(3)
			case 4:
				if rng.IntN(2) == 0 {
					hostOps[k], agentOps[k] = 1+rng.IntN(3), 1+rng.IntN(3)
					overlap = true
				}
			}
		}
		// writeBlock writes block k of the base as op leaves it, the edit marked as who's.
		writeBlock := func(b *strings.Builder, k, op int, who string) {
			b.WriteString(base[3*k])
			mid := base[3*k+1]
			switch op {
			case 0:
				b.WriteString(mid)
			case 1:
				b.WriteString(fmt.Sprintf("%s%d.%d\n", who, trial, k))
			case 3:
				b.WriteString(fmt.Sprintf("%s-ins%d.%d\n", who, trial, k))
				b.WriteString(mid)
			}
			b.WriteString(base[3*k+2])
		}
		build := func(who string, ops []int, only func(k int) bool) []byte {
			var b strings.Builder
			for k := range nb {
				op := 0
				if only(k) {
					op = ops[k]
				}
				writeBlock(&b, k, op, who)
			}
			return []byte(b.String())
		}
		all := func(int) bool { return true }
		both := func(k int) bool { return hostOps[k] != 0 && agentOps[k] != 0 }
		host := build("h", hostOps, all)
		agent := build("a", agentOps, all)
		// The expected merges: host's edits, plus the agent's where the host did not edit (or, with
		// agentWins, wherever the agent edited).
		expect := func(agentWins bool) string {
			var b strings.Builder
			for k := range nb {
				op, who := hostOps[k], "h"
				if agentOps[k] != 0 && (hostOps[k] == 0 || agentWins) {
					op, who = agentOps[k], "a"
				}
				writeBlock(&b, k, op, who)
			}
			return b.String()
		}
		m := Merge3("f", []byte(strings.Join(base, "")), host, agent, Options{})
		// Both deleting the same line is the same change: no conflict there.
		sameChange := func(k int) bool { return hostOps[k] == 2 && agentOps[k] == 2 }
		wantConflicts := 0
		for k := range nb {
			if both(k) && !sameChange(k) {
				wantConflicts++
			}
		}
		if len(m.Conflicts) != wantConflicts {
			t.Fatalf("trial %d: %d conflicts, want %d (host ops %v, agent ops %v)\nbase %q\nhost %q\nagent %q",
				trial, len(m.Conflicts), wantConflicts, hostOps, agentOps, base, host, agent)
		}
		hostWins, err := Apply(host, m.Diff.Hunks, acceptAll(m, Undecided))
		if err != nil {
			t.Fatal(err)
		}
		if string(hostWins) != expect(false) {
			t.Fatalf("trial %d: with conflicts undecided\n got %q\nwant %q\n(host ops %v, agent ops %v)", trial, hostWins, expect(false), hostOps, agentOps)
		}
		agentWins, err := Apply(host, m.Diff.Hunks, acceptAll(m, Accepted))
		if err != nil {
			t.Fatal(err)
		}
		if string(agentWins) != expect(true) {
			t.Fatalf("trial %d: with conflicts accepted\n got %q\nwant %q", trial, agentWins, expect(true))
		}
		if !gitOK {
			continue
		}
		out, clean := gitMergeFile(t, []byte(strings.Join(base, "")), host, agent)
		if clean != m.Clean() {
			t.Fatalf("trial %d: git merge-file clean=%v, Merge3 clean=%v (host ops %v, agent ops %v, overlap %v)\n%s",
				trial, clean, m.Clean(), hostOps, agentOps, overlap, out)
		}
		if clean && out != expect(false) {
			t.Fatalf("trial %d: git merge-file gave\n%q\nwant %q", trial, out, expect(false))
		}
	}
}

// gitMergeFile runs `git merge-file -p host base agent` and reports its output and whether it
// merged without conflict.
func gitMergeFile(t *testing.T, base, host, agent []byte) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string][]byte{"base": base, "host": host, "agent": agent} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "merge-file", "-p", "host", "base", "agent")
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), true
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 127:
		return string(out), false
	}
	t.Fatalf("git merge-file: %v", err)
	return "", false
}
