package diff

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// sides rebuilds the old and new contents a line diff describes.
func sides(lines []Line) (old, new string) {
	var o, n strings.Builder
	for _, l := range lines {
		if l.Op != Insert {
			o.WriteString(l.Text)
		}
		if l.Op != Delete {
			n.WriteString(l.Text)
		}
	}
	return o.String(), n.String()
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string // ops of the diff, one byte per line
	}{
		{"both empty", "", "", ""},
		{"new file", "", "a\nb\n", "++"},
		{"deleted file", "a\nb\n", "", "--"},
		{"same", "a\nb\n", "a\nb\n", "  "},
		{"change middle", "a\nb\nc\n", "a\nB\nc\n", " -+ "},
		{"add final newline", "a\nb", "a\nb\n", " -+"},
		{"drop final newline", "a\nb\n", "a\nb", " -+"},
		{"crlf to lf", "a\r\nb\r\n", "a\nb\n", "--++"},
		{"crlf kept", "a\r\nb\r\nc\r\n", "a\r\nx\r\nc\r\n", " -+ "},
		{"insert at top", "b\nc\n", "a\nb\nc\n", "+  "},
		{"only newline", "\n", "\n\n", " +"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, exact := DiffLines([]byte(tt.old), []byte(tt.new), time.Minute)
			if !exact {
				t.Errorf("exact = false on a small input")
			}
			o, n := sides(lines)
			if o != tt.old || n != tt.new {
				t.Fatalf("sides = %q, %q; want %q, %q", o, n, tt.old, tt.new)
			}
			var ops []byte
			for _, l := range lines {
				ops = append(ops, byte(l.Op))
			}
			if string(ops) != tt.want {
				t.Errorf("ops = %q, want %q", ops, tt.want)
			}
		})
	}
}

func TestDiffLinesBudgetFallback(t *testing.T) {
	// Two large unrelated files with a shared prefix and suffix: a budget of
	// one nanosecond cannot finish, and the result must still be correct.
	var a, b strings.Builder
	a.WriteString("head\n")
	b.WriteString("head\n")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&a, "a%d\n", r.IntN(500))
		fmt.Fprintf(&b, "a%d\n", r.IntN(500))
	}
	a.WriteString("tail")
	b.WriteString("tail")
	lines, exact := DiffLines([]byte(a.String()), []byte(b.String()), time.Nanosecond)
	if exact {
		t.Errorf("exact = true although the budget was 1ns")
	}
	o, n := sides(lines)
	if o != a.String() || n != b.String() {
		t.Fatalf("fallback diff does not rebuild both sides")
	}
	if lines[0] != (Line{Context, "head\n"}) || lines[len(lines)-1] != (Line{Context, "tail"}) {
		t.Errorf("common prefix/suffix not kept as context: first %q last %q", lines[0], lines[len(lines)-1])
	}
}

func TestGroupContext(t *testing.T) {
	old := numbered(1, 20)
	new := strings.Replace(old, "l3\n", "L3\n", 1)
	new = strings.Replace(new, "l17\n", "L17\n", 1)
	fd := Compute("f", []byte(old), []byte(new), Options{})
	if len(fd.Hunks) != 2 {
		t.Fatalf("got %d hunks, want 2 (changes 14 lines apart)", len(fd.Hunks))
	}
	if got := fd.Hunks[0].Header(); got != "@@ -1,6 +1,6 @@" {
		t.Errorf("first header = %q", got)
	}
	if got := fd.Hunks[1].Header(); got != "@@ -14,7 +14,7 @@" {
		t.Errorf("second header = %q", got)
	}
	// Seven unchanged lines between two changes (<= 2*3+1... > 6) keep two
	// hunks; six join them.
	new2 := strings.Replace(old, "l3\n", "L3\n", 1)
	new2 = strings.Replace(new2, "l10\n", "L10\n", 1)
	if fd := Compute("f", []byte(old), []byte(new2), Options{Context: 3}); len(fd.Hunks) != 1 {
		t.Errorf("changes 6 lines apart: %d hunks, want 1", len(fd.Hunks))
	}
	new3 := strings.Replace(old, "l3\n", "L3\n", 1)
	new3 = strings.Replace(new3, "l11\n", "L11\n", 1)
	if fd := Compute("f", []byte(old), []byte(new3), Options{Context: 3}); len(fd.Hunks) != 2 {
		t.Errorf("changes 7 lines apart: %d hunks, want 2", len(fd.Hunks))
	}
	if fd.Added != 2 || fd.Deleted != 2 {
		t.Errorf("counts = +%d -%d, want +2 -2", fd.Added, fd.Deleted)
	}
}

