package layers

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shadow-sandbox/shadow/internal/quote"
)

// A prompt's line comes from the agent's screen: what a checkpoint keeps of it is one line of
// printable text, bounded, whatever the screen held; and it survives a request and the seal of
// meta.json, which checks it.
func TestPromptLine(t *testing.T) {
	long := strings.Repeat("ab ", 100)
	for _, c := range []struct{ in, want string }{
		{"fix the cart total", "fix the cart total"},
		{"  fix  the\tcart total  ", "fix the cart total"},
		{"first line\nsecond line", "first line"},
		{"fix\x1b[31m red\x1b]0;title\x07\x1b[m", "fix red"},
		{"ok\u202edlrow\u2066x\u200bz", "okdlrowxz"},
		{"bad \xff\xfe byte", "bad byte"},
		// C1 controls in every form are sequences, as the relay's filter and the pane read them.
		{"c1 \u009b6n", "c1"},
		{"c1 \x9b6n and more", "c1 and more"},
		{"\r\n", ""},
		{long, long[:MaxPromptLine-1] + "…"},
	} {
		got := PromptLine(c.in)
		if got != c.want {
			t.Errorf("PromptLine(%q) = %q, want %q", c.in, got, c.want)
		}
		if n := utf8.RuneCountInString(got); n > MaxPromptLine {
			t.Errorf("PromptLine(%q) keeps %d characters", c.in, n)
		}
		for _, r := range got {
			if quote.Unsafe(r) {
				t.Errorf("PromptLine(%q) keeps %U", c.in, r)
			}
		}
		if tr, p := SplitRequest(PromptRequest(c.in)); tr != CheckpointPrompt || p != c.want {
			t.Errorf("SplitRequest(PromptRequest(%q)) = %q, %q", c.in, tr, p)
		}
	}
	if r := PromptRequest(" \x1b "); r != CheckpointPrompt {
		t.Errorf("a prompt of nothing printable asks %q", r)
	}
	for _, r := range []string{CheckpointManual, CheckpointPrompt} {
		if tr, p := SplitRequest(r); tr != r || p != "" {
			t.Errorf("SplitRequest(%q) = %q, %q", r, tr, p)
		}
	}

	meta, err := SealMeta(Checkpoint{ID: "c1", N: 1, Trigger: CheckpointPrompt, Prompt: "fix the cart total"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ReadMeta(meta); err != nil || c.Prompt != "fix the cart total" {
		t.Fatalf("ReadMeta: %+v, %v", c, err)
	}
	forged := strings.Replace(string(meta), "fix the cart total", "fix the cart TOTAL", 1)
	if _, err := ReadMeta([]byte(forged)); err == nil {
		t.Errorf("a changed prompt passes meta.json's checksum")
	}
}
