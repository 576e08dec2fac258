package diff

import (
	"bytes"
	"testing"
)

func FuzzHunks(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), uint8(3))
	f.Add([]byte("a\r\nb"), []byte("a\nb\n"), uint8(0))
	f.Add([]byte(""), []byte("x"), uint8(1))
	f.Fuzz(func(t *testing.T, base, new []byte, ctx uint8) {
		lines, _ := DiffLines(base, new, 0)
		o, n := sides(lines)
		if o != string(base) || n != string(new) {
			t.Fatalf("line diff does not rebuild its sides")
		}
		hunks := Group("f", lines, int(ctx%8))
		all := map[string]Decision{}
		for _, h := range hunks {
			all[h.ID] = Decision{Verdict: Accepted}
		}
		got, err := Apply(base, hunks, all)
		if err != nil || !bytes.Equal(got, new) {
			t.Fatalf("apply all = %q, %v; want %q", got, err, new)
		}
		got, err = Apply(base, hunks, nil)
		if err != nil || !bytes.Equal(got, base) {
			t.Fatalf("apply none = %q, %v; want %q", got, err, base)
		}
	})
}

func FuzzApplyDecisions(f *testing.F) {
	f.Add([]byte("a\nb\nc\nd\ne\nf\n"), []byte("A\nb\nc\nd\nE\nf\ng"), uint64(0b1011), true)
	f.Fuzz(func(t *testing.T, base, new []byte, bits uint64, split bool) {
		lines, _ := DiffLines(base, new, 0)
		hunks := Group("f", lines, 2)
		targets := hunks
		if split {
			targets = nil
			for _, h := range hunks {
				targets = append(targets, Split(h)...)
			}
		}
		decisions := map[string]Decision{}
		accepted := map[int]bool{}
		for i, h := range targets {
			if bits>>(i%64)&1 == 1 {
				decisions[h.ID] = Decision{Verdict: Accepted}
				accepted[i] = true
			} else {
				decisions[h.ID] = Decision{Verdict: Rejected}
			}
		}
		got, err := Apply(base, hunks, decisions)
		if err != nil {
			t.Fatal(err)
		}
		if want := reconstruct(lines, targets, accepted); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func FuzzParseEdit(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), " a\n-b\n+X\n c\n")
	f.Add([]byte("a"), []byte("b"), "-a\n\\ No newline at end of file\n+b\n")
	f.Fuzz(func(t *testing.T, base, new []byte, text string) {
		fd := Compute("f", base, new, Options{})
		if len(fd.Hunks) == 0 {
			return
		}
		h := fd.Hunks[0]
		// The unedited text always parses back to the same hunk.
		same, err := ParseEdit(h, EditText(h))
		if err != nil || same.Text() != h.Text() {
			t.Fatalf("round trip: %v\n%q\n%q", err, same.Text(), h.Text())
		}
		e, err := ParseEdit(h, text)
		if err != nil {
			return
		}
		// An accepted edit applies to the base and keeps its old side.
		got, err := Apply(base, fd.Hunks, map[string]Decision{h.ID: {Verdict: Accepted, Edit: text}})
		if err != nil {
			t.Fatalf("edit parsed but does not apply: %v", err)
		}
		var want bytes.Buffer
		lines := SplitLines(base)
		for _, s := range lines[:h.OldStart-1] {
			want.WriteString(s)
		}
		for _, l := range e.Lines {
			if l.Op != Delete {
				want.WriteString(l.Text)
			}
		}
		for _, s := range lines[h.OldStart-1+h.OldCount:] {
			want.WriteString(s)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("edit applied = %q, want %q", got, want.Bytes())
		}
	})
}