func TestHunkTextNoNewline(t *testing.T) {
	fd := Compute("f", []byte("a\nb"), []byte("a\nc"), Options{})
	want := "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
	if got := fd.Hunks[0].Text(); got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	fd = Compute("f", nil, []byte("x\n"), Options{})
	if got := fd.Hunks[0].Header(); got != "@@ -0,0 +1 @@" {
		t.Errorf("new file header = %q", got)
	}
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestHunkIDStable(t *testing.T) {
	old := numbered(1, 40)
	new := strings.Replace(old, "l5\n", "five\n", 1)
	a := Compute("f", []byte(old), []byte(new), Options{}).Hunks[0]
	// Another change far below, or a different context width, keeps the id.
	new2 := strings.Replace(new, "l35\n", "x\n", 1)
	b := Compute("f", []byte(old), []byte(new2), Options{}).Hunks[0]
	c := Compute("f", []byte(old), []byte(new), Options{Context: 1}).Hunks[0]
	if a.ID != b.ID || a.ID != c.ID {
		t.Errorf("ids differ: %s %s %s", a.ID, b.ID, c.ID)
	}
	// Other content, another path or another place gives another id.
	d := Compute("f", []byte(old), []byte(strings.Replace(old, "l5\n", "FIVE\n", 1)), Options{}).Hunks[0]
	e := Compute("g", []byte(old), []byte(new), Options{}).Hunks[0]
	f := Compute("f", []byte(old), []byte(strings.Replace(old, "l6\n", "five\n", 1)), Options{}).Hunks[0]
	for _, other := range []Hunk{d, e, f} {
		if other.ID == a.ID {
			t.Errorf("hunk %s has the same id as %s", other.Header(), a.Header())
		}
	}
}

func TestSplit(t *testing.T) {
	old := "a\nb\nc\nd\ne\n"
	new := "A\nb\nc\nD\ne\n"
	h := Compute("f", []byte(old), []byte(new), Options{Context: 3}).Hunks
	if len(h) != 1 {
		t.Fatalf("%d hunks, want 1", len(h))
	}
	pieces := Split(h[0])
	if len(pieces) != 2 {
		t.Fatalf("split into %d, want 2", len(pieces))
	}
	if got := pieces[0].Text(); got != "@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n" {
		t.Errorf("piece 0 = %q", got)
	}
	if got := pieces[1].Text(); got != "@@ -2,4 +2,4 @@\n b\n c\n-d\n+D\n e\n" {
		t.Errorf("piece 1 = %q", got)
	}
	// Accept only the second piece; the decision is found through the
	// unsplit hunk.
	got, err := Apply([]byte(old), h, map[string]Decision{pieces[1].ID: {Verdict: Accepted}})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a\nb\nc\nD\ne\n" {
		t.Errorf("apply piece 1 = %q", got)
	}
	if n := len(Split(pieces[0])); n != 1 {
		t.Errorf("a single change split into %d", n)
	}
}

func TestSelectLines(t *testing.T) {
	old := "a\nb\nc\n"
	new := "x\ny\nc\n"
	h := Compute("f", []byte(old), []byte(new), Options{}).Hunks[0]
	// Lines: -a -b +x +y  c
	if got := h.Text(); got != "@@ -1,3 +1,3 @@\n-a\n-b\n+x\n+y\n c\n" {
		t.Fatalf("hunk = %q", got)
	}
	tests := []struct {
		sel  []int
		want string
	}{
		{[]int{0}, "b\nc\n"},
		{[]int{2}, "a\nb\nx\nc\n"},
		{[]int{1, 3}, "a\ny\nc\n"},
		{[]int{0, 1, 2, 3}, new},
	}
	for _, tt := range tests {
		got, err := Apply([]byte(old), []Hunk{h}, map[string]Decision{h.ID: {Verdict: Accepted, Lines: tt.sel}})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("select %v = %q, want %q", tt.sel, got, tt.want)
		}
	}
	if _, err := SelectLines(h, []int{4}); err == nil {
		t.Errorf("selecting a context line did not fail")
	}
	if _, err := SelectLines(h, []int{9}); err == nil {
		t.Errorf("selecting past the end did not fail")
	}
}

