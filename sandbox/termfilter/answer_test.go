package termfilter

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// answerBuffer collects the filter's answers, written from its goroutine.
type answerBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (a *answerBuffer) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b.Write(p)
}

func (a *answerBuffer) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b.String()
}

// answered filters the chunks with answers on and returns what passed and
// how many answers were written once the filter is closed.
func answered(t *testing.T, chunks ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	var ans answerBuffer
	f := New(&out)
	f.AnswerTo(&ans)
	for _, c := range chunks {
		if _, err := f.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	select {
	case <-f.answersDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the answers were not written")
	}
	n := strings.Count(ans.String(), DeviceAttributes)
	if rest := strings.ReplaceAll(ans.String(), DeviceAttributes, ""); rest != "" {
		t.Errorf("the filter answered %q", rest)
	}
	return out.String(), n
}

// TestAnswersDeviceAttributes: of every query the filter drops (the queries
// list), in each form of its introducer and cut at every byte, exactly the
// primary device attributes request (CSI c, CSI 0 c, DECID) is answered,
// once, with DeviceAttributes on the program's input, and still nothing of
// it reaches the terminal.
func TestAnswersDeviceAttributes(t *testing.T) {
	isDA := map[string]bool{"DA1": true, "DA1 with 0": true, "DECID": true, "DECID 8-bit": true}
	for _, q := range queries {
		variants := []string{q.seq}
		if intro, n := introOf(q.seq); n > 0 {
			for _, form := range forms(intro) {
				variants = append(variants, form+q.seq[n:])
			}
		}
		for _, seq := range variants {
			want := 0
			if isDA[q.name] {
				want = 1
			}
			for i := 0; i <= len(seq); i++ {
				out, n := answered(t, "a"+seq[:i], seq[i:]+"b")
				if out != "ab" || n != want {
					t.Errorf("%s %q cut at %d: passed %q, %d answers, want \"ab\" and %d", q.name, seq, i, out, n, want)
				}
			}
		}
	}
	// Every control sequence with no parameters, by private marker and final
	// byte: only CSI c is answered.
	for _, prefix := range []string{"", "?", ">", "=", "<"} {
		for final := byte(0x40); final <= 0x7e; final++ {
			seq := esc + "[" + prefix + string(final)
			want := 0
			if prefix == "" && final == 'c' {
				want = 1
			}
			if _, n := answered(t, seq); n != want {
				t.Errorf("%q: %d answers, want %d", seq, n, want)
			}
		}
	}
	if _, n := answered(t, esc+"[c"+esc+"[0c"+"\x9bc"); n != 3 {
		t.Errorf("three requests got %d answers", n)
	}
	if out, n := answered(t, esc+"[1c", esc+"[0;1c"); out != "" || n != 0 {
		t.Errorf("DA1 with other parameters: passed %q, %d answers", out, n)
	}
}

// introOf is the C1 control a sequence starts with in its 7-bit form and
// the introducer's length; 0 when it starts with none.
func introOf(seq string) (byte, int) {
	if len(seq) >= 2 && seq[0] == 0x1b && seq[1] >= 0x40 && seq[1] <= 0x5f {
		return seq[1] + 0x40, 2
	}
	return 0, 0
}

// blockedWriter never returns: a program that does not read its input.
type blockedWriter struct{ release chan struct{} }

func (b blockedWriter) Write(p []byte) (int, error) { <-b.release; return len(p), nil }

// TestAnswersNeverStallOutput: a program that floods DA1 and never reads
// its input still has its output relayed; the answers past the queue's
// bound are dropped.
func TestAnswersNeverStallOutput(t *testing.T) {
	var out bytes.Buffer
	bw := blockedWriter{release: make(chan struct{})}
	defer close(bw.release)
	f := New(&out)
	f.AnswerTo(bw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Write([]byte(strings.Repeat(esc+"[c", 10*maxPendingAnswers) + "after"))
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a flood of DA1 stalled the output")
	}
	if out.String() != "after" {
		t.Errorf("passed %q", out.String())
	}
}