func TestParseEdit(t *testing.T) {
	old := "a\nb\nc\n"
	new := "a\nB\nc\n"
	h := Compute("f", []byte(old), []byte(new), Options{}).Hunks[0]
	same, err := ParseEdit(h, EditText(h))
	if err != nil {
		t.Fatal(err)
	}
	if same.Text() != h.Text() {
		t.Errorf("unchanged edit = %q, want %q", same.Text(), h.Text())
	}
	edited := "@@ -1,3 +1,3 @@\n a\n-b\n+Bee\n+extra\n c\n# comment\n"
	got, err := Apply([]byte(old), []Hunk{h}, map[string]Decision{h.ID: {Verdict: Accepted, Edit: edited}})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a\nBee\nextra\nc\n" {
		t.Errorf("edited apply = %q", got)
	}
	// Keeping the removed line as context keeps b.
	got, err = Apply([]byte(old), []Hunk{h}, map[string]Decision{h.ID: {Verdict: Accepted, Edit: " a\n b\n+B\n c\n"}})
	if err != nil || string(got) != "a\nb\nB\nc\n" {
		t.Errorf("edit keeping b = %q, %v", got, err)
	}
	// No newline marker.
	got, err = Apply([]byte(old), []Hunk{h}, map[string]Decision{h.ID: {Verdict: Accepted, Edit: " a\n-b\n c\n+d\n\\ No newline at end of file\n"}})
	if err != nil || string(got) != "a\nc\nd" {
		t.Errorf("edit with no newline = %q, %v", got, err)
	}
	bad := []string{
		" a\n-X\n+B\n c\n",          // old side changed
		" a\n-b\n+B\n",              // context line removed
		" a\n-b\n+B\n c\n d\n",      // context line added
		" a\n*b\n c\n",              // unknown prefix
		" a\n-b\n@@ -1 +1 @@\n c\n", // header in the middle
		"\\ No newline\n a\n",       // marker first
	}
	for _, text := range bad {
		if _, err := ParseEdit(h, text); err == nil {
			t.Errorf("ParseEdit(%q) succeeded", text)
		}
	}
	if _, err := ParseEdit(h, "# all gone\n"); !errors.Is(err, ErrEmptyEdit) {
		t.Errorf("empty edit: err = %v, want ErrEmptyEdit", err)
	}
}

func TestApplyMismatch(t *testing.T) {
	h := Compute("f", []byte("a\nb\n"), []byte("a\nc\n"), Options{}).Hunks
	_, err := Apply([]byte("a\nzzz\n"), h, map[string]Decision{h[0].ID: {Verdict: Accepted}})
	if err == nil || !strings.Contains(err.Error(), "apply f") {
		t.Errorf("apply on another base: err = %v", err)
	}
	got, err := Apply([]byte("a\nzzz\n"), h, map[string]Decision{h[0].ID: {Verdict: Rejected}})
	if err != nil || string(got) != "a\nzzz\n" {
		t.Errorf("rejected hunk on another base = %q, %v", got, err)
	}
}

// randomText makes a small file from a tiny alphabet of lines so that
// diffs have both matches and changes, sometimes without final newline and
// with CRLF lines.
func randomText(r *rand.Rand) []byte {
	words := []string{"a\n", "b\n", "c\n", "d\r\n", "\n", "e\n", "f\n"}
	n := r.IntN(30)
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteString(words[r.IntN(len(words))])
	}
	if n > 0 && r.IntN(4) == 0 {
		b.Truncate(b.Len() - 1)
	}
	return b.Bytes()
}

// reconstruct applies decisions without Apply: walking the whole-file diff,
// a removed line stays unless its hunk is accepted, an added line appears
// only if its hunk is accepted. Hunks are found by their line ranges.
func reconstruct(lines []Line, hunks []Hunk, accepted map[int]bool) string {
	var b strings.Builder
	o, n := 1, 1
	owner := func(no int, start func(Hunk) (int, int)) int {
		for i, h := range hunks {
			s, c := start(h)
			if no >= s && no < s+c {
				return i
			}
		}
		return -1
	}
	for _, l := range lines {
		switch l.Op {
		case Context:
			b.WriteString(l.Text)
			o++
			n++
		case Delete:
			if !accepted[owner(o, func(h Hunk) (int, int) { return h.OldStart, h.OldCount })] {
				b.WriteString(l.Text)
			}
			o++
		case Insert:
			if accepted[owner(n, func(h Hunk) (int, int) { return h.NewStart, h.NewCount })] {
				b.WriteString(l.Text)
			}
			n++
		}
	}
	return b.String()
}

func TestApplyProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 3000; trial++ {
		base, new := randomText(r), randomText(r)
		ctx := r.IntN(4)
		lines, _ := DiffLines(base, new, 0)
		hunks := Group("f", lines, ctx)
		decisions := map[string]Decision{}
		accepted := map[int]bool{}
		all := map[string]Decision{}
		for i, h := range hunks {
			all[h.ID] = Decision{Verdict: Accepted}
			switch r.IntN(3) {
			case 0:
				decisions[h.ID] = Decision{Verdict: Accepted}
				accepted[i] = true
			case 1:
				decisions[h.ID] = Decision{Verdict: Rejected}
			}
		}
		got, err := Apply(base, hunks, decisions)
		if err != nil {
			t.Fatalf("base %q new %q: %v", base, new, err)
		}
		if want := reconstruct(lines, hunks, accepted); string(got) != want {
			t.Fatalf("base %q new %q ctx %d decisions %v:\ngot  %q\nwant %q", base, new, ctx, decisions, got, want)
		}
		gotAll, err := Apply(base, hunks, all)
		if err != nil || !bytes.Equal(gotAll, new) {
			t.Fatalf("accept all: %q, %v; want %q", gotAll, err, new)
		}
		none, err := Apply(base, hunks, nil)
		if err != nil || !bytes.Equal(none, base) {
			t.Fatalf("accept none: %q, %v; want %q", none, err, base)
		}
		// Splitting every hunk and deciding per piece agrees with the
		// reconstruction over the pieces.
		var pieces []Hunk
		for _, h := range hunks {
			pieces = append(pieces, Split(h)...)
		}
		pd := map[string]Decision{}
		pacc := map[int]bool{}
		for i, p := range pieces {
			if r.IntN(2) == 0 {
				pd[p.ID] = Decision{Verdict: Accepted}
				pacc[i] = true
			}
		}
		got, err = Apply(base, hunks, pd)
		if err != nil {
			t.Fatalf("split apply: %v", err)
		}
		if want := reconstruct(lines, pieces, pacc); string(got) != want {
			t.Fatalf("split: base %q new %q:\ngot  %q\nwant %q", base, new, got, want)
		}
	}
}

func TestDiffLinesLargeAnchored(t *testing.T) {
	// Inputs above anchorThreshold go through unique-line anchors; the
	// result must still rebuild both sides and apply exactly.
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 20; trial++ {
		var a, b strings.Builder
		for i := 0; i < 1500+r.IntN(1500); i++ {
			var line string
			switch r.IntN(4) {
			case 0:
				line = fmt.Sprintf("common %d\n", r.IntN(20)) // repeated lines
			default:
				line = fmt.Sprintf("unique %d\n", i)
			}
			a.WriteString(line)
			switch r.IntN(10) {
			case 0: // dropped
			case 1:
				b.WriteString("changed\n")
			case 2:
				b.WriteString(line)
				b.WriteString("added\n")
			default:
				b.WriteString(line)
			}
		}
		if r.IntN(2) == 0 {
			b.WriteString("tail without newline")
		}
		lines, exact := DiffLines([]byte(a.String()), []byte(b.String()), time.Minute)
		if !exact {
			t.Errorf("trial %d: not exact within a minute", trial)
		}
		o, n := sides(lines)
		if o != a.String() || n != b.String() {
			t.Fatalf("trial %d: anchored diff does not rebuild both sides", trial)
		}
		hunks := Group("f", lines, 3)
		all := map[string]Decision{}
		for _, h := range hunks {
			all[h.ID] = Decision{Verdict: Accepted}
		}
		got, err := Apply([]byte(a.String()), hunks, all)
		if err != nil || string(got) != b.String() {
			t.Fatalf("trial %d: accept all does not give new: %v", trial, err)
		}
	}
	// Anchors follow lines unique on both sides, in order.
	got := uniqueAnchors([]string{"x", "a", "b", "x", "c"}, []string{"c", "a", "x", "b"})
	want := [][2]int{{1, 1}, {2, 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("uniqueAnchors = %v, want %v", got, want)
	}
}
